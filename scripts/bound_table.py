#!/usr/bin/env python3
"""Cycles against the achievable bound, one row per model x config (scripts/bench.sh runs it).

Achievable bound = the larger of
  - compute: each layer's untiled single-array closed-form cycles (SCALE-Sim's, stats.json
    layers[].ideal_array_cycles), summed, over the slices;
  - memory: the compulsory traffic (weights once, model inputs and outputs once) over the memory
    roof: reads over the DMA_IN channels, writes over the DMA_OUT channels, both over DRAM. A
    channel moves at most its port's bytes per cycle, and at most dma.max_outstanding bursts per
    round trip (a burst's DRAM service on one DRAM channel plus dram.latency_ns), as stats.json's
    dma_*_port bounds count (docs/outputs.md, "Lower bounds").
Each row also shows the split floor (split_floor): each array layer alone, cut evenly over the
slices as well as SCALE-Sim's folds allow, one layer after another. It is what a schedule that
runs the layers in turn could at best reach under the cost model, and so shows how much of the
gap to the bound is the folds' fill and drain once a layer is spread over many slices. It is no
lower bound: layers that overlap (chains, branches) or uneven cuts can beat it.
Each row also says where the cycles go (where_cycles_go): per slice, on average, the compute
term, the array's tiling overhead beyond it, vector work beside an idle array, and idle time, in
% of the cycles (they add up to 100); and the DRAM traffic over the compulsory traffic.
Usage: bound_table.py NPUSIM OUT_JSON MODEL... -- CONFIG...
"""
import json
import math
import os
import subprocess
import sys
import tempfile

DTYPE_BYTES = {"int8": 1, "uint8": 1, "bool": 1, "int16": 2, "float16": 2, "bfloat16": 2,
               "int32": 4, "float32": 4, "uint32": 4, "int64": 8, "float64": 8, "int4": 0.5}


def tensor_bytes(t):
    return math.ceil(math.prod(t["shape"]) * DTYPE_BYTES.get(t["dtype"], 1))


def channel_bytes_per_cycle(config, dev):
    """The most one DMA channel moves per cycle: its port's bytes, or, if fewer, max_outstanding
    bursts per burst round trip (DRAM service of a full burst on one DRAM channel + latency)."""
    port = dev["dma_bytes_per_cycle"]
    # A built-in config's name (as bench.sh passes) is its file under configs/.
    if not os.path.isfile(config):
        config = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "configs",
                              config + ".json")
    c = json.load(open(config))
    dma, dram = c.get("dma", {}), c.get("dram", {})
    if c.get("ideal_memory") or not all(k in dma for k in ("burst_bytes", "max_outstanding")) \
            or not all(k in dram for k in ("latency_ns", "channels")):
        return port
    dram_per_channel = dev["dram_bandwidth_gbps"] * 1e3 / dev["clock_mhz"] / dram["channels"]
    latency = math.ceil(dram["latency_ns"] * dev["clock_mhz"] / 1000)
    burst = dma["burst_bytes"]
    return min(port, dma["max_outstanding"] * burst / (burst / dram_per_channel + latency))


def row(npusim, model, config, tmp):
    schedule = os.path.join(tmp, "s.json")
    out = os.path.join(tmp, "out")
    extra = ["--host-fallback"] if model.endswith(".onnx") else []
    r = subprocess.run([npusim, "compile", model, "-c", config, "-o", schedule, "-q"] + extra,
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": r.stderr.strip().splitlines()[-1][:100] if r.stderr else "compile failed"}
    r = subprocess.run([npusim, "run", schedule, "-c", config, "-o", out, "-q"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return {"error": "run failed"}
    sched = json.load(open(schedule))
    stats = json.load(open(os.path.join(out, "stats.json")))
    dev = stats["device"]
    rt = stats["runtime"]
    ideal = sum(l.get("ideal_array_cycles") or 0 for l in rt.get("layers", []))
    compute = ideal / dev["slices"]
    m = sched["model"]
    reads = m["weights_bytes"] + sum(tensor_bytes(t) for t in m["inputs"])
    writes = sum(tensor_bytes(t) for t in m["outputs"])
    clock_hz = dev["clock_mhz"] * 1e6
    per_cycle = lambda gbps: gbps * 1e9 / clock_hz
    channel = channel_bytes_per_cycle(config, dev)
    memory = max(reads / (dev["dma_in_channels"] * channel),
                 writes / (dev["dma_out_channels"] * channel),
                 (reads + writes) / per_cycle(dev["dram_bandwidth_gbps"]))
    bound = max(compute, memory, 1)
    cycles = rt["total_cycles"]
    r = {"cycles": cycles, "bound": round(bound), "ratio": cycles / bound,
         "bound_kind": "compute" if compute >= memory else "memory",
         "mac_util_pct": rt["mac_utilization"] * 100,
         "binding": stats["bounds"]["binding"],
         # DRAM bytes moved over the compulsory bytes: what tensors not kept on chip cost.
         "traffic_x": (stats["dram_read_bytes"] + stats["dram_write_bytes"]) / max(reads + writes, 1)}
    floor = split_floor(rt.get("layers", []), dev)
    r["split_floor"] = floor
    r["floor_ratio"] = cycles / max(floor, memory, 1)
    r.update(where_cycles_go(rt["engines"], dev["slices"], compute, cycles))
    return r


def parts_up_to(slices):
    """Every way (a, b, c, d) to cut four dimensions into parts, a * b * c * d <= slices."""
    return [(a, b, c, d) for a in range(1, slices + 1) for b in range(1, slices // a + 1)
            for c in range(1, slices // (a * b) + 1) for d in range(1, slices // (a * b * c) + 1)]


def layer_split_floor(gemms, sr, sc, t, rows, cols, load, slices):
    """The fewest cycles one array layer takes alone on up to `slices` slices, its `gemms`
    independent GEMMs and each GEMM's SCALE-Sim dimensions (sr on the array's rows, sc on its
    columns, t streamed) cut into equal parts, one part of each per slice. A slice's part costs
    SCALE-Sim's closed form per GEMM, ceil(sr'/rows) * ceil(sc'/cols) * (load + rows + cols - 2
    + t') - 1 (docs/cost-model.md), load = rows for ws and is, 0 for os. Cutting sr (a conv's
    reduction, for ws) leaves partial sums to add, which are not counted."""
    best = None
    for a, b, c, d in parts_up_to(slices):
        per_gemm = (math.ceil(math.ceil(sr / a) / rows) * math.ceil(math.ceil(sc / b) / cols)
                    * (load + rows + cols - 2 + math.ceil(t / c)) - 1)
        cycles = math.ceil(gemms / d) * max(per_gemm, 1)
        best = cycles if best is None else min(best, cycles)
    return best


def split_floor(layers, dev):
    """The array layers' split floors (layer_split_floor), summed."""
    rows, cols = dev["array_rows"], dev["array_cols"]
    load = 0 if dev["dataflow"] == "os" else rows
    return sum(layer_split_floor(l["gemms"], l["sr"], l["sc"], l["t"], rows, cols, load,
                                 dev["slices"])
               for l in layers if l.get("sr"))


def where_cycles_go(engines, slices, compute, cycles):
    """A slice's cycles, averaged over the slices, in four parts that add up to the run's:
    the compute term (untiled array cycles over the slices); what its array spent beyond that
    (tiling: fills and drains of more, smaller folds, PartialSums' folds, slices left unevenly
    loaded); what its vector unit ran while the array idled (array_overlap_cycles,
    docs/outputs.md); and what neither unit did (waiting for DMA, dependencies, dispatch).
    With several devices the units averaged are every device's (DEV<d>.SLICE<s>.*); the rows
    here are one device's. Tiling can come out slightly negative: the compute term is each layer's
    untiled closed form, and a tiling whose folds happen to pack better takes a little less."""
    array = alone = 0
    arrays = 0
    for name, e in engines.items():
        unit = name.split(".", 1)[1] if name.startswith("DEV") else name
        if not unit.startswith("SLICE"):
            continue
        if unit.endswith(".ARRAY"):
            array += e.get("busy_cycles", 0)
            arrays += 1
        elif unit.endswith(".VECTOR"):
            alone += e.get("busy_cycles", 0) - e.get("array_overlap_cycles", 0)
    arrays = max(arrays, slices, 1)
    array, alone = array / arrays, alone / arrays
    pct = lambda x: 100 * x / max(cycles, 1)
    return {"compute_pct": pct(compute), "tiling_pct": pct(array - compute),
            "vector_alone_pct": pct(alone), "idle_pct": pct(cycles - array - alone)}


def main():
    npusim, out_json = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    split = rest.index("--")
    models, configs = rest[:split], rest[split + 1:]
    rows = {}
    print(f"{'model':<34} {'config':<8} {'cycles':>12} {'bound':>12} {'ratio':>7} "
          f"{'floor':>12} {'xfloor':>7} "
          f"{'MAC %':>7} {'ideal%':>7} {'+tile%':>7} {'+vec%':>6} {'+idle%':>7} {'traffic':>8}"
          f"  bound of / binding")
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            for config in configs:
                name = os.path.basename(model)
                r = row(npusim, model, config, tmp)
                rows[f"{name}/{config}"] = r
                if "error" in r:
                    print(f"{name:<34} {config:<8} {r['error']}")
                    continue
                print(f"{name:<34} {config:<8} {r['cycles']:>12} {r['bound']:>12} "
                      f"{r['ratio']:>7.2f} {r['split_floor']:>12} {r['floor_ratio']:>7.2f} "
                      f"{r['mac_util_pct']:>7.2f} {r['compute_pct']:>7.1f} "
                      f"{r['tiling_pct']:>7.1f} {r['vector_alone_pct']:>6.1f} {r['idle_pct']:>7.1f} "
                      f"{r['traffic_x']:>7.2f}x  {r['bound_kind']} / {r['binding']}")
    json.dump(rows, open(out_json, "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
