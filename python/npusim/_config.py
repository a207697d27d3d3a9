"""Hardware configs: npusim.load_config."""

import json
import os
from typing import Any, Dict, Iterable, List, Mapping, Union

from . import _npusim

Overrides = Union[None, Mapping[str, Any], Iterable[str]]


def value_text(value: Any) -> str:
    """A Python value as the CLI's --set reads it (JSON if it parses, else a string)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return json.dumps(value)
    if isinstance(value, (int, float)):
        return json.dumps(value)  # shortest round-trip form: 12.8, 1e-05, 400
    if isinstance(value, (list, dict, tuple)):
        return json.dumps(value)
    raise TypeError(f"npusim: cannot pass {type(value).__name__} {value!r} as a config value")


def override_list(overrides: Overrides) -> List[str]:
    """{"dram.bandwidth_gbps": 25.6} or ["dram.bandwidth_gbps=25.6"] as "key=value" strings."""
    if overrides is None:
        return []
    if isinstance(overrides, str):
        raise TypeError('npusim: overrides are a dict {"key.path": value} or a list of '
                        '"key.path=value" strings, not a single string')
    if isinstance(overrides, Mapping):
        return [f"{k}={value_text(v)}" for k, v in overrides.items()]
    return [str(o) for o in overrides]


class Config:
    """A checked hardware config: where it came from (a built-in name or a file), the overrides
    applied, and every field after defaults and unit conversion (docs/config.md).

    Fields are attributes (``c.name``, ``c.clock_mhz``, ``c.slices["count"]``, ``c.dram``...) and
    ``c.as_dict()`` gives them all. ``c.with_overrides({...})`` is a new Config with more
    overrides."""

    def __init__(self, source: str, overrides: List[str], fields: Dict[str, Any]):
        self.source = source
        self.overrides = list(overrides)
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        fields = self.__dict__.get("_fields", {})
        if name in fields:
            return fields[name]
        raise AttributeError(name)

    @property
    def clock_mhz(self) -> float:
        return self._fields["clock_khz"] / 1000

    def as_dict(self) -> Dict[str, Any]:
        return dict(self._fields)

    def with_overrides(self, overrides: Overrides) -> "Config":
        return load_config(self.source, self.overrides + override_list(overrides))

    def __repr__(self) -> str:
        s = self._fields["slices"]
        sets = "".join(f", {o}" for o in self.overrides)
        return (f"<npusim.Config {self._fields['name']!r} ({self.source}{sets}): "
                f"{self.clock_mhz:g} MHz, {s['count']} slice(s) of {s['rows']}x{s['cols']} "
                f"{s['dataflow']}>")


def load_config(name_or_path: Union[str, "os.PathLike[str]"] = "default",
                overrides: Overrides = None) -> Config:
    """Loads a built-in config (``"default"``, ``"server"``) or a JSON / SCALE-Sim .cfg file and
    applies ``overrides`` ({"dram.bandwidth_gbps": 25.6}), as ``--config`` and ``--set`` do.
    Raises InputError naming the file and JSON pointer of every problem."""
    source = os.fspath(name_or_path)
    sets = override_list(overrides)
    return Config(source, sets, _npusim.load_config(source, sets))


def resolve(config: Union[None, str, "os.PathLike[str]", Config],
            overrides: Overrides = None) -> Config:
    """The config argument of compile, estimate, run and sweep, with the call's overrides."""
    if isinstance(config, Config):
        return config.with_overrides(overrides) if overrides else config
    return load_config("default" if config is None else config, overrides)


def builtin_configs() -> List[str]:
    """The names --config accepts without a file."""
    return list(_npusim.builtin_configs())

