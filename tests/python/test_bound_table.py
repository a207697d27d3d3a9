"""scripts/bound_table.py's arithmetic, worked by hand (docs/cost-model.md's closed form:
folds = ceil(Sr / rows) * ceil(Sc / cols), P = load + rows + cols - 2 + T, cycles = folds * P - 1
per GEMM, load = rows for ws)."""
import os
import sys

sys.path.insert(0, os.path.join(os.environ.get("NPUSIM_SOURCE_DIR", "."), "scripts"))
import bound_table as b  # noqa: E402


def test_the_cuts_of_four_dimensions_over_two_slices():
    assert sorted(b.parts_up_to(2)) == [(1, 1, 1, 1), (1, 1, 1, 2), (1, 1, 2, 1), (1, 2, 1, 1),
                                        (2, 1, 1, 1)]


def test_one_slice_is_the_untiled_closed_form():
    # VGG's first conv on `default` (16 x 16 ws): Sr = K = 27, Sc = N = 64, T = 224 * 224 = 50176.
    # folds = ceil(27/16) * ceil(64/16) = 2 * 4 = 8; P = 16 + 16 + 16 - 2 + 50176 = 50222;
    # 8 * 50222 - 1 = 401775.
    assert b.layer_split_floor(1, 27, 64, 50176, 16, 16, 16, 1) == 401775


def test_two_slices_take_the_cheapest_cut():
    # Cut Sr: ceil(14/16) = 1 row fold, 1 * 4 * 50222 - 1 = 200887; cut Sc: 32 columns,
    # 2 * 2 * 50222 - 1 = 200887; cut T: 25088 rows, 8 * (46 + 25088) - 1 = 201071; one GEMM
    # cannot be shared: 401775. The cheapest is 200887.
    assert b.layer_split_floor(1, 27, 64, 50176, 16, 16, 16, 2) == 200887


def test_a_small_layer_on_a_large_array_pays_its_fill_on_every_slice():
    # A 1x1 conv of 64 -> 64 channels on 56 x 56 pixels on `server`'s 128 x 128 ws arrays, 8
    # slices: one fold; P = 128 + 128 + 128 - 2 + T = 382 + T. Only T is worth cutting:
    # 3136 / 8 = 392 rows each, 382 + 392 - 1 = 773 cycles, against 382 + 3136 - 1 = 3517 on one
    # slice (the achievable bound's compute term would be 3517 / 8 = 439.6).
    assert b.layer_split_floor(1, 64, 64, 3136, 128, 128, 128, 8) == 773
    assert b.layer_split_floor(1, 64, 64, 3136, 128, 128, 128, 1) == 3517


def test_uneven_cuts_round_up():
    # T = 101 rows over 2 slices: the larger part has ceil(101 / 2) = 51: 46 + 51 - 1 = 96
    # (one slice: 46 + 101 - 1 = 146). 15 GEMMs over 2 slices: ceil(15 / 2) = 8 on one, each
    # 46 + 10 - 1 = 55: 440 (T = 10 cut instead: 15 * (46 + 5 - 1) = 750).
    assert b.layer_split_floor(1, 9, 1, 101, 16, 16, 16, 2) == 96
    assert b.layer_split_floor(15, 9, 1, 10, 16, 16, 16, 2) == 440


def test_independent_gemms_are_shared_out_whole():
    # 16 GEMMs of Sr 9, Sc 1, T 100 on 16 x 16 ws, 2 slices: one GEMM is 46 + 100 - 1 = 145;
    # 8 each: 1160; T cut instead: 16 * (46 + 50 - 1) = 1520.
    assert b.layer_split_floor(16, 9, 1, 100, 16, 16, 16, 2) == 1160


def test_the_floor_sums_the_array_layers_only():
    dev = {"array_rows": 16, "array_cols": 16, "dataflow": "ws", "slices": 2}
    layers = [{"gemms": 1, "sr": 27, "sc": 64, "t": 50176},
              {"name": "pool"},  # a vector layer: no GEMM
              {"gemms": 16, "sr": 9, "sc": 1, "t": 100}]
    assert b.split_floor(layers, dev) == 200887 + 1160
    # os keeps its outputs in place: no load, P = 16 + 16 - 2 + T.
    # 8 * (30 + 50176) - 1 = 401647 on one slice; cut Sr on two: 1 * 4 * 50206 - 1 = 200823.
    assert b.split_floor(layers[:1], dict(dev, dataflow="os")) == 200823


def test_where_the_cycles_go_over_two_devices():
    # Two devices of one slice each: arrays busy 100 and 80 (90 on average), vector units 30 (10
    # beside the array) and 10 (all beside): alone (20 + 0) / 2 = 10. Over 200 cycles with a
    # compute term of 50: 25 %, tiling (90 - 50) / 200 = 20 %, vector alone 5 %, idle
    # (200 - 90 - 10) / 200 = 50 %.
    engines = {"DEV0.SLICE0.ARRAY": {"busy_cycles": 100},
               "DEV1.SLICE0.ARRAY": {"busy_cycles": 80},
               "DEV0.SLICE0.VECTOR": {"busy_cycles": 30, "array_overlap_cycles": 10},
               "DEV1.SLICE0.VECTOR": {"busy_cycles": 10, "array_overlap_cycles": 10},
               "DMA_IN": {"busy_cycles": 5}}
    assert b.where_cycles_go(engines, 1, 50, 200) == {
        "compute_pct": 25.0, "tiling_pct": 20.0, "vector_alone_pct": 5.0, "idle_pct": 50.0}
