"""npusim from Python: compile, estimate and simulate NPU workloads, and sweep configs.

    import npusim
    r = npusim.run("models/fc.json", "default")
    r.total_cycles        # 81455
    r.ops                 # one row per command (a DataFrame when pandas is installed)

docs/python.md is the guide. Everything runs in this process through npusim's library, except
the SystemC simulation, which runs in a forked child each time (so any number of runs per
process work), and sweeps, which run `npusim sweep` (one process per point).
"""

from ._config import Config, builtin_configs, load_config
from ._errors import Error, InputError, InternalError, OutputError, Problem, SimulationError
from ._npusim import set_log_level
from ._result import Result, Timeline
from ._run import compile, estimate, run
from ._schedule import Command, Schedule
from ._sweep import sweep
from ._tables import pandas_available, use_pandas

__version__ = "0.1.0"

__all__ = [
    "Command", "Config", "Error", "InputError", "InternalError", "OutputError", "Problem",
    "Result", "Schedule", "SimulationError", "Timeline", "builtin_configs", "compile", "estimate",
    "load_config", "pandas_available", "run", "set_log_level", "sweep", "use_pandas",
]
