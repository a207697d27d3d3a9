"""npusim.run and npusim.estimate give the CLI's figures, exactly, and its output files."""

import filecmp
import os

import pytest

import npusim

# (model relative to the source dir, config): a schedule, a graph JSON, a SCALE-Sim topology and
# an ONNX model, on both built-in configs.
CASES = [
    ("models/fc.json", "default"),
    ("models/convnet.json", "default"),
    ("models/zoo/mobilenetv2.json", "default"),
    ("models/zoo/bert_base_layer.json", "server"),
    ("../shared/models/scalesim/conv_nets/test.csv", "default"),
    ("../shared/models/onnx/mnist-8.onnx", "server"),
]


def test_fc_on_default_is_the_documented_81455(src):
    r = npusim.run(src / "models/fc.json", "default")
    # docs/cost-model.md works it out by hand: DO0 ends at 81295 + 32 + 32 + 16 + 80 = 81455.
    assert r.total_cycles == 81455
    assert r.simulated and r.complete and r.out is None


def test_fc_energy_is_in_the_result(src):
    r = npusim.run(src / "models/fc.json", "default")
    # tests/energy_test.cpp works it out by hand: 43.603973 uJ dynamic + 2.44365 uJ static.
    assert r.energy["total_uj"] == 46.047623
    assert r.energy_uj == r.stats["energy"]["total_uj"] == r.runtime.energy_uj
    assert r.energy["dynamic_uj"] == 43.603973


@pytest.mark.parametrize("model,config", CASES, ids=[os.path.basename(m) for m, _ in CASES])
def test_run_equals_cli_stats_json(cli, src, tmp_path, model, config):
    expected = cli.stats("run", src / model, config, tmp_path / "cli")
    r = npusim.run(src / model, config)
    # Every figure of stats.json at level 100: totals, engines, ops, layers, bounds, programs.
    assert r.stats == expected
    assert r.total_cycles == expected["runtime"]["total_cycles"]
    assert r.estimate.total_cycles == expected["estimate"]["total_cycles"]
    assert r.busy_cycles == {k: v["busy_cycles"] for k, v in expected["runtime"]["engines"].items()}
    assert r.binding == expected["bounds"]["binding"]
    assert r.bounds["array"] == expected["bounds"]["array_cycles"]
    assert len(r.stats["runtime"]["ops"]) == expected["commands"]


@pytest.mark.parametrize("model,config", CASES[:3], ids=[os.path.basename(m) for m, _ in CASES[:3]])
def test_estimate_equals_cli(cli, src, tmp_path, model, config):
    expected = cli.stats("estimate", src / model, config, tmp_path / "cli")
    r = npusim.estimate(src / model, config)
    assert r.stats == expected
    assert r.runtime is None and not r.simulated
    assert r.total_cycles == expected["estimate"]["total_cycles"]


def test_outputs_only_with_out_and_byte_identical_to_cli(cli, src, tmp_path, in_tmp_cwd):
    model = src / "models/convnet.json"
    r = npusim.run(model, "default")
    assert list(in_tmp_cwd.iterdir()) == [], "run() without out= wrote files"
    out = tmp_path / "py"
    r2 = npusim.run(model, "default", out=out)
    assert r2.out == out
    proc = cli("run", model, "--out", tmp_path / "cli", "--quiet")
    assert proc.returncode == 0, proc.stderr
    files = sorted(os.listdir(tmp_path / "cli"))
    assert files == sorted(os.listdir(out))
    assert "trace.pftrace" in files and "runtime_timeline.csv" in files
    match, mismatch, errors = filecmp.cmpfiles(tmp_path / "cli", out, files, shallow=False)
    assert mismatch == [] and errors == [], (mismatch, errors)
    # summary.txt is what run() also returns.
    assert (out / "summary.txt").read_text() == r.summary
    assert r.stats == r2.stats


def test_stats_level_of_the_files(cli, src, tmp_path):
    model = src / "models/fc.json"
    npusim.run(model, out=tmp_path / "py", stats_level=40)
    cli("run", model, "--out", tmp_path / "cli", "--stats-level", "40", "--quiet")
    assert (tmp_path / "py/stats.json").read_bytes() == (tmp_path / "cli/stats.json").read_bytes()
    assert b'"ops"' not in (tmp_path / "py/stats.json").read_bytes()


def test_tables(src):
    r = npusim.run(src / "models/convnet.json")
    ops = r.ops
    rows = r.stats["runtime"]["ops"]
    if npusim.pandas_available():
        import pandas as pd
        assert isinstance(ops, pd.DataFrame) and isinstance(r.layers, pd.DataFrame)
        assert list(ops["cycles"]) == [o["cycles"] for o in rows]
        assert list(ops.columns[:4]) == ["index", "id", "name", "op"]
        assert int(ops["end_cycle"].max()) == r.total_cycles
    npusim.use_pandas(False)
    try:
        assert r.ops == rows and isinstance(r.layers, list) and r.layers
        assert r.estimate.ops == r.stats["estimate"]["ops"]
    finally:
        npusim.use_pandas(True)


def test_overrides_and_config_objects(cli, src, tmp_path):
    model = src / "models/convnet.json"
    expected = cli.stats("run", model, "default", tmp_path / "cli", "--set",
                         "dram.bandwidth_gbps=25.6", "--set", "clock_mhz=400")
    sets = {"dram.bandwidth_gbps": 25.6, "clock_mhz": 400}
    a = npusim.run(model, "default", overrides=sets)
    cfg = npusim.load_config("default", overrides=sets)
    b = npusim.run(model, cfg)
    c = npusim.run(model, npusim.load_config("default", {"clock_mhz": 400}),
                   overrides={"dram.bandwidth_gbps": 25.6})
    assert a.stats == expected and b.stats == expected and c.stats == expected
    assert cfg.clock_mhz == 400 and cfg.dram["bandwidth_mbps"] == 25600
    assert a.total_cycles != npusim.run(model).total_cycles  # the overrides did something


def test_config_file_and_fields(src):
    cfg = npusim.load_config(src / "configs/server.json")
    assert cfg.name == "server" and cfg.slices["count"] == 8 and cfg.clock_mhz == 1000
    assert "default" in npusim.builtin_configs() and "server" in npusim.builtin_configs()
    builtin = npusim.load_config("server")
    assert builtin.as_dict() | {"source": ""} == cfg.as_dict() | {"source": ""}


def test_iterations_equal_cli(cli, src, tmp_path):
    model = src / "models/fc.json"
    expected = cli.stats("run", model, "default", tmp_path / "cli", "--iterations", "4",
                         "--profile-start-iter", "1", "--profile-samples", "2")
    r = npusim.run(model, iterations=4, profile_start=1, profile_samples=2)
    assert r.stats == expected
    assert r.stats["iterations"]["count"] == 4


def test_run_a_compiled_schedule(src):
    s = npusim.compile(src / "models/zoo/mobilenetv2.json", "default")
    assert npusim.run(s, "default").stats["runtime"] == \
        npusim.run(src / "models/zoo/mobilenetv2.json", "default").stats["runtime"]
