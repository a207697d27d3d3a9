#!/usr/bin/python3
"""Plots of an npusim run from its stats.json (written at --stats-level 70 or more).

Writes three PNGs into --out (default: the run folder):
  op_types.png     cycles per op type (sum of its ops' cycles) and their share of all ops' cycles
  utilisation.png  per engine, busy % of each time window (union of its ops' intervals)
  roofline.png     every op with MACs: arithmetic intensity (its layer's MACs / its layer's DRAM
                   bytes) against achieved MACs per second (its MACs / its time), under the compute
                   roof (slices x rows x cols x clock) and the memory roof (bandwidth x intensity),
                   whose bandwidth is the lowest of DRAM's and the DMA ports' (labelled with which)

Every figure is defined in docs/report.md. Needs Debian's python3-matplotlib (run it with the
system python3). Exit codes: 0 success, 2 bad input or usage.
"""

import argparse
import json
import math
import os
import sys
from collections import OrderedDict


def fail(message):
    print(f"plot_report.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def load(path, section):
    stats_path = os.path.join(path, "stats.json") if os.path.isdir(path) else path
    try:
        with open(stats_path, encoding="utf-8") as f:
            stats = json.load(f)
    except OSError as e:
        fail(f"{stats_path}: cannot be read: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{stats_path}: not valid JSON: {e}")
    if not isinstance(stats, dict) or stats.get("format") != "npusim-stats":
        fail(f"{stats_path}: not an npusim stats.json")
    if section is None:
        section = "runtime" if "runtime" in stats else "estimate"
    if section not in stats:
        fail(f"{stats_path}: has no {section} section")
    if "ops" not in stats[section]:
        level = stats.get("stats_level", "below 70")
        fail(f"{stats_path}: written at stats level {level}, without per-op figures; "
             "they need stats level 70 or more (npusim run --stats-level 70)")
    return stats_path, stats, section


def union_in_windows(intervals, window, windows):
    """Busy cycles per window of the union of [start, end) intervals."""
    busy = [0] * windows
    covered = 0
    for start, end in sorted(intervals):
        start = max(start, covered)
        if end <= start:
            continue
        covered = end
        k = start // window
        while k < windows and k * window < end:
            lo, hi = max(start, k * window), min(end, (k + 1) * window)
            if hi > lo:
                busy[k] += hi - lo
            k += 1
    return busy


def plot_op_types(plt, ops, title, out):
    cycles = OrderedDict()
    for op in ops:
        cycles[op["op"]] = cycles.get(op["op"], 0) + op["cycles"]
    items = sorted(cycles.items(), key=lambda kv: (-kv[1], kv[0]))
    total = sum(cycles.values()) or 1
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(items) + 1.6))
    names = [k for k, _ in items][::-1]
    values = [v for _, v in items][::-1]
    bars = ax.barh(names, values, color="tab:blue")
    for bar, value in zip(bars, values):
        ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2,
                f" {100 * value / total:.2f} %", va="center", fontsize=8)
    ax.set_xlabel("cycles (sum of the op type's ops)")
    ax.set_title(f"{title}: op types by cycles (share of all ops' cycles)")
    ax.set_xlim(0, max(values or [1]) * 1.18)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def time_axis(us_values):
    """Times in µs, or in ms once they pass 10,000 µs: (scale to divide by, unit name)."""
    return (1000.0, "ms") if max(us_values, default=0) > 10000 else (1.0, "us")


MAX_STRIPS = 8


def strip_key(engine, group):
    """With more than MAX_STRIPS engines, the slices' arrays share a strip, and so do their vector
    units (SLICE*.ARRAY): a server config has 8 slices, 16 strips of them."""
    if group and engine.startswith("SLICE") and "." in engine:
        return "SLICE*." + engine.split(".", 1)[1]
    return engine


def plot_utilisation(plt, ops, engines, total_cycles, clock_mhz, windows, title, out):
    windows = max(1, min(windows, total_cycles)) if total_cycles > 0 else 1
    window = max(1, -(-total_cycles // windows))
    windows = max(1, -(-total_cycles // window))
    group = len({op["engine"] for op in ops}) > MAX_STRIPS
    # Per strip, per engine in it: its intervals. A shared strip shows the engines' mean busy %.
    strips = OrderedDict()
    for name in engines:
        strips.setdefault(strip_key(name, group), OrderedDict())
    for op in ops:
        strips.setdefault(strip_key(op["engine"], group), OrderedDict()).setdefault(
            op["engine"], []).append((op["start_cycle"], op["end_cycle"]))
    names = [n for n, per in strips.items() if per]
    fig, axes = plt.subplots(len(names) or 1, 1, figsize=(10, 0.9 * max(1, len(names)) + 1.2),
                             sharex=True, squeeze=False)
    scale, unit = time_axis([total_cycles / clock_mhz])
    x = [k * window / clock_mhz / scale for k in range(windows)] + [total_cycles / clock_mhz / scale]
    for ax, name in zip(axes[:, 0], names):
        members = strips[name]
        busy = [0] * windows
        for intervals in members.values():
            busy = [a + b for a, b in zip(busy, union_in_windows(intervals, window, windows))]
        count = len(members)
        pct = [100 * b / count / (min(total_cycles, (k + 1) * window) - k * window)
               for k, b in enumerate(busy)]
        overall = 100 * sum(busy) / count / total_cycles if total_cycles else 0
        if count > 1:
            name = f"{name} (mean of {count})"
        ax.stairs(pct, x, fill=True, color="tab:green", alpha=0.8)
        ax.set_ylim(0, 105)
        ax.set_yticks([0, 50, 100])
        ax.set_ylabel(name, rotation=0, ha="right", va="center", fontsize=8)
        ax.text(1.0, 0.5, f" {overall:.1f} %", transform=ax.transAxes, va="center", fontsize=8)
    axes[-1, 0].set_xlabel(f"time ({unit}); busy % per window of {window} cycles")
    axes[0, 0].set_title(f"{title}: engine utilisation over time")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def memory_roof(stats):
    """The byte rate (bytes/s) the model's DRAM traffic can reach, and the name of what limits it.

    DMA_IN carries the reads and DMA_OUT the writes, each through ports of channels x
    bytes_per_cycle; DRAM carries both. For a mix of a share r of reads and w = 1 - r of writes,
    the total rate is at most DMA_IN's rate / r, DMA_OUT's / w and DRAM's: the lowest binds. With
    reads only that is min(DMA_IN port, DRAM)."""
    d = stats["device"]
    limits = [("DRAM", d["dram_bandwidth_gbps"] * 1e9)]
    read, written = stats.get("dram_read_bytes", 0), stats.get("dram_write_bytes", 0)
    if "dma_in_port_gbps" in d and read + written > 0:  # stats.json of npusim before the ports: DRAM
        for name, gbps, share in [("DMA_IN port", d["dma_in_port_gbps"], read / (read + written)),
                                  ("DMA_OUT port", d["dma_out_port_gbps"], written / (read + written))]:
            if share > 0 and gbps > 0:
                limits.append((name, gbps * 1e9 / share))
    return min(limits, key=lambda kv: kv[1]), limits[0][1], read / (read + written) if read + written else 1.0


def plot_roofline(plt, stats, ops, title, out):
    d = stats["device"]
    clock_hz = d["clock_mhz"] * 1e6
    slice_roof = d["array_rows"] * d["array_cols"] * clock_hz
    compute_roof = d["slices"] * slice_roof
    (memory_name, memory_bw), dram_bw, read_share = memory_roof(stats)  # bytes per second
    layer_macs, layer_bytes = {}, {}
    for op in ops:
        layer_macs[op["layer"]] = layer_macs.get(op["layer"], 0) + op["macs"]
        layer_bytes[op["layer"]] = layer_bytes.get(op["layer"], 0) + op["bytes"]
    points = OrderedDict()
    skipped = 0
    for op in ops:
        if op["macs"] == 0 or op["cycles"] == 0:
            continue
        if layer_bytes[op["layer"]] == 0:
            skipped += 1
            continue
        intensity = layer_macs[op["layer"]] / layer_bytes[op["layer"]]
        achieved = op["macs"] / (op["cycles"] / clock_hz)
        points.setdefault(op["op"], []).append((intensity, achieved))
    # Ops of one layer and shape land on one dot: draw each dot once, and say how many ops it is.
    dots = OrderedDict((t, list(OrderedDict.fromkeys((round(math.log10(x), 3), round(math.log10(y), 3))
                                                      for x, y in pts)))
                       for t, pts in points.items())
    fig, ax = plt.subplots(figsize=(8, 6))
    xs = [p[0] for pts in points.values() for p in pts] or [1.0]
    ridges = [compute_roof / memory_bw, compute_roof / dram_bw]
    lo, hi = min(xs + ridges) / 4, max(xs + ridges) * 4
    grid = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    if memory_name == "DMA_IN port":
        why = f", {d['dma_in_port_gbps']:g} GB/s of reads, {100 * read_share:.0f} % of the bytes"
    elif memory_name == "DMA_OUT port":
        why = f", {d['dma_out_port_gbps']:g} GB/s of writes, {100 * (1 - read_share):.0f} % of the bytes"
    else:
        why = ""
    ax.plot(grid, [min(compute_roof, x * memory_bw) for x in grid], color="black",
            label=f"roof: min({compute_roof / 1e9:.1f} GMAC/s, {memory_bw / 1e9:.2f} GB/s x intensity)\n"
                  f"memory roof: {memory_name}{why}")
    if memory_name != "DRAM":
        ax.plot(grid, [min(compute_roof, x * dram_bw) for x in grid], color="black", linestyle=":",
                linewidth=0.8, label=f"DRAM alone: {dram_bw / 1e9:.2f} GB/s x intensity")
    ax.plot(grid, [min(slice_roof, x * memory_bw) for x in grid], color="gray", linestyle="--",
            label=f"one slice: {slice_roof / 1e9:.1f} GMAC/s")
    for op_type, pts in points.items():
        shown = dots[op_type]
        what = (f"{len(pts)} ops" if len(shown) == len(pts)
                else f"{len(shown)} dots for {len(pts)} ops")
        ax.scatter([10 ** p[0] for p in shown], [10 ** p[1] for p in shown], s=12, alpha=0.7,
                   label=f"{op_type} ({what})")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (layer MACs / layer DRAM bytes)")
    ax.set_ylabel("achieved MACs per second (op MACs / op time)")
    note = f"; {skipped} ops of layers without DRAM traffic not shown" if skipped else ""
    ax.set_title(f"{title}: roofline{note}", fontsize=10)
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(
        description="PNG plots of an npusim run from its stats.json: op-type breakdown "
                    "(op_types.png), engine utilisation over time (utilisation.png) and a "
                    "roofline of every op (roofline.png). Figures: docs/report.md.")
    parser.add_argument("run", help="the run's output folder, or its stats.json")
    parser.add_argument("--out", help="folder for the PNGs (default: the run folder)")
    parser.add_argument("--section", choices=["runtime", "estimate"],
                        help="which timeline (default: runtime if present, else estimate)")
    parser.add_argument("--windows", type=int, default=200,
                        help="time windows of the utilisation plot (default 200)")
    args = parser.parse_args()
    if args.windows < 1:
        fail("--windows must be at least 1")
    stats_path, stats, section = load(args.run, args.section)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is missing: install Debian's python3-matplotlib and run this script "
             "with /usr/bin/python3")
    out = args.out or os.path.dirname(os.path.abspath(stats_path))
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as e:
        fail(f"{out}: cannot be created: {e.strerror}")
    run = stats[section]
    ops = run["ops"]
    title = f"{stats['model']['name']} ({section})"
    written = []
    for name, draw in [
        ("op_types.png", lambda p: plot_op_types(plt, ops, title, p)),
        ("utilisation.png", lambda p: plot_utilisation(plt, ops, list(run["engines"]), run["total_cycles"],
                                                       stats["device"]["clock_mhz"], args.windows, title, p)),
        ("roofline.png", lambda p: plot_roofline(plt, stats, ops, title, p)),
    ]:
        path = os.path.join(out, name)
        try:
            draw(path)
        except OSError as e:
            fail(f"{path}: cannot be written: {e.strerror}")
        written.append(path)
    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
