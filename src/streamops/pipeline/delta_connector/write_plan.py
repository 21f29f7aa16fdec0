"""What one micro-batch write must do, as data the driver hands to Spark's tasks and to the
commit: which tables the rows go to, how a row becomes a table row, and the batch identity
every commit carries.

PySpark builds a Python data source writer from string options only, and runs `write()` on
executors and `commit()` in a separate Python worker on the driver: neither sees the
foreachBatch process's objects. So the plan travels as one JSON option and each side rebuilds
it. A row's table is its `_route` column; a route the plan does not name is held back
(counted, never written), which is how a batch that must stop (fail_group) writes nothing.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

import pyarrow as pa

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.pipeline.exceptions import PipelineConfigError

ROUTE_COLUMN = "_route"
TALLY_COLUMN = "_tally"
"""Optional column: rows are counted per (route, value) for the batch report (reasons, variations)."""
TALLY_ITEMS_COLUMN = "_tally_items"
"""Optional array<string> column: each of a row's items counts one per (route, item), so one row
can be counted under several values (the rules it failed) in the same pass that writes it."""
TEXT_SUFFIX = ":text"
"""A column mapping `source:text` decodes a binary source column as UTF-8, invalid bytes replaced."""
BYTES_SUFFIX = ":bytes"
"""A column mapping `source:bytes` takes a string source column's UTF-8 bytes."""
STREAM_VALUE = "@stream"
BATCH_ID_VALUE = "@batch_id"
INGEST_TIME_VALUE = "@ingest_time"
"""Column sources the sink fills from the plan, one value in every row of the batch. Per-batch
values stay out of Spark's expressions: Spark compiles a numeric or time literal into the
generated code, so a batch id there made every batch new code for Janino and the JIT to
compile (BENCHMARKS.md, "Generated code compiled once")."""

RowsKind = Literal["columns", "typed_json"]


@dataclass(frozen=True)
class TableTarget:
    """One table of the batch. `columns` maps table column -> source column ("columns" rows);
    "typed_json" rows parse `payload_column` (JSON Spark wrote with `schema`, a Spark StructType
    JSON) into flat columns, then append `columns`."""

    path: str
    rows: RowsKind = "columns"
    columns: dict[str, str] = field(default_factory=dict)
    schema: dict[str, Any] | None = None
    payload_column: str | None = None
    reject_route: str | None = None
    """typed_json: where rows whose payload does not parse go (a "columns" route)."""
    time_column: str | None = None
    """Table column whose newest value the report gives (event-time freshness)."""
    report_version: bool = False
    """Whether the report gives the table version holding the batch (free from delta-rs' commit;
    natively one read of the table's newest commit)."""
    files_in_checksum: bool = False
    """Native commits: whether delta-spark keeps the table's file list in each commit's checksum
    (native_commit.FILES_IN_CHECKSUM), for a table a Spark query of the run reads whole every
    batch. A table takes one choice for good."""


@dataclass(frozen=True)
class FirstRows:
    """Rows whose first occurrence per key the write reports back (value and rank only): bronze
    learns each new schema variation's first line in the same pass that writes the batch.
    Candidates are the rows whose `flag_column` is true; "first" is the least `order_columns`."""

    flag_column: str
    key_columns: tuple[str, ...]
    order_columns: tuple[str, ...]
    value_column: str


@dataclass(frozen=True)
class WritePlan:
    commit: BatchCommitInfo
    tables: dict[str, TableTarget]
    commit_stages: tuple[tuple[str, ...], ...]
    """Routes in the order their commits are made, stage by stage (a silver group's quarantine
    before its tables); the routes of one stage are independent tables, committed at the same
    time."""
    report_path: str
    halt_on_held_rows: bool = False
    """True: if any row was held back, nothing is committed (the attempt's files are deleted)."""
    first_rows: FirstRows | None = None
    ingest_time_us: int | None = None
    """INGEST_TIME_VALUE, in microseconds since the epoch (UTC)."""

    def batch_value(self, source: str) -> pa.Scalar | None:
        """What a batch-value source stands for; None for a column of the rows."""
        if source == STREAM_VALUE:
            return pa.scalar(self.commit.stream, pa.string())
        if source == BATCH_ID_VALUE:
            return pa.scalar(self.commit.batch_id, pa.int64())
        if source != INGEST_TIME_VALUE:
            return None
        if self.ingest_time_us is None:
            raise PipelineConfigError(f"a table column takes {INGEST_TIME_VALUE} and the write plan has no ingest time")
        return pa.scalar(self.ingest_time_us, pa.timestamp("us", tz="UTC"))

    def to_json(self) -> str:
        """`vars`, not `asdict`, for the tables: asdict deep-copies every schema first, and a
        silver plan's 64 schemas made that 4 % of the driver's time under load (py-spy)."""
        return json.dumps(
            {
                "commit": asdict(self.commit),
                "tables": {route: vars(target) for route, target in self.tables.items()},
                "commit_stages": [list(stage) for stage in self.commit_stages],
                "report_path": self.report_path,
                "halt_on_held_rows": self.halt_on_held_rows,
                "first_rows": asdict(self.first_rows) if self.first_rows else None,
                "ingest_time_us": self.ingest_time_us,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> WritePlan:
        raw = json.loads(text)
        return cls(
            commit=BatchCommitInfo(**raw["commit"]),
            tables={route: TableTarget(**target) for route, target in raw["tables"].items()},
            commit_stages=tuple(tuple(stage) for stage in raw["commit_stages"]),
            report_path=raw["report_path"],
            halt_on_held_rows=raw["halt_on_held_rows"],
            first_rows=FirstRows(**{k: tuple(v) if isinstance(v, list) else v for k, v in raw["first_rows"].items()})
            if raw.get("first_rows")
            else None,
            ingest_time_us=raw.get("ingest_time_us"),
        )
