#!/usr/bin/env python3
"""Writes models/convnet.json: a small conv net hand-scheduled over 2 slices with double-buffered
DMA, the kind of schedule a compiler emits. Deterministic; rerun after changing it.

Network (NHWC, int8): 32x32x16 input
  conv1 3x3 16->32 s1 p1 (+bn +relu, fused)  -> 32x32x32
  conv2 3x3 32->64 s2 p1 (+bn +relu, fused)  -> 16x16x64
  conv3 3x3 64->64 s1 p1 (+relu, fused)      -> 16x16x64
  global average pool                        -> 64
  fc 64->10                                  -> 10

Each conv layer splits its output rows into 4 tiles, alternating between slice 0 and 1. A tile's
input rows (with the halo its kernel needs) come in by DMA_IN into one of two input buffers of its
slice (ping-pong), so the next tile's load overlaps this tile's compute; its output goes out by
DMA_OUT. A tile's conv shape states the rows it reads with padding folded in (pad_h 0), so its
output height is exactly the tile's rows; its DMA moves only the rows that exist in memory.
Layers exchange activations through DRAM: a tile's load waits for the stores of the rows it reads.
"""
import json
import os

TILES = 4
SLICES = 2
LAYERS = [  # name, in_h, in_w, in_c, out_c, kernel, stride, pad, layer label
    ("conv1", 32, 32, 16, 32, 3, 1, 1, "fused(conv1+bn1+relu1)"),
    ("conv2", 32, 32, 32, 64, 3, 2, 1, "fused(conv2+bn2+relu2)"),
    ("conv3", 16, 16, 64, 64, 3, 1, 1, "fused(conv3+relu3)"),
]


class Builder:
    def __init__(self):
        self.commands = []
        self.counts = {"DI": 0, "DO": 0, "S": 0}

    def add(self, prefix, **fields):
        cid = f"{prefix}{self.counts[prefix]}"
        self.counts[prefix] += 1
        cmd = {"id": cid}
        cmd.update(fields)
        self.commands.append(cmd)
        return cid


def main():
    b = Builder()
    programs = []
    # Per slice: the last compute that used each of its two input buffers, and the last store of
    # its output buffer, so that a buffer is reloaded only after its previous user is done.
    last_user = {(s, buf): None for s in range(SLICES) for buf in range(2)}
    last_store = {s: None for s in range(SLICES)}
    prev_stores = None  # per output row of the previous layer: the DO that wrote it
    tile_counter = 0
    for li, (name, in_h, in_w, in_c, out_c, k, s, p, label) in enumerate(LAYERS):
        programs.append({"name": name, "loc": f'loc("convnet.py":{li + 1}:1)'})
        out_h = (in_h + 2 * p - k) // s + 1
        out_w = (in_w + 2 * p - k) // s + 1
        w_bytes = k * k * in_c * out_c
        w_buf = f"{name}.w"
        weights = b.add("DI", engine="DMA_IN", bytes=w_bytes, layer=label,
                        loc=f'loc("{name}.weight")', program=li,
                        alloc=[{"buffer": w_buf, "bytes": w_bytes}])
        rows = out_h // TILES
        stores = {}
        last_convs = []
        for t in range(TILES):
            sl = t % SLICES
            buf = (tile_counter // SLICES) % 2
            tile_counter += 1
            r0, r1 = t * rows, (t + 1) * rows
            lo = max(0, r0 * s - p)
            hi = min(in_h, (r1 - 1) * s - p + k)
            in_bytes = (hi - lo) * in_w * in_c
            out_bytes = rows * out_w * out_c
            deps = []
            if last_user[(sl, buf)]:
                deps.append(last_user[(sl, buf)])
            if prev_stores:
                for r in range(lo, hi):
                    if prev_stores[r] not in deps:
                        deps.append(prev_stores[r])
            in_buf = f"{name}.in{t}"
            load = b.add("DI", engine="DMA_IN", bytes=in_bytes, deps=deps, layer=label,
                         loc=f'loc("{name}":rows {lo}-{hi})', program=li,
                         alloc=[{"buffer": in_buf, "bytes": in_bytes}])
            out_buf = f"{name}.out{t}"
            conv_deps = [weights, load] + ([last_store[sl]] if last_store[sl] else [])
            conv = b.add("S", engine="SLICE", slice=sl, op="Conv",
                         shape={"in_h": (rows - 1) * s + k, "in_w": in_w, "in_c": in_c,
                                "out_c": out_c, "kernel_h": k, "kernel_w": k,
                                "stride_h": s, "stride_w": s, "pad_h": 0, "pad_w": p},
                         deps=conv_deps, layer=label, loc=f'loc("{name}":tile {t})', program=li,
                         alloc=[{"buffer": out_buf, "bytes": out_bytes}], free=[in_buf])
            last_user[(sl, buf)] = conv
            last_convs.append(conv)
            store_deps = [conv]
            frees = [out_buf]
            if t == TILES - 1:
                # The layer's weights are free once both slices are done with them.
                store_deps += [c for c in last_convs[-SLICES:] if c != conv]
                frees.append(w_buf)
            store = b.add("DO", engine="DMA_OUT", bytes=out_bytes, deps=store_deps, layer=label,
                          loc=f'loc("{name}":rows {r0}-{r1})', program=li, free=frees)
            last_store[sl] = store
            for r in range(r0, r1):
                stores[r] = store
        prev_stores = stores

    # Head on slice 0: global average pool on the vector unit, then the fc on the array.
    hp = len(LAYERS)
    programs.append({"name": "head", "loc": f'loc("convnet.py":{hp + 1}:1)'})
    act = 16 * 16 * 64
    load = b.add("DI", engine="DMA_IN", bytes=act, deps=sorted(set(prev_stores.values()), key=lambda c: int(c[2:])),
                 layer="gap", loc='loc("gap")', program=hp,
                 alloc=[{"buffer": "gap.in", "bytes": act}])
    fc_w = b.add("DI", engine="DMA_IN", bytes=64 * 10, layer="fc", loc='loc("fc.weight")',
                 program=hp, alloc=[{"buffer": "fc.w", "bytes": 640}])
    gap = b.add("S", engine="SLICE", slice=0, op="GlobalAveragePool",
                shape={"in_h": 16, "in_w": 16, "channels": 64}, deps=[load], layer="gap",
                loc='loc("gap")', program=hp, alloc=[{"buffer": "gap.out", "bytes": 64}],
                free=["gap.in"])
    fc = b.add("S", engine="SLICE", slice=0, op="Gemm", shape={"m": 1, "n": 10, "k": 64},
               deps=[gap, fc_w], layer="fc", loc='loc("fc")', program=hp,
               alloc=[{"buffer": "fc.out", "bytes": 10}], free=["gap.out", "fc.w"])
    b.add("DO", engine="DMA_OUT", bytes=10, deps=[fc], layer="fc", loc='loc("logits")',
          program=hp, free=["fc.out"])

    weights_bytes = sum(k * k * ic * oc for _, _, _, ic, oc, k, _, _, _ in LAYERS) + 640
    schedule = {
        "format": "npusim-schedule",
        "version": 1,
        "model": {
            "name": "convnet",
            "batch": 1,
            "weights_bytes": weights_bytes,
            "inputs": [{"name": "image", "dtype": "int8", "layout": "NHWC", "shape": [1, 32, 32, 16]}],
            "outputs": [{"name": "logits", "dtype": "int8", "layout": "NC", "shape": [1, 10]}],
        },
        "target": {"config": "default", "slices": SLICES},
        "programs": programs,
        "commands": b.commands,
    }
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "models", "convnet.json")
    with open(out, "w") as f:
        f.write("{\n")
        keys = list(schedule)
        for i, key in enumerate(keys):
            sep = "," if i < len(keys) - 1 else ""
            if key == "commands":
                f.write('  "commands": [\n')
                for j, c in enumerate(schedule["commands"]):
                    f.write("    " + json.dumps(c) + ("," if j < len(b.commands) - 1 else "") + "\n")
                f.write("  ]" + sep + "\n")
            else:
                f.write(f"  {json.dumps(key)}: {json.dumps(schedule[key])}{sep}\n")
        f.write("}\n")


if __name__ == "__main__":
    main()
