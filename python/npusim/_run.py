"""compile, estimate and run: the library run API (sim/api/session.h), in this process."""

import os
import tempfile
from typing import Any, List, Mapping, Optional, Union

from . import _npusim
from ._config import Config, Overrides, resolve
from ._errors import InputError, SimulationError
from ._result import Result
from ._schedule import Schedule

Model = Union[str, "os.PathLike[str]", Schedule]


def input_shape_args(input_shapes: Optional[Mapping[str, Any]]) -> List[str]:
    """{"image": (1, 3, 224, 224)} or {"image": "1x3x224x224"} as --input-shape values."""
    if not input_shapes:
        return []
    args = []
    for name, dims in input_shapes.items():
        text = dims if isinstance(dims, str) else "x".join(str(int(d)) for d in dims)
        args.append(f"{name}={text}")
    return args


def _request(model_path: str, cfg: Config, input_shapes: Optional[Mapping[str, Any]],
             host_fallback: bool, iterations: int = 1, profile_start: int = 0,
             profile_samples: int = 0) -> Any:
    r = _npusim.Request()
    r.model = model_path
    r.config = cfg.source
    r.overrides = cfg.overrides
    r.input_shapes = input_shape_args(input_shapes)
    r.host_fallback = bool(host_fallback)
    for name, value in (("iterations", iterations), ("profile_start", profile_start),
                        ("profile_samples", profile_samples)):
        if not isinstance(value, int) or value < 0 or value > 0xFFFFFFFF:
            raise InputError(f"{name}: expected a non-negative integer, found {value!r}",
                             [(name, "", f"expected a non-negative integer, found {value!r}")])
    r.iterations = iterations
    r.first_profiled = profile_start
    r.profiled = profile_samples
    return r


class _ModelFile:
    """A model argument as a file: a path as it is, a Schedule written to a temporary file."""

    def __init__(self, model: Model):
        self._dir: Optional[tempfile.TemporaryDirectory] = None
        if isinstance(model, Schedule):
            self._dir = tempfile.TemporaryDirectory(prefix="npusim-schedule-")
            name = os.path.basename(model.source) or "schedule.json"
            stem = name.rsplit(".", 1)[0] if "." in name else name
            self.path = os.path.join(self._dir.name, stem + ".schedule.json")
            model.save(self.path)
        else:
            self.path = os.fspath(model)

    def __enter__(self) -> str:
        return self.path

    def __exit__(self, *exc: Any) -> None:
        if self._dir is not None:
            self._dir.cleanup()


def compile(model: Union[str, "os.PathLike[str]"], config: Union[None, str, Config] = "default",
            *, overrides: Overrides = None, input_shapes: Optional[Mapping[str, Any]] = None,
            host_fallback: bool = False) -> Schedule:
    """Compiles a graph JSON, SCALE-Sim topology or ONNX model for the config (a schedule file is
    loaded and checked against it), as ``npusim compile`` does."""
    cfg = resolve(config, overrides)
    path = os.fspath(model)
    compiled = _npusim.compile(_request(path, cfg, input_shapes, host_fallback))
    return Schedule(compiled, path, cfg)


def _measure(model: Model, config: Union[None, str, Config], simulate: bool, overrides: Overrides,
             out: Optional[Union[str, "os.PathLike[str]"]], stats_level: int, iterations: int,
             profile_start: int, profile_samples: int, input_shapes: Optional[Mapping[str, Any]],
             host_fallback: bool, force: bool) -> Result:
    cfg = resolve(config, overrides)
    out_text = os.fspath(out) if out is not None else ""
    with _ModelFile(model) as path:
        request = _request(path, cfg, input_shapes, host_fallback, iterations, profile_start,
                           profile_samples)
        m = _npusim.measure(request, simulate, out_text, int(stats_level), bool(force))
    result = Result(m.stats_json, m.summary, m.failure, out_text or None)
    if m.failure:
        where = (f"\n(outputs up to that point written to {out_text}, marked incomplete)"
                 if out_text else "")
        raise SimulationError(m.failure + where,
                              "estimate" if m.failed_in_estimate else "simulation", result)
    return result


def estimate(model: Model, config: Union[None, str, Config] = "default", *,
             overrides: Overrides = None, out: Optional[Union[str, "os.PathLike[str]"]] = None,
             stats_level: int = 70, iterations: int = 1, profile_start: int = 0,
             profile_samples: int = 0, input_shapes: Optional[Mapping[str, Any]] = None,
             host_fallback: bool = False, force: bool = False) -> Result:
    """The compile-time estimate only, as ``npusim estimate``: a Result without ``runtime``."""
    return _measure(model, config, False, overrides, out, stats_level, iterations, profile_start,
                    profile_samples, input_shapes, host_fallback, force)


def run(model: Model, config: Union[None, str, Config] = "default", *,
        overrides: Overrides = None, out: Optional[Union[str, "os.PathLike[str]"]] = None,
        stats_level: int = 70, iterations: int = 1, profile_start: int = 0,
        profile_samples: int = 0, input_shapes: Optional[Mapping[str, Any]] = None,
        host_fallback: bool = False, force: bool = False) -> Result:
    """Compiles the model if needed, estimates it and simulates it on the SystemC platform, as
    ``npusim run``. Output files are written only when ``out`` is given (at ``stats_level``); the
    Result holds every figure either way. ``model`` is a file or a Schedule from compile().

    Raises InputError (bad model, config or option), SimulationError (deadlock, local memory
    exceeded; ``e.result`` holds what finished, and with ``out`` the incomplete outputs are
    written), OutputError, or InternalError."""
    return _measure(model, config, True, overrides, out, stats_level, iterations, profile_start,
                    profile_samples, input_shapes, host_fallback, force)
