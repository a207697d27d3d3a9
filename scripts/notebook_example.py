#!/usr/bin/python3
"""npusim from Python, as notebook cells (`# %%`): run a model, look at its ops, sweep the clock
and the slice count, and plot latency with each point's binding limit.

    PYTHONPATH=build/python scripts/notebook_example.py [--out DIR] [--model MODEL]

Headless: matplotlib's Agg backend, so it needs no display; writes DIR/sweep_latency.png
(default DIR: traces/notebook_example) and prints its path. docs/python.md explains each call.
"""

# %% Setup
import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")  # no display needed; a notebook would keep its inline backend
import matplotlib.pyplot as plt  # noqa: E402

import npusim  # noqa: E402  (PYTHONPATH=build/python, or installed with cmake --install)

HERE = os.path.dirname(os.path.abspath(__file__))
parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
parser.add_argument("--out", default="traces/notebook_example", help="folder for the PNG")
parser.add_argument("--model", default=os.path.join(HERE, "..", "models/zoo/mobilenetv2.json"))
parser.add_argument("--jobs", type=int, default=None, help="sweep points at a time")
args = parser.parse_args()
os.makedirs(args.out, exist_ok=True)

# %% One run: totals, where the cycles go, what binds
r = npusim.run(args.model, "default")
print(r)
print(f"simulated {r.total_cycles} cycles ({r.time_us:.1f} us), estimate "
      f"{r.estimate.total_cycles}, binding limit {r.binding}")
ops = r.ops
if npusim.pandas_available():
    by_type = ops.groupby("op")["cycles"].sum().sort_values(ascending=False)
    print("cycles by op type:\n" + by_type.head(5).to_string())
else:
    print("the 3 longest ops:", sorted(ops, key=lambda o: -o["cycles"])[:3])

# %% A sweep: clock x slices, one process per point
clocks = [400, 600, 800, 1000]
slices = [1, 2, 4]
points = npusim.sweep(args.model, "default", grid={"clock_mhz": clocks, "slices.count": slices},
                      jobs=args.jobs)
rows = points.to_dict("records") if npusim.pandas_available() else points
print(f"{'clock_mhz':>9} {'slices':>6} {'latency_us':>11}  bound")
for p in rows:
    print(f"{p['clock_mhz']:>9} {p['slices.count']:>6} {p['latency_us']:>11.1f}  {p['bound']}")
failed = [p for p in rows if p["status"] != "ok"]
if failed:
    sys.exit(f"{len(failed)} point(s) failed: {failed[0]['error']}")

# %% Plot: latency against the clock, one line per slice count, markers by binding limit
markers = {"array": "o", "vector": "D", "mac_peak": "^", "host": "*", "dma_in_port": "s",
           "dma_out_port": "p", "dram": "v"}
fig, ax = plt.subplots(figsize=(7, 4.5))
for n in slices:
    line = [p for p in rows if p["slices.count"] == n]
    ax.plot([p["clock_mhz"] for p in line], [p["latency_us"] for p in line], "-",
            label=f"{n} slice(s)")
    for p in line:
        ax.plot(p["clock_mhz"], p["latency_us"], markers.get(p["bound"], "x"), color="black",
                fillstyle="full" if p["bound"] in ("array", "vector", "mac_peak", "host")
                else "none")
for bound in sorted({p["bound"] for p in rows}):
    ax.plot([], [], markers.get(bound, "x"), color="black", linestyle="none",
            label=f"bound: {bound}")
ax.set_xlabel("clock (MHz)")
ax.set_ylabel("latency (us)")
ax.set_title(f"{r.model['name']} on default: latency by clock and slices")
ax.legend()
ax.grid(True, alpha=0.3)
png = os.path.join(args.out, "sweep_latency.png")
fig.savefig(png, dpi=100, bbox_inches="tight")
print(png)
