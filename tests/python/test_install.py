"""`cmake --install` into a fresh prefix gives an importable package that runs and sweeps with
the installed binary."""

import os
import subprocess
import sys
import textwrap

import pytest


def test_installed_package(src, tmp_path):
    build = os.environ.get("NPUSIM_BUILD_DIR")
    if not build:
        pytest.skip("NPUSIM_BUILD_DIR not set (ctest sets it)")
    prefix = tmp_path / "prefix"
    proc = subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    site = prefix / f"lib/python{sys.version_info.major}.{sys.version_info.minor}/dist-packages"
    assert (site / "npusim/__init__.py").exists()
    env = {k: v for k, v in os.environ.items() if k not in ("NPUSIM_BIN",)}
    env["PYTHONPATH"] = str(site)
    check = textwrap.dedent(f"""
        import npusim, npusim._sweep
        print(npusim.__file__)
        print(npusim._sweep.binary())
        print(npusim.run({str(src / "models/fc.json")!r}).total_cycles)
        rows = npusim.sweep({str(src / "models/fc.json")!r}, grid={{"clock_mhz": [400, 800]}})
        print(list(rows["total_cycles"]) if npusim.pandas_available() else
              [r["total_cycles"] for r in rows])
    """)
    proc = subprocess.run([sys.executable, "-c", check], env=env, cwd=tmp_path,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == str(site / "npusim/__init__.py")
    assert lines[1] == str(prefix / "bin/npusim")
    assert lines[2] == "81455"
    assert lines[3].startswith("[") and "81455" in lines[3]
