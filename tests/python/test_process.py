"""Many simulations in one Python process: each runs in a forked child (SystemC elaborates once
per process), from any thread, with the GIL released while C++ works."""

import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import npusim


def test_two_runs_in_one_process(src):
    fc = src / "models/fc.json"
    conv = src / "models/convnet.json"
    first = npusim.run(fc)
    second = npusim.run(conv)
    third = npusim.run(fc)
    assert first.total_cycles == third.total_cycles == 81455
    assert first.stats == third.stats
    assert second.total_cycles != first.total_cycles


def test_runs_from_threads_equal_sequential_runs(src):
    models = [src / "models/fc.json", src / "models/convnet.json",
              src / "models/zoo/mobilenetv2.json"] * 2
    sequential = [npusim.run(m).stats for m in models]
    with ThreadPoolExecutor(max_workers=3) as pool:
        threaded = list(pool.map(lambda m: npusim.run(m).stats, models))
    assert threaded == sequential


def test_the_gil_is_released_while_simulating(src):
    """A Python thread keeps running while another thread compiles and simulates ResNet-50: the
    longest pause it sees is a small part of the run. Holding the GIL would pause it for all."""
    ticks = []
    done = threading.Event()

    def spin():
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        t0 = time.perf_counter()
        r = npusim.run(src / "models/zoo/resnet50.json", "default")
        elapsed = time.perf_counter() - t0
    finally:
        done.set()
        spinner.join()
    assert r.total_cycles > 0
    inside = [t for t in ticks if t0 <= t <= t0 + elapsed]
    gaps = [b - a for a, b in zip([t0] + inside, inside + [t0 + elapsed])]
    assert elapsed > 0.2, "the run is too short to tell"
    assert max(gaps) < elapsed / 2, (max(gaps), elapsed)


def test_children_leave_the_parent_alone(src, tmp_path):
    """A forked child ends with _exit: no atexit handler, no flushed Python buffers of the
    parent run twice; every simulation is reaped."""
    script = tmp_path / "s.py"
    script.write_text(textwrap.dedent(f"""
        import atexit, os, sys
        import npusim
        atexit.register(lambda: print("atexit", os.getpid()))
        sys.stdout.write("buffered ")  # still in the parent's buffer when the child forks
        for _ in range(3):
            npusim.run({str(src / "models/fc.json")!r})
        print(npusim.run({str(src / "models/fc.json")!r}).total_cycles)
        try:
            os.waitpid(-1, os.WNOHANG)
            print("a child is left")
        except ChildProcessError:
            print("no child left")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "buffered 81455"
    assert lines[1] == "no child left"
    assert len(lines) == 3 and lines[2].startswith("atexit ")
    assert proc.stderr == ""


def test_simulating_many_times(src):
    totals = {npusim.run(src / "models/fc.json").total_cycles for _ in range(20)}
    assert totals == {81455}
