"""What a micro-batch write did, handed from the sink's commit back to the foreachBatch function.

The commit runs in a Python worker on the driver, not in the process that called `save()`, so
it leaves the report in a file on the driver's disk (written aside and renamed into place) and
the caller reads it once `save()` returns. It holds metadata only: per table the rows, files,
commit status and newest event time; per route and tally value the row counts.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class TableReport:
    status: str
    rows: int = 0
    files: int = 0
    version: int | None = None
    newest: float | None = None


@dataclass(frozen=True)
class BatchReport:
    tables: dict[str, TableReport] = field(default_factory=dict)
    """Route -> what its commit did."""
    tallies: dict[str, dict[str, int]] = field(default_factory=dict)
    """Route -> tally value -> rows (routes the plan does not name included: held-back rows)."""
    halted: bool = False
    """True when held-back rows stopped the batch: nothing was committed."""

    def rows(self, route: str) -> int:
        report = self.tables.get(route)
        return report.rows if report is not None and report.status != "empty" else 0

    def save(self, path: str) -> None:
        partial = f"{path}.partial"
        Path(partial).write_text(json.dumps(asdict(self), sort_keys=True))
        os.replace(partial, path)

    @classmethod
    def load(cls, path: str) -> "BatchReport":
        raw = json.loads(Path(path).read_text())
        return cls(
            tables={route: TableReport(**table) for route, table in raw["tables"].items()},
            tallies=raw["tallies"],
            halted=raw["halted"],
        )
