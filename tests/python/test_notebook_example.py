"""scripts/notebook_example.py runs headless and writes a plot of a real sweep."""

import os
import subprocess
import sys

import npusim


def test_notebook_example_writes_the_png(src, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "MPLBACKEND")}
    out = tmp_path / "nb"
    proc = subprocess.run([sys.executable, str(src / "scripts/notebook_example.py"), "--out",
                           str(out), "--jobs", "2"], env=env, capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    png = out / "sweep_latency.png"
    assert lines[-1] == str(png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000

    import matplotlib.image
    pixels = matplotlib.image.imread(str(png))
    assert pixels.shape[0] > 200 and pixels.shape[1] > 300
    assert pixels[..., :3].std() > 0.05  # something is drawn

    # The printed table holds the sweep's figures: the default config's own point (800 MHz,
    # 2 slices) is what run() gives.
    r = npusim.run(src / "models/zoo/mobilenetv2.json", "default")
    rows = [ln.split() for ln in lines if ln.split()[:2] == ["800", "2"]]
    assert len(rows) == 1 and float(rows[0][2]) == round(r.time_us, 1)
    assert sum(1 for ln in lines if len(ln.split()) == 4 and ln.split()[0].isdigit()) == 12
