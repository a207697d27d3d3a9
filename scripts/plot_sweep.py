#!/usr/bin/python3
"""Plots the results of `npusim sweep` (its sweep.json) as PNG files.

  latency.png   latency against the x key (default clock_mhz), one line per value of the series
                key (default slices.count); each point's marker says which resource binds it (the
                largest lower bound, sweep.json's `bound`): filled markers for the compute units
                (array, vector, MAC peak, host), hollow ones for the memory path (DMA_IN port,
                DMA_OUT port, DRAM), so the point where a line changes limit is visible at a
                glance.
  heatmap.png   when two or more keys are swept: the metric over the grid of the x and series
                keys, each cell labelled with its value and its binding limit.

With more than two swept keys, every combination of the other keys gets its own pair of files,
named with the combination (latency_dram.bandwidth_gbps=25.6.png). Failed points are left out
and listed on stderr.

Uses only the Python standard library and matplotlib (Debian: python3-matplotlib). The first
line names /usr/bin/python3, Debian's interpreter, which is the one python3-matplotlib is
installed for; a `python3` earlier on PATH (pyenv, a venv) may not have it.

Examples:
  scripts/plot_sweep.py /tmp/sw                 # reads /tmp/sw/sweep.json, writes PNGs there
  scripts/plot_sweep.py /tmp/sw/sweep.json --metric total_cycles --out plots/
"""
import argparse
import itertools
import json
import os
import sys

# sweep.json's `bound` values (docs/sweep.md): legend label, short cell label, marker, filled.
LIMITS = {
    "array": ("array", "array", "o", True),
    "vector": ("vector unit", "vector", "D", True),
    "mac_peak": ("MAC peak", "MAC peak", "^", True),
    "host": ("host", "host", "*", True),
    "dma_in_port": ("DMA_IN port", "DMA in", "s", False),
    "dma_out_port": ("DMA_OUT port", "DMA out", "p", False),
    "dram": ("DRAM bandwidth", "DRAM", "v", False),
}
UNKNOWN_LIMIT = ("unknown limit", "?", "X", True)

METRICS = {
    "latency_us": "latency (µs)",
    "total_cycles": "total cycles",
    "mac_utilization": "MAC utilization (fraction)",
    "dram_gbps": "achieved DRAM bandwidth (GB/s)",
}


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="Plot an npusim sweep (sweep.json): latency against clock, one line per slice "
        "count, each point marked by the resource that binds it; and a heat map when two keys are "
        "swept.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="The PNGs are written to --out (default: the sweep's folder); their paths are "
        "printed. Exit codes: 0 written, 1 nothing to plot (every point failed), 2 bad input.",
    )
    parser.add_argument("sweep", help="a sweep folder (npusim sweep --out DIR) or its sweep.json")
    parser.add_argument("--out", help="folder for the PNGs (default: the sweep's folder)")
    parser.add_argument("--x", help="key on the x axis (default: clock_mhz if swept, else the first key)")
    parser.add_argument(
        "--series", help="key with one line per value (default: slices.count if swept, else another key)"
    )
    parser.add_argument("--metric", default="latency_us", choices=sorted(METRICS), help="y value (default: latency_us)")
    parser.add_argument("--dpi", type=int, default=120, help="resolution of the PNGs (default: 120)")
    return parser.parse_args(argv)


def fail(message, code=2):
    print(f"plot_sweep: error: {message}", file=sys.stderr)
    sys.exit(code)


def load(path):
    file = os.path.join(path, "sweep.json") if os.path.isdir(path) else path
    try:
        with open(file, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        fail(f"{file}: {e.strerror}")
    except json.JSONDecodeError as e:
        fail(f"{file}: malformed JSON: {e}")
    if data.get("format") != "npusim-sweep":
        fail(f'{file}: not an npusim sweep.json (its "format" is not "npusim-sweep")')
    return file, data


def is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def label(v):
    return str(v)


def short(v):
    """A cell label: 68,131 or 2.59 or 0.146."""
    if abs(v) >= 100:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.2f}"
    return f"{v:.3f}"


def draw_marker(ax, x, y, limit, color, label=None):
    """The marker of a binding limit: filled for compute units, hollow for the memory path."""
    _, _, marker, filled = LIMITS.get(limit, UNKNOWN_LIMIT)
    if filled:
        ax.plot(x, y, marker, markersize=8 if marker == "*" else 6, color=color, label=label, linestyle="none")
    else:
        # color= too, so that the plot's colour cycle does not advance for a marker.
        ax.plot(x, y, marker, markersize=10, color=color, markerfacecolor="white", markeredgecolor=color,
                markeredgewidth=2.5, label=label, linestyle="none")


def main(argv):
    args = parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    file, data = load(args.sweep)
    keys = [k["key"] for k in data["keys"]]
    values = {k["key"]: k["values"] for k in data["keys"]}
    if not keys:
        fail(f"{file}: no swept keys")
    x_key = args.x or ("clock_mhz" if "clock_mhz" in keys else keys[0])
    if x_key not in keys:
        fail(f"--x {x_key}: not swept (swept: {', '.join(keys)})")
    others = [k for k in keys if k != x_key]
    series_key = args.series or ("slices.count" if "slices.count" in others else (others[0] if others else None))
    if series_key is not None and (series_key not in keys or series_key == x_key):
        fail(f"--series {series_key}: not another swept key (swept: {', '.join(keys)})")
    rest = [k for k in keys if k not in (x_key, series_key)]
    out_dir = args.out or os.path.dirname(os.path.abspath(file))
    os.makedirs(out_dir, exist_ok=True)

    points = data["points"]
    failed = [p for p in points if p["status"] != "ok"]
    for p in failed:
        desc = " ".join(f"{k}={label(v)}" for k, v in p["values"].items())
        print(f"plot_sweep: point {p['index']} ({desc}) failed, left out: {p['error']}", file=sys.stderr)
    ok = [p for p in points if p["status"] == "ok"]
    if not ok:
        fail("every point failed; nothing to plot", 1)

    metric = args.metric
    title_base = f"{data['model']} on {data['config']}"
    x_numeric = all(is_number(v) for v in values[x_key])
    written = []
    for combo in itertools.product(*(values[k] for k in rest)):
        fixed = dict(zip(rest, combo))
        subset = [p for p in ok if all(p["values"][k] == v for k, v in fixed.items())]
        if not subset:
            continue
        suffix = "".join(f"_{k}={label(v)}" for k, v in fixed.items())
        subtitle = ", ".join(f"{k}={label(v)}" for k, v in fixed.items())
        title = title_base + (f" ({subtitle})" if subtitle else "")

        # Line plot: metric against x, one line per series value. Latency past 10,000 µs in ms.
        y_scale, y_label = 1.0, METRICS[metric]
        if metric == "latency_us" and max(p[metric] for p in subset) > 10000:
            y_scale, y_label = 1000.0, "latency (ms)"
        fig, ax = plt.subplots(figsize=(8, 5))
        series_values = values[series_key] if series_key else [None]
        xpos = {v: (v if x_numeric else i) for i, v in enumerate(values[x_key])}
        seen = []  # binding limits drawn, in order of first appearance
        for s in series_values:
            line = [p for p in subset if series_key is None or p["values"][series_key] == s]
            line.sort(key=lambda p: values[x_key].index(p["values"][x_key]))
            if not line:
                continue
            xs = [xpos[p["values"][x_key]] for p in line]
            ys = [p[metric] / y_scale for p in line]
            name = f"{series_key}={label(s)}" if series_key else metric
            (drawn,) = ax.plot(xs, ys, "-", label=name)
            color = drawn.get_color()
            for xv, yv, p in zip(xs, ys, line):
                if p["bound"] not in seen:
                    seen.append(p["bound"])
                draw_marker(ax, xv, yv, p["bound"], color)
        for limit in sorted(seen, key=lambda b: list(LIMITS).index(b) if b in LIMITS else len(LIMITS)):
            draw_marker(ax, [], [], limit, "gray", label=f"bound by {LIMITS.get(limit, UNKNOWN_LIMIT)[0]}")
        ax.set_xlabel(x_key)
        ax.set_ylabel(y_label)
        if not x_numeric:
            ax.set_xticks(range(len(values[x_key])))
            ax.set_xticklabels([label(v) for v in values[x_key]])
        only = f"; every point bound by {LIMITS.get(seen[0], UNKNOWN_LIMIT)[0]}" if len(seen) == 1 else ""
        ax.set_title(title + only, fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f"{'latency' if metric == 'latency_us' else metric}{suffix}.png")
        fig.savefig(path, dpi=args.dpi)
        plt.close(fig)
        written.append(path)

        # Heat map over the x and series keys.
        if series_key is None:
            continue
        rows, cols = values[series_key], values[x_key]
        grid = [[float("nan")] * len(cols) for _ in rows]
        bound = [[""] * len(cols) for _ in rows]
        for p in subset:
            r = rows.index(p["values"][series_key])
            c = cols.index(p["values"][x_key])
            grid[r][c] = p[metric] / y_scale
            bound[r][c] = p["bound"]
        fig, ax = plt.subplots(figsize=(1.6 + 1.3 * len(cols), 1.4 + 0.7 * len(rows)))
        image = ax.imshow(grid, cmap="viridis_r" if metric in ("latency_us", "total_cycles") else "viridis", aspect="auto")
        fig.colorbar(image, ax=ax, label=y_label)
        ax.set_xticks(range(len(cols)))
        ax.set_xticklabels([label(v) for v in cols])
        ax.set_yticks(range(len(rows)))
        ax.set_yticklabels([label(v) for v in rows])
        ax.set_xlabel(x_key)
        ax.set_ylabel(series_key)
        finite = [v for row in grid for v in row if v == v]
        middle = (min(finite) + max(finite)) / 2 if finite else 0
        for r in range(len(rows)):
            for c in range(len(cols)):
                v = grid[r][c]
                if v != v:
                    ax.text(c, r, "failed", ha="center", va="center", fontsize=7, color="red")
                    continue
                text = short(v) + "\n" + LIMITS.get(bound[r][c], UNKNOWN_LIMIT)[1]
                dark = (v > middle) if metric in ("latency_us", "total_cycles") else (v < middle)
                ax.text(c, r, text, ha="center", va="center", fontsize=7, color="white" if dark else "black")
        ax.set_title(title + "\neach cell: the value and the resource that binds it", fontsize=9)
        fig.tight_layout()
        path = os.path.join(out_dir, f"heatmap_{metric}{suffix}.png")
        fig.savefig(path, dpi=args.dpi)
        plt.close(fig)
        written.append(path)

    for path in written:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
