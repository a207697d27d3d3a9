"""npusim.sweep: a grid of config values, one `npusim run` process per point.

SystemC elaborates once per process, so a sweep cannot simulate its points in this process or in
threads of it; it runs `npusim sweep` (docs/sweep.md), which runs each point as a process of its
own, --jobs at a time, and reads the rows from the sweep.json it writes.
"""

import json
import os
import shutil
import subprocess
import tempfile
import warnings
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from ._config import Config, Overrides, resolve, value_text
from ._errors import InputError, InternalError, OutputError
from ._run import input_shape_args
from ._tables import table

# The figure columns of sweep.csv, in its order, after the swept keys.
FIGURES = ["status", "exit_code", "total_cycles", "latency_us", "mac_utilization", "dram_gbps",
           "bound", "compute_busy_cycles", "dma_busy_cycles", "lower_bound_array_cycles",
           "lower_bound_vector_cycles", "lower_bound_mac_peak_cycles",
           "lower_bound_dma_in_port_cycles", "lower_bound_dma_out_port_cycles",
           "lower_bound_dram_cycles", "lower_bound_host_cycles", "energy_uj", "ttft_ms",
           "tpot_mean_ms", "tpot_p99_ms", "decode_tokens_per_s", "error"]


def binary() -> str:
    """The npusim binary sweeps run: $NPUSIM_BIN, else the one this package was built with."""
    path = os.environ.get("NPUSIM_BIN")
    if not path:
        from . import _paths
        path = _paths.NPUSIM_BINARY
    if not os.access(path, os.X_OK):
        raise InternalError(f"the npusim binary {path} is missing or not executable (set "
                            "NPUSIM_BIN to the npusim binary to use)")
    return path


def _grid_args(grid: Mapping[str, Sequence[Any]]) -> List[str]:
    if not isinstance(grid, Mapping) or not grid:
        raise InputError("grid: expected a dict of config key -> list of values, such as "
                         "{'clock_mhz': [400, 800], 'slices.count': [1, 2]}",
                         [("grid", "", "expected a non-empty dict of key -> values")])
    args = []
    for key, values in grid.items():
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range)):
            values = [values]
        texts = [value_text(v) for v in values]
        for t in texts:
            if "," in t or t == "":
                raise InputError(f"grid: {key}: value {t!r} cannot be swept (empty, or has a comma)",
                                 [("grid", key, f"value {t!r} is empty or has a comma")])
        args.append(f"--sweep={key}={','.join(texts)}")
    return args


def _raise_for(code: int, stderr: str) -> None:
    """The sweep's own failure (not a point's) as the CLI reported it."""
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    errors = [ln[len("npusim: error: "):] for ln in lines if ln.startswith("npusim: error: ")]
    message = "\n".join(errors) if errors else "\n".join(lines[-20:])
    if code == 2:
        if "cannot" in message and ("write" in message or "create" in message):
            raise OutputError(message)
        raise InputError(message, [("", "", m) for m in errors or [message]])
    raise InternalError(f"npusim sweep exited with {code}: {message}")


def sweep(model: Union[str, "os.PathLike[str]"], config: Union[None, str, Config] = "default",
          grid: Optional[Mapping[str, Sequence[Any]]] = None, *, jobs: Optional[int] = None,
          out: Optional[Union[str, "os.PathLike[str]"]] = None, stats_level: int = 40,
          overrides: Overrides = None, input_shapes: Optional[Mapping[str, Any]] = None) -> Any:
    """Runs ``model`` on every point of ``grid`` (config key -> values; the cross product, the
    last key varying fastest) and returns one row per point in grid order, the columns of
    sweep.csv: index, one per key, status, exit_code, total_cycles, latency_us, ..., error.

    A DataFrame when pandas is there, else a list of dicts. Points that fail (a value that makes
    the config invalid, a deadlock) are rows with status "failed" and their error, and a warning
    says how many. ``out`` keeps the sweep folder (sweep.csv, sweep.json, points/<i>/); without
    it, a temporary folder is used and removed. ``jobs``: points at a time (default: one per
    core)."""
    cfg = resolve(config, overrides)
    argv = [binary(), "sweep", f"--model={os.fspath(model)}", f"--config={cfg.source}"]
    argv += [f"--set={s}" for s in cfg.overrides]
    argv += _grid_args(grid or {})
    argv += [f"--input-shape={s}" for s in input_shape_args(input_shapes)]
    argv += [f"--stats-level={stats_level}", "--quiet"]
    if jobs is not None:
        argv.append(f"--jobs={int(jobs)}")
    folder = os.fspath(out) if out is not None else tempfile.mkdtemp(prefix="npusim-sweep-")
    argv.append(f"--out={folder}")
    try:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True, errors="replace", check=False)
        if proc.returncode not in (0, 3):
            _raise_for(proc.returncode, proc.stderr)
        with open(os.path.join(folder, "sweep.json"), encoding="utf-8") as f:
            doc = json.load(f)
    finally:
        if out is None:
            shutil.rmtree(folder, ignore_errors=True)
    keys = [k["key"] for k in doc["keys"]]
    rows: List[Dict[str, Any]] = []
    for p in doc["points"]:
        row: Dict[str, Any] = {"index": p["index"]}
        row.update({k: p["values"][k] for k in keys})
        row.update({c: p[c] for c in FIGURES})
        rows.append(row)
    failed = doc["summary"]["failed"]
    if failed:
        first = next(r for r in rows if r["status"] != "ok")
        warnings.warn(f"npusim.sweep: {failed} of {len(rows)} point(s) failed; point "
                      f"{first['index']}: {first['error']}", RuntimeWarning, stacklevel=2)
    return table(rows, ["index", *keys, *FIGURES])
