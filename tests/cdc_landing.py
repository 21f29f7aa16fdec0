"""Debezium change events recorded from a real PostgreSQL (pipeline/fixtures/debezium/), landed as
files, the tables they must become, and the pipeline run over them: for the CDC tests that run
the pipeline on landing files (and the console's, which read the lake such a run wrote).

The recordings are what Debezium 3.6.1's PostgreSQL connector wrote to Kafka for one session of
changes (tests/debezium_connect.py with tests/postgres_server.py), with Kafka Connect's
`schema`/`payload` wrapper (`postgres-wrapped.jsonl`) and without it (`postgres-plain.jsonl`):
one JSON object per record with its topic, partition, offset, key and value (null: a tombstone).
The session: a snapshot of three tables, inserts, updates (one in a transaction that also inserts
and deletes a row), an update of a primary key, deletes, a column added, a TRUNCATE and a column
whose type changed from integer to text; `notes` has no primary key (REPLICA IDENTITY FULL).
"""

from __future__ import annotations

import json
from dataclasses import astuple
from pathlib import Path

from streamops.checkpoint_tools.correlation import correlate
from streamops.checkpoint_tools.doctor import checkpoint_targets, diagnose
from streamops.checkpoint_tools.doctor_context import DoctorSettings
from streamops.checkpoint_tools.text_report import correlation_text
from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.location import Location
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.cdc.debezium_mode import DebeziumChanges
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.run.supervisor import PipelineSettings, RunReport, Supervisor
from streamops.pipeline.silver.silver_stream import SilverSettings

FIXTURES = Path(__file__).parent / "pipeline" / "fixtures" / "debezium"
RECORDINGS = ("postgres-wrapped.jsonl", "postgres-plain.jsonl")
KEYS = {"public.customers": ("id",), "public.order_lines": ("order_id", "line"), "public.notes": ("author",)}
"""The keys a landing file cannot carry (it holds values only): declared as --cdc-keys would."""
DATABASE = {
    "public.customers": {
        (1, "Ada Lovelace", "ada@example.com", True, 10.5, "silver"),
        (5, "Eve", None, False, 2.5, "gold"),
        (30, "Cy", "cy@example.com", None, 3.25, None),
    },
    "public.order_lines": {(102, 1, 1, "3.00"), (103, 1, None, "4.00")},
    "public.notes": {("hi", "ada")},
}
"""The tables as `psql` showed them when the recording ended (order_lines.qty 'seven' is text
in the database, and in silver `_rescued_data`: the column stayed a number)."""
COLUMNS = {
    "public.customers": ("id", "name", "email", "vip", "balance", "tier"),
    "public.order_lines": ("order_id", "line", "qty", "price"),
    "public.notes": ("body", "author"),
}


def recorded(name: str) -> list[dict]:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line]


def values(records: list[dict]) -> list[str]:
    """The records' values in order, tombstones left out (a landing line cannot be null)."""
    return [r["value"] for r in records if r["value"] is not None]


def land(landing: Path, name: str, lines: list[str]) -> None:
    """Written aside under a hidden name, then renamed into place: Spark never sees half a file."""
    landing.mkdir(parents=True, exist_ok=True)
    temporary = landing / f".{name}.tmp"
    temporary.write_text("".join(line + "\n" for line in lines))
    temporary.rename(landing / name)


def current_rows(lake: LakeLayout, table: str, columns: tuple[str, ...] | None = None) -> set[tuple]:
    """The silver table's rows as tuples of `columns` (default: the source table's)."""
    location = lake.silver(table)
    if not is_table(location):
        return set()
    wanted = list(columns or COLUMNS[table])
    return {tuple(row[c] for c in wanted) for row in read_delta(location, columns=wanted).to_pylist()}


def drain(
    spark,
    lake: LakeLayout,
    landing: Path,
    connector,
    history: bool = False,
    keys=KEYS,
    files: int = 2,
    sequences: dict[str, str] | None = None,
) -> RunReport:
    """Everything landed, through bronze and silver, `files` landing (then bronze) files a batch."""
    settings = PipelineSettings(
        lake=lake,
        input=LandingInput(Location.local(landing), max_files_per_trigger=files),
        trigger_seconds=1.0,
        silver=SilverSettings(max_files_per_trigger=files, types_per_group=2),
        mode=DebeziumChanges(CdcSettings(keys=keys, sequences=sequences or {}, history=history)),
    )
    report = Supervisor(spark, settings, connector, Unmonitored(), log=lambda line: None).run_until_idle()
    assert report.failures == {}
    return report


def assert_batches_tie_to_their_merges(lake: LakeLayout) -> None:
    """`checkpoint correlate` ties each CDC batch to its MERGE commits by txn identity, with the
    rows each inserted, updated and deleted (not the rows of the files it rewrote), as
    `_system/cdc_applies` records them; the doctor finds nothing wrong with a batch that writes
    several tables."""
    applies = read_delta(lake.cdc_applies).to_pylist()
    assert {a["table"] for a in applies} == set(DATABASE)
    merges = 0
    for stream in sorted({a["stream"] for a in applies}):
        correlation = correlate(lake.checkpoint(stream), lake=lake)
        assert {
            str(lake.silver(t)) for t in DATABASE if any(a["stream"] == stream and a["table"] == t for a in applies)
        } <= {str(t) for t in correlation.sink_tables}
        by_batch = {b.batch.batch_id: b for b in correlation.batches}
        for apply in (a for a in applies if a["stream"] == stream):
            commits = [c for c in by_batch[apply["batch_id"]].sink_commits if c.table == lake.silver(apply["table"])]
            changed = (apply["inserted"], apply["updated"], apply["deleted"])
            if not any(changed):  # a MERGE that changed nothing: delta-rs makes no commit, delta-spark an empty one
                assert all(astuple(c.changes) == (0, 0, 0) for c in commits), (apply, commits)
                continue
            assert len(commits) == 1, (apply, commits)
            [merge] = commits
            assert merge.version == apply["silver_version"] and merge.matched_by == "txn"
            assert merge.operation == "MERGE" and merge.rows is None
            assert astuple(merge.changes) == changed, (apply, merge)
            merges += 1
        text = correlation_text(correlation)
        assert "(MERGE +" in text and "(None)" not in text
        [target] = checkpoint_targets([lake.checkpoint(stream)], lake=lake)
        diagnosis = diagnose(target, DoctorSettings())
        assert [f.code for f in diagnosis.findings if f.severity == "error"] == [], diagnosis.findings
    assert merges >= len(DATABASE)
