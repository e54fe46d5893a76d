"""Every CSV file the platform serves or writes for people to open (analytics downloads, export tables) goes through
here, so no cell is read as a formula by a spreadsheet (OWASP, CSV Injection).

Model names, domains, evaluator names and document ids come from imported files and other users: a cell starting
with `=`, `+`, `-`, `@`, a tab or a carriage return gets a leading single quote, and every text cell is wrapped in
double quotes, so a `;` or a line break inside a text cannot start a new cell in a spreadsheet that splits on it.
Numbers are left alone and unquoted, a negative score included: they stay numbers in the spreadsheet. So are texts
that are plain numbers ("-0.25"): a spreadsheet reads them as numbers, never as formulas.

Dataset files meant for import_dataset (the `redact` command's output) are not written here: they must reach the
importer exactly as they were given.
"""

import csv
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralise(value):
    """A text a spreadsheet would take for a formula, with a leading quote; any other value unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def write_rows(handle: TextIO, rows: Sequence[dict], columns: Sequence[str] | None = None) -> None:
    """Rows of dicts with the same keys; the header is `columns`, or else the first row's keys. With `columns`, a
    table with no rows is still a CSV a spreadsheet or pandas opens: its header alone."""
    if columns is None:
        if not rows:
            return
        columns = list(rows[0])
    writer = csv.writer(handle, quoting=csv.QUOTE_NONNUMERIC)
    writer.writerow([neutralise(name) for name in columns])
    writer.writerows([neutralise(row.get(name)) for name in columns] for row in rows)


def write_frame(frame: pd.DataFrame, path: Path, *, append: bool = False) -> None:
    """The frame without its index; `append` adds rows (no header) to a file this function started."""
    safe = frame.copy()
    for column in safe.columns:
        if not (pd.api.types.is_numeric_dtype(safe[column]) or pd.api.types.is_bool_dtype(safe[column])):
            safe[column] = safe[column].map(neutralise, na_action="ignore")
    safe.columns = [neutralise(str(column)) for column in safe.columns]
    safe.to_csv(path, mode="a" if append else "w", header=not append, index=False, quoting=csv.QUOTE_NONNUMERIC)
