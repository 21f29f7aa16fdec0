"""Recorded listener events (tests/monitor/fixtures), a replayer that feeds them to a Fleet, and
helpers for the tests that run real queries.

Re-record with `python tests/monitor/fixtures/record_fixtures.py`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pyarrow as pa
from deltalake import write_deltalake

from streamops.core.delta_format.backlog import Backlog
from streamops.core.extras import MissingExtraError
from streamops.monitor.fleet import Fleet
from streamops.monitor.progress_event import MonitorEvent, QueryProgress, parse_event
from streamops.monitor.source_backlog import BacklogReading, SourceBacklog
from streamops.monitor.source_lag import source_lag

FIXTURES = Path(__file__).parent / "fixtures"


def fixture_text(name: str) -> str:
    return (FIXTURES / name).read_text()


def recorded_sequence(name: str) -> Iterator[tuple[MonitorEvent, BacklogReading | None]]:
    """Each recorded event with the backlog behind it: as measured right after it when the
    recording has that (its one source's table, gone since), else what the monitor reads from
    the progress itself (what sources report about their own lag)."""
    for line in (FIXTURES / name).read_text().splitlines():
        entry: dict[str, Any] = json.loads(line)
        event = parse_event(entry["kind"], json.dumps(entry["json"]), entry["received_at"])
        backlog = entry.get("backlog")
        reading = None
        if backlog is not None:
            measured = Backlog(**backlog)
            (source,) = event.sources  # type: ignore[union-attr]
            lag = source_lag(0, source, measured, None)
            reading = BacklogReading(measured, not measured.is_empty, entry["received_at"], (lag,))
        elif isinstance(event, QueryProgress):
            reading = SourceBacklog(None, clock=lambda: entry["received_at"]).measure(event.stream, event.sources)
        yield event, reading


def observed_progress(
    observed: dict[str, Any] | None, batch_id: int = 3, run_id: str | None = None, name: str = "progress_rate.json"
) -> QueryProgress:
    """A recorded progress event as it would be with `observed` as its `observedMetrics` (None:
    without the key, as Spark writes a batch that reported no observation)."""
    data = json.loads(fixture_text(name))["progress"]
    data["batchId"] = batch_id
    if run_id is not None:
        data["runId"] = run_id
    if observed is not None:
        data["observedMetrics"] = observed
    return QueryProgress.from_json(json.dumps(data))


def replay(fleet: Fleet, name: str, until_batch: int | None = None, skip_terminated: bool = False) -> Fleet:
    """Apply a recorded run to `fleet`, optionally stopping after batch `until_batch`."""
    for event, reading in recorded_sequence(name):
        if skip_terminated and event.kind == "terminated":
            continue
        if until_batch is not None and event.kind == "progress" and event.batch_id > until_batch:  # type: ignore[union-attr]
            break
        fleet.apply(event, reading)
    return fleet


def append(table: Path, start: int, rows: int = 10) -> None:
    write_deltalake(str(table), pa.table({"id": list(range(start, start + rows))}), mode="append")


def delta_formats() -> tuple[str, ...]:
    """The Delta streaming sources these tests read with: delta-spark's own, and the pipeline's
    embedded one where the pipeline runs (PySpark 4; the monitor's tests run on 3.5 too)."""
    try:
        import streamops.pipeline.delta_connector.delta_source  # noqa: F401
    except MissingExtraError:
        return ("delta",)
    return ("streamops_delta", "delta")


def delta_format() -> str:
    """The one source tests that need only one read with: the first of `delta_formats`."""
    return delta_formats()[0]


def delta_stream(spark, table: Path, max_files: int | None = 1, source_format: str | None = None):
    reader = spark.readStream.format(source_format or delta_format()).option("path", str(table))
    if max_files is not None:
        reader = reader.option("maxFilesPerTrigger", max_files)
    return reader.load()


def rows_read(query) -> int:
    return sum(p["numInputRows"] for p in query.recentProgress)


def held_file_stream(spark, landing: Path, name: str, checkpoint: Path, gate):
    """A JSON file-source query taking one file per trigger whose batch 1 waits for `gate`: what
    batch 0 left behind stays waiting, whatever the machine's speed."""

    def held(df, batch_id):
        df.count()
        if batch_id == 1:
            gate.wait(60)

    return (
        spark.readStream.format("json")
        .schema("x int")
        .option("maxFilesPerTrigger", 1)
        .load(str(landing))
        .writeStream.foreachBatch(held)
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0.1 seconds")
        .start()
    )
