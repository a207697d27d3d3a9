"""Compiled schedules: what npusim.compile returns."""

import json
import os
from typing import Any, Dict, Iterator, List, Mapping, Union

from ._tables import table


class Command(Mapping):
    """One command of a schedule: its fields in the schedule's JSON form (docs/schedule.md: id,
    engine, slice, op, shape, bytes, deps, layer, loc, program, alloc, free) plus what the cost
    model fixed for the config: macs, vector_macs, isolated_cycles (its cycles with DRAM to
    itself, the estimate's duration), lram_alloc_bytes, lram_free_bytes; and its index.

    Read it as a mapping (``c["op"]``) or by attribute (``c.op``). Absent optional fields read as
    their format defaults (deps [], program 0)."""

    _DEFAULTS = {"deps": [], "program": 0, "layer": "", "loc": "", "alloc": [], "free": []}

    def __init__(self, index: int, fields: Dict[str, Any], cost: Dict[str, Any]):
        self._data = {"index": index, **self._DEFAULTS, **fields, **cost}

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __getattr__(self, name: str) -> Any:
        data = self.__dict__.get("_data", {})
        if name in data:
            return data[name]
        raise AttributeError(name)

    def __repr__(self) -> str:
        what = self._data.get("op") or f"{self._data.get('bytes', 0)} B"
        return (f"<npusim.Command {self._data['index']} {self._data['id']} "
                f"{self._data['engine']} {what} {self._data['isolated_cycles']} cycles>")


class Schedule:
    """A schedule, compiled for (or loaded and checked against) a config. ``len(s)`` commands;
    ``s[i]`` (an index), ``s["DI0"]`` (an id) or iteration give Commands. ``s.model``,
    ``s.programs``, ``s.target`` and ``s.layers`` are the format's sections; ``s.json`` is the
    JSON text ``npusim compile`` writes, ``s.save(path)`` writes it, ``s.commands_table()`` is one
    row per command."""

    def __init__(self, compiled: Any, model: str, config: Any):
        self._compiled = compiled
        self.source = model
        self.config = config
        self._doc = json.loads(compiled.json)
        self._commands: List[Command] = [
            Command(i, c, compiled.cost(i)) for i, c in enumerate(self._doc["commands"])]
        self._by_id = {c["id"]: c for c in self._commands}

    @property
    def json(self) -> str:
        return self._compiled.json

    @property
    def model(self) -> Dict[str, Any]:
        return self._doc["model"]

    @property
    def programs(self) -> List[Dict[str, Any]]:
        return self._doc["programs"]

    @property
    def target(self) -> Dict[str, Any]:
        return self._doc.get("target", {})

    @property
    def layers(self) -> List[Dict[str, Any]]:
        return self._doc.get("layers", [])

    def __len__(self) -> int:
        return len(self._commands)

    def __getitem__(self, key: Union[int, slice, str]) -> Any:
        if isinstance(key, str):
            try:
                return self._by_id[key]
            except KeyError:
                raise KeyError(f"no command with id {key!r} in this schedule") from None
        return self._commands[key]

    def __iter__(self) -> Iterator[Command]:
        return iter(self._commands)

    def save(self, path: Union[str, "os.PathLike[str]"]) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(self._compiled.json)

    def commands_table(self) -> Any:
        columns = ["index", "id", "engine", "slice", "op", "bytes", "layer", "program", "deps",
                   "macs", "vector_macs", "isolated_cycles"]
        return table([{k: c.get(k) for k in columns} for c in self._commands], columns)

    def __repr__(self) -> str:
        return (f"<npusim.Schedule {self.model.get('name', '')!r}: {len(self)} commands in "
                f"{len(self.programs)} program(s), for {self._compiled.config_name!r}>")
