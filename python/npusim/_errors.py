"""The exceptions npusim raises: the CLI's errors, with the same messages.

Each carries ``exit_code``, the code ``npusim`` exits with for the same error (docs/cli.md).
"""

from typing import List, NamedTuple, Optional, Sequence


class Problem(NamedTuple):
    """One problem in an input: the file (or option), where in it, and what was wrong."""

    file: str
    pointer: str  # a JSON pointer such as /commands/17/deps/0, "row 12", or ""
    message: str


class Error(Exception):
    """Base class of every npusim error."""

    exit_code = 4


class InputError(Error, ValueError):
    """Bad input (exit code 2): a model, config, override or option that is malformed or
    inconsistent. ``str(e)`` is the CLI's message, one line per problem; ``problems`` lists them,
    and ``file`` and ``pointer`` are the first problem's."""

    exit_code = 2

    def __init__(self, message: str, problems: Sequence[Sequence[str]] = ()):
        super().__init__(message)
        self.message = message
        self.problems: List[Problem] = [Problem(*p) for p in problems]

    @property
    def file(self) -> str:
        return self.problems[0].file if self.problems else ""

    @property
    def pointer(self) -> str:
        return self.problems[0].pointer if self.problems else ""


class OutputError(Error, OSError):
    """An output folder or file that cannot be written (exit code 2)."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SimulationError(Error, RuntimeError):
    """The run could not complete (exit code 3): a deadlock, local memory exceeded. ``stage`` is
    "estimate" or "simulation"; ``result`` holds what finished (a Result with
    ``complete == False``) when there is one."""

    exit_code = 3

    def __init__(self, message: str, stage: str = "simulation", result: Optional[object] = None):
        super().__init__(message)
        self.message = message
        self.stage = stage
        self.result = result


class InternalError(Error, RuntimeError):
    """A bug in npusim, or a simulation child process that died (exit code 4)."""

    exit_code = 4

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message
