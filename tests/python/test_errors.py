"""Bad inputs raise npusim's exceptions with the CLI's message, file and JSON pointer; nothing
crashes the interpreter."""

import json

import pytest

import npusim


def fc_with(src, tmp_path, edit, name="bad.json"):
    doc = json.loads((src / "models/fc.json").read_text())
    edit(doc)
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return path


def test_bad_dependency_names_file_and_pointer(cli, src, tmp_path):
    def edit(doc):
        doc["commands"][2]["deps"][0] = "DI7"

    bad = fc_with(src, tmp_path, edit)
    code, message = cli.error("run", bad, "--out", tmp_path / "cli")
    with pytest.raises(npusim.InputError) as e:
        npusim.run(bad, "default", out=tmp_path / "py")
    assert e.value.exit_code == code == 2
    assert str(e.value) == message
    assert e.value.file == str(bad)
    assert e.value.pointer == "/commands/2/deps/0"
    assert "DI7" in e.value.problems[0].message
    assert not (tmp_path / "py").exists()  # nothing written, as the CLI


def test_every_problem_is_listed(cli, src, tmp_path):
    def edit(doc):
        doc["commands"][0]["bytes"] = -1
        doc["commands"][2]["slice"] = 9

    bad = fc_with(src, tmp_path, edit)
    _, message = cli.error("estimate", bad)
    with pytest.raises(npusim.InputError) as e:
        npusim.estimate(bad)
    assert str(e.value) == message
    assert [p.pointer for p in e.value.problems] == ["/commands/0/bytes", "/commands/2/slice"]
    assert all(p.file == str(bad) for p in e.value.problems)


def test_malformed_json_names_the_line(cli, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"format": "npusim-schedule", "version": 1, "commands": [\n')
    _, message = cli.error("compile", bad)
    with pytest.raises(npusim.InputError) as e:
        npusim.compile(bad)
    assert str(e.value) == message and e.value.file == str(bad)


def test_bad_override_and_config(cli, src, tmp_path):
    _, message = cli.error("run", src / "models/fc.json", "--set", "dram.bandwidth_gbps=0")
    with pytest.raises(npusim.InputError) as e:
        npusim.load_config("default", {"dram.bandwidth_gbps": 0})
    assert str(e.value) == message
    assert e.value.pointer == "/dram/bandwidth_gbps"
    assert e.value.file == "built-in:default (with --set)"
    with pytest.raises(npusim.InputError) as e:
        npusim.run(src / "models/fc.json", overrides={"slices.bogus": 1})
    assert e.value.pointer == "/slices/bogus"
    bad_config = tmp_path / "cfg.json"
    bad_config.write_text('{"clock_mhz": "fast"}')
    _, message = cli.error("run", src / "models/fc.json", "-c", bad_config)
    with pytest.raises(npusim.InputError) as e:
        npusim.run(src / "models/fc.json", bad_config)
    assert str(e.value) == message and e.value.file == str(bad_config)
    assert e.value.pointer == "/clock_mhz"


def test_missing_model_and_bad_options(cli, tmp_path):
    missing = tmp_path / "nope.json"
    _, message = cli.error("run", missing)
    with pytest.raises(npusim.InputError) as e:
        npusim.run(missing)
    assert str(e.value) == message
    with pytest.raises(npusim.InputError, match="expected 40, 50, 70 or 100, found 60"):
        npusim.run(missing, stats_level=60)
    with pytest.raises(npusim.InputError, match="--iterations"):
        npusim.run(tmp_path.parent / "x.json", iterations=0)


def test_deadlock_raises_with_the_partial_result(cli, src, tmp_path):
    def edit(doc):
        # The CLI test's deadlock (tests/cli_test.cpp): a store queued before the one it waits for.
        doc["commands"][3]["id"] = "DO1"
        doc["commands"].insert(3, {"id": "DO0", "engine": "DMA_OUT", "bytes": 64,
                                   "deps": ["DO1"]})

    bad = fc_with(src, tmp_path, edit, "deadlock.json")
    code, message = cli.error("run", bad, "--out", tmp_path / "cli")
    with pytest.raises(npusim.SimulationError) as e:
        npusim.run(bad, out=tmp_path / "py")
    assert e.value.exit_code == code == 3
    assert e.value.stage == "estimate"
    assert str(e.value) == message.replace(str(tmp_path / "cli"), str(tmp_path / "py"))
    assert "DMA_OUT holds DO0, waiting for DO1" in str(e.value)
    partial = e.value.result
    assert partial is not None and not partial.complete
    assert partial.stats["commands"] == 3 and partial.stats["complete"] is False
    assert json.loads((tmp_path / "py/stats.json").read_text()) | {"stats_level": 0} == \
        json.loads((tmp_path / "cli/stats.json").read_text()) | {"stats_level": 0}
    # The same process goes on running.
    assert npusim.run(src / "models/fc.json").total_cycles == 81455


def test_unwritable_out_is_an_output_error(src, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(npusim.OutputError) as e:
        npusim.run(src / "models/fc.json", out=blocker / "sub")
    assert e.value.exit_code == 2 and str(blocker) in str(e.value)


def test_out_holding_another_models_outputs(src, tmp_path):
    npusim.run(src / "models/fc.json", out=tmp_path / "o")
    with pytest.raises(npusim.InputError, match="holds the outputs of another model"):
        npusim.run(src / "models/convnet.json", out=tmp_path / "o")
    npusim.run(src / "models/convnet.json", out=tmp_path / "o", force=True)


def test_python_type_errors_stay_python_errors(src):
    with pytest.raises(TypeError):
        npusim.load_config("default", "clock_mhz=400")
    with pytest.raises(TypeError):
        npusim.run(src / "models/fc.json", overrides={"clock_mhz": object()})
    with pytest.raises(KeyError):
        npusim.compile(src / "models/fc.json")["nope"]
    with pytest.raises(IndexError):
        npusim.compile(src / "models/fc.json")[4]
