"""Shared fixtures of the Python tests. ctest runs them with PYTHONPATH at the build tree's
package and NPUSIM_BIN / NPUSIM_SOURCE_DIR set (tests/python/CMakeLists.txt)."""

import json
import os
import subprocess
from pathlib import Path

import pytest

SOURCE_DIR = Path(os.environ.get("NPUSIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))
BINARY = os.environ.get("NPUSIM_BIN", str(SOURCE_DIR / "build" / "npusim"))


class Cli:
    """The npusim binary, run as a user would, for the figures the module must equal."""

    binary = BINARY

    def __call__(self, *args, cwd=None):
        proc = subprocess.run([BINARY, *map(str, args)], cwd=cwd, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, check=False)
        return proc

    def stats(self, command, model, config, out, *extra):
        """`npusim run|estimate MODEL -c CONFIG --out OUT --stats-level 100 EXTRA`: stats.json."""
        proc = self(command, model, "-c", config, "--out", out, "--stats-level", "100",
                    "--quiet", *extra)
        assert proc.returncode == 0, proc.stderr
        with open(Path(out) / "stats.json", encoding="utf-8") as f:
            return json.load(f)

    def error(self, *args):
        """The message the CLI prints for a failing command, without its "npusim: error: "."""
        proc = self(*args)
        assert proc.returncode != 0, proc.stdout
        lines = proc.stderr.rstrip("\n")
        for prefix in ("npusim: error: ", "npusim: simulation failed: ",
                       "npusim: estimate failed: "):
            if lines.startswith(prefix):
                return proc.returncode, lines[len(prefix):]
        raise AssertionError(f"unexpected stderr: {proc.stderr}")


@pytest.fixture(scope="session")
def cli():
    assert os.access(BINARY, os.X_OK), f"no npusim binary at {BINARY}"
    return Cli()


@pytest.fixture(scope="session")
def src():
    return SOURCE_DIR


@pytest.fixture(autouse=True)
def in_tmp_cwd(tmp_path, monkeypatch):
    """Each test runs in an empty folder, so a file written where none was asked for shows."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
