"""What a micro-batch write did: the files Spark's tasks wrote, handed from the sink's commit to
the driver, and the report of what the driver then committed.

The sink's `commit()` runs in a Python worker on the driver, not in the process that called
`save()`, so it leaves a `WrittenBatch` in a file on the driver's disk (written aside and renamed
into place) and the caller reads it once `save()` returns. It is metadata only: per table the
files (paths, sizes, statistics), per route and tally value the row counts, and the first rows
the plan asked for (a value per key). The driver commits the files and keeps a `BatchReport`.
"""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from streamops.pipeline.delta_connector.data_files import DataFile

FirstRow = tuple[tuple[Any, ...], bytes | str | None]
"""(rank, value): the rank is the row's order columns, the least rank is the first row."""
FirstRowsFound = dict[tuple[Any, ...], FirstRow]
"""Key (the values of the plan's key columns) -> its first row."""


@dataclass(frozen=True)
class TableReport:
    status: str
    rows: int = 0
    files: int = 0
    newest: float | None = None
    version: int | None = None
    """The table version that holds the batch, when the plan asked for it (`report_version`)."""


@dataclass(frozen=True)
class BatchReport:
    tables: dict[str, TableReport] = field(default_factory=dict)
    """Route -> what its commit did."""
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    """Route -> tally value -> rows (routes the plan does not name included: held-back rows)."""
    halted: bool = False
    """True when held-back rows stopped the batch: nothing was committed."""
    item_tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    """Route -> tally item -> rows carrying it (write_plan.TALLY_ITEMS_COLUMN)."""

    def rows(self, route: str) -> int:
        report = self.tables.get(route)
        return report.rows if report is not None and report.status != "empty" else 0


@dataclass
class WrittenBatch:
    files: dict[str, list[DataFile]] = field(default_factory=dict)
    """Route -> the files its table got from every task."""
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    first_rows: FirstRowsFound = field(default_factory=dict)
    """Key -> its first row, over every task."""
    item_tallies: dict[str, dict[str, int]] = field(default_factory=dict)

    def add(
        self,
        files: list[DataFile],
        route_of: Callable[[DataFile], str],
        tallies: dict[str, dict[str, int]],
        first_rows: FirstRowsFound,
        item_tallies: dict[str, dict[str, int]],
    ) -> None:
        """Fold one task's commit message in."""
        for data_file in files:
            self.files.setdefault(route_of(data_file), []).append(data_file)
        add_counts(self.tallies, tallies)
        add_counts(self.item_tallies, item_tallies)
        merge_first_rows(self.first_rows, first_rows)

    def all_files(self) -> list[DataFile]:
        return [f for routed in self.files.values() for f in routed]

    def save(self, path: str) -> None:
        partial = f"{path}.partial"
        Path(partial).write_bytes(pickle.dumps(self))
        os.replace(partial, path)

    @classmethod
    def load(cls, path: str) -> WrittenBatch:
        written = pickle.loads(Path(path).read_bytes())
        if not isinstance(written, cls):
            raise TypeError(f"`{path}` does not hold a written batch")
        return written


def add_counts(into: dict[str, dict[str, int]], more: dict[str, dict[str, int]]) -> None:
    """Route -> value -> rows, summed."""
    for route, counts in more.items():
        mine = into.setdefault(route, {})
        for value, rows in counts.items():
            mine[value] = mine.get(value, 0) + rows


def merge_first_rows(into: FirstRowsFound, more: FirstRowsFound) -> None:
    """Keep, per key, the row of least rank (ranks are never null: they order landing lines)."""
    for key, (rank, value) in more.items():
        if key not in into or rank < into[key][0]:
            into[key] = (rank, value)
