"""npusim.compile: the CLI's schedule, with per-command access."""

import json

import pytest

import npusim


def test_fc_commands(src):
    # Unlike `npusim compile`, compile() takes a schedule too: loaded and checked for the config.
    s = npusim.compile(src / "models/fc.json", "default")
    assert len(s) == 4
    assert [c.id for c in s] == ["DI0", "DI1", "S0", "DO0"]
    gemm = s[2]
    assert gemm is s["S0"] and gemm.index == 2
    assert gemm.op == "Gemm" and gemm["engine"] == "SLICE" and gemm.slice == 0
    assert gemm.shape == {"m": 1, "n": 256, "k": 1024}
    assert gemm.deps == ["DI0", "DI1"]
    assert gemm.macs == 1 * 256 * 1024
    assert s[0].bytes == 262144 and s[0].deps == [] and s[0].macs == 0
    assert s[-1].id == "DO0" and [c.id for c in s[1:3]] == ["DI1", "S0"]
    assert s.model["name"] == "fc" and s.programs[0]["name"] == "fc"


@pytest.mark.parametrize("model,config", [("models/zoo/mobilenetv2.json", "default"),
                                          ("models/zoo/yolo_tiny.json", "server"),
                                          ("models/zoo/bert_base_layer.json", "default")])
def test_schedule_json_is_the_clis(cli, src, tmp_path, model, config):
    out = tmp_path / "cli.json"
    proc = cli("compile", src / model, "-c", config, "-o", out)
    assert proc.returncode == 0, proc.stderr
    s = npusim.compile(src / model, config)
    assert s.json == out.read_text()
    doc = json.loads(out.read_text())
    assert len(s) == len(doc["commands"])
    for i in (0, len(s) // 2, len(s) - 1):
        for key, value in doc["commands"][i].items():
            assert s[i][key] == value
    s.save(tmp_path / "py.json")
    assert (tmp_path / "py.json").read_bytes() == out.read_bytes()


def test_isolated_cycles_are_the_estimates_durations(src):
    """With DRAM to itself each command takes its isolated cycles: the estimate's per-op cycles
    of the slice commands are exactly the schedule's costs."""
    s = npusim.compile(src / "models/zoo/mobilenetv2.json", "default")
    ops = npusim.estimate(src / "models/zoo/mobilenetv2.json", "default").stats["estimate"]["ops"]
    assert len(ops) == len(s)
    slice_ops = [(o, c) for o, c in zip(ops, s) if c.engine == "SLICE"]
    assert slice_ops
    for o, c in slice_ops:
        assert o["id"] == c.id
        assert o["cycles"] == c.isolated_cycles
        assert o["macs"] == c.macs + c.vector_macs


def test_commands_table(src):
    s = npusim.compile(src / "models/convnet.json")
    t = s.commands_table()
    if npusim.pandas_available():
        assert list(t["id"]) == [c.id for c in s]
        assert int(t["macs"].sum()) == sum(c.macs for c in s)
    npusim.use_pandas(False)
    try:
        assert [r["id"] for r in s.commands_table()] == [c.id for c in s]
    finally:
        npusim.use_pandas(True)
