"""npusim.sweep: the rows of `npusim sweep`, and the figures of npusim.run on each point."""

import csv
import json
import tempfile

import pytest

import npusim

GRID = {"clock_mhz": [400, 800], "slices.count": [1, 2]}


def cli_sweep(cli, src, out, *extra):
    proc = cli("sweep", "-m", src / "models/zoo/mobilenetv2.json", "-c", "default", "--clock-mhz",
               "400,800", "--slices", "1,2", "--jobs", "2", "--out", out, "--quiet", *extra)
    return proc


def test_rows_equal_the_cli_sweep(cli, src, tmp_path):
    proc = cli_sweep(cli, src, tmp_path / "cli")
    assert proc.returncode == 0, proc.stderr
    npusim.use_pandas(False)
    try:
        rows = npusim.sweep(src / "models/zoo/mobilenetv2.json", "default", grid=GRID, jobs=2,
                            out=tmp_path / "py")
    finally:
        npusim.use_pandas(True)
    # The same sweep.csv, byte for byte, and the same rows as its sweep.json.
    assert (tmp_path / "py/sweep.csv").read_bytes() == (tmp_path / "cli/sweep.csv").read_bytes()
    with open(tmp_path / "cli/sweep.csv", newline="") as f:
        table = list(csv.DictReader(f))
    points = json.loads((tmp_path / "cli/sweep.json").read_text())["points"]
    assert len(rows) == len(table) == 4
    for row, line, point in zip(rows, table, points):
        assert row["index"] == point["index"]
        assert (row["clock_mhz"], row["slices.count"]) == (point["values"]["clock_mhz"],
                                                          point["values"]["slices.count"])
        assert row["total_cycles"] == point["total_cycles"] == int(line["total_cycles"])
        assert row["bound"] == point["bound"] == line["bound"]
        assert row["status"] == "ok" and row["error"] is None
    assert [(r["clock_mhz"], r["slices.count"]) for r in rows] == \
        [(400, 1), (400, 2), (800, 1), (800, 2)]


def test_points_equal_run_with_the_same_overrides(src):
    frame = npusim.sweep(src / "models/zoo/mobilenetv2.json", "default", grid=GRID, jobs=2)
    rows = frame.to_dict("records") if npusim.pandas_available() else frame
    for row in rows:
        r = npusim.run(src / "models/zoo/mobilenetv2.json", "default",
                       overrides={"clock_mhz": row["clock_mhz"],
                                  "slices.count": row["slices.count"]})
        assert row["total_cycles"] == r.total_cycles
        assert row["latency_us"] == r.time_us
        assert row["bound"] == r.binding


def test_a_failing_point_is_a_row_and_a_warning(src, tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with pytest.warns(RuntimeWarning, match="1 of 2 point"):
        frame = npusim.sweep(src / "models/fc.json", npusim.load_config("default"),
                             grid={"dram.bandwidth_gbps": [0, 12.8]})
    rows = frame.to_dict("records") if npusim.pandas_available() else frame
    assert rows[0]["status"] == "failed" and "/dram/bandwidth_gbps" in rows[0]["error"]
    assert rows[1]["status"] == "ok" and rows[1]["total_cycles"] == 81455
    assert list(scratch.iterdir()) == []  # the temporary sweep folder is gone
    assert list(tmp_path.iterdir()) == [scratch]  # and nothing was written elsewhere


def test_bad_sweeps_raise_input_error(src):
    with pytest.raises(npusim.InputError, match="slices.bogus"):
        npusim.sweep(src / "models/fc.json", grid={"slices.bogus": [1, 2]})
    with pytest.raises(npusim.InputError, match="grid"):
        npusim.sweep(src / "models/fc.json", grid={})
    with pytest.raises(npusim.InputError):
        npusim.sweep(src / "models/missing.json", grid={"clock_mhz": [400]})


def test_an_unwritable_sweep_folder_is_an_output_error(src, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(npusim.OutputError, match="cannot create the folder"):
        npusim.sweep(src / "models/fc.json", grid={"clock_mhz": [400]}, out=blocker / "sub")
