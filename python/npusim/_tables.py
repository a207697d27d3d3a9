"""Tables: pandas DataFrames when pandas is importable, else plain lists of dicts."""

from typing import Any, Dict, List, Optional, Sequence

try:
    import pandas as _pandas
except ImportError:  # pandas is optional (Debian: python3-pandas)
    _pandas = None

# npusim.use_pandas(False) gives lists of dicts even when pandas is installed.
_use_pandas = True


def use_pandas(enabled: bool = True) -> None:
    """Whether tables are DataFrames (when pandas is importable) or lists of dicts."""
    global _use_pandas
    _use_pandas = bool(enabled)


def pandas_available() -> bool:
    return _pandas is not None


def table(rows: List[Dict[str, Any]], columns: Optional[Sequence[str]] = None) -> Any:
    """``rows`` as a DataFrame (columns in ``columns`` order, else the first row's), or the list
    itself when pandas is not there or ``npusim.use_pandas(False)`` was called."""
    if _pandas is None or not _use_pandas:
        return rows
    if columns is None:
        columns = list(rows[0].keys()) if rows else []
    return _pandas.DataFrame(rows, columns=list(columns))
