"""What estimate and run return: the figures of stats.json (docs/outputs.md), as objects."""

import json
from pathlib import Path
from typing import Any, Dict, Optional

from ._tables import table


class Timeline:
    """The figures of one timeline, the estimate's or the simulation's (stats.json ``estimate``
    or ``runtime``): totals, per-engine figures, and the per-op, per-layer and per-program
    tables."""

    def __init__(self, figures: Dict[str, Any]):
        self.figures = figures

    total_cycles = property(lambda self: self.figures["total_cycles"])
    time_us = property(lambda self: self.figures["time_us"])
    mac_utilization = property(lambda self: self.figures["mac_utilization"])
    dram_gbps = property(lambda self: self.figures["dram_achieved_gbps"])
    lram_peak_bytes = property(lambda self: self.figures["lram_peak_bytes"])
    # Total energy (dynamic + static over this timeline's time) and its static part, in µJ.
    energy_uj = property(lambda self: self.figures.get("energy_uj"))
    static_energy_uj = property(lambda self: self.figures.get("static_energy_uj"))

    @property
    def engines(self) -> Dict[str, Dict[str, Any]]:
        """Engine name (SLICE0.ARRAY, ..., DMA_IN, DMA_OUT, HOST) -> its figures: busy_cycles,
        utilization, commands, wait_deps_cycles, and DMA bytes and DRAM waits."""
        return self.figures["engines"]

    @property
    def busy_cycles(self) -> Dict[str, int]:
        """Engine name -> cycles in which it ran a command."""
        return {name: e["busy_cycles"] for name, e in self.figures["engines"].items()}

    @property
    def ops(self) -> Any:
        """One row per command: index, id, name, op, layer, engine, program, start_cycle,
        end_cycle, cycles, bytes, macs, wait_deps_cycles, wait_dram_cycles, mac_utilization."""
        return table(self.figures.get("ops", []))

    @property
    def layers(self) -> Any:
        """One row per layer: SCALE-Sim's compute report and the tiling (docs/outputs.md)."""
        return table(self.figures.get("layers", []))

    @property
    def programs(self) -> Any:
        return table(self.figures.get("programs", []))

    def __repr__(self) -> str:
        return f"<npusim.Timeline {self.total_cycles} cycles>"


class Result(Timeline):
    """A run's figures. The attributes of Timeline (total_cycles, engines, busy_cycles, ops,
    layers, ...) are the simulation's after run() and the estimate's after estimate();
    ``estimate`` and ``runtime`` (None after estimate()) give each. Also: ``bounds`` (resource ->
    static lower bound in cycles), ``binding`` (the largest), ``device``, ``stats`` (the whole
    stats.json, at level 100), ``summary`` (summary.txt's text), ``out`` (the output folder, None
    unless out= was given), ``complete`` and ``failure``."""

    def __init__(self, stats_json: str, summary: str, failure: str, out: Optional[str]):
        self.stats: Dict[str, Any] = json.loads(stats_json)
        self.estimate = Timeline(self.stats["estimate"])
        self.runtime = Timeline(self.stats["runtime"]) if "runtime" in self.stats else None
        super().__init__((self.runtime or self.estimate).figures)
        self.summary = summary
        self.failure = failure
        self.complete = not failure
        self.out = Path(out) if out else None

    @property
    def simulated(self) -> bool:
        return self.runtime is not None

    @property
    def bounds(self) -> Dict[str, int]:
        """Resource (array, vector, mac_peak, dma_in_port, dma_out_port, dram, host) -> the
        static lower bound it puts on any execution, in cycles."""
        b = self.stats["bounds"]
        return {k[: -len("_cycles")]: v for k, v in b.items() if k.endswith("_cycles")}

    @property
    def binding(self) -> str:
        return self.stats["bounds"]["binding"]

    @property
    def device(self) -> Dict[str, Any]:
        return self.stats["device"]

    @property
    def model(self) -> Dict[str, Any]:
        return self.stats["model"]

    @property
    def energy(self) -> Dict[str, Any]:
        """stats.json ``energy``: total_uj, dynamic_uj, static_uj, average_power_mw, and the
        dynamic part by kind (mac, vector, lram_read, lram_write, dram), per engine and per op
        type; per op and per layer it is the ``energy_uj`` column of ``ops`` and ``layers``."""
        return self.stats["energy"]

    @property
    def delta_pct(self) -> Optional[float]:
        """(simulation - estimate) / estimate x 100, None without a simulation."""
        if self.runtime is None or self.estimate.total_cycles == 0:
            return None
        est = self.estimate.total_cycles
        return (self.runtime.total_cycles - est) * 100 / est

    def __repr__(self) -> str:
        what = "simulated" if self.simulated else "estimated"
        state = "" if self.complete else ", incomplete"
        return (f"<npusim.Result {self.model['name']!r} on {self.device['config']!r}: "
                f"{self.total_cycles} cycles {what}, bound by {self.binding}{state}>")
