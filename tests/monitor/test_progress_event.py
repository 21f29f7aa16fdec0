"""Listener events are parsed once from the JSON the JVM gives (recorded from real queries)."""

from __future__ import annotations

import json

import pytest
from monitor_fixtures import fixture_text

from streamops.core.delta_format.source_offsets import DeltaSourceOffset
from streamops.monitor.exceptions import ProgressEventError
from streamops.monitor.progress_event import (
    QueryIdle,
    QueryProgress,
    QueryStarted,
    QueryTerminated,
    exception_summary,
    iso_to_epoch,
    parse_event,
)


def test_delta_source_progress_keeps_offsets_and_phases():
    progress = QueryProgress.from_json(fixture_text("progress_delta.json"))
    raw = json.loads(fixture_text("progress_delta.json"))["progress"]
    assert progress.stream == "delta_stream"
    assert progress.batch_id == raw["batchId"]
    assert progress.num_input_rows == raw["numInputRows"]
    assert progress.duration_ms == raw["durationMs"]
    assert progress.timestamp == iso_to_epoch(raw["timestamp"])
    (source,) = progress.sources
    end = DeltaSourceOffset.from_json(source.end_offset)
    assert end.reservoir_id == raw["sources"][0]["endOffset"]["reservoirId"]
    assert end.reservoir_version == raw["sources"][0]["endOffset"]["reservoirVersion"]
    assert end.index == raw["sources"][0]["endOffset"]["index"]
    assert json.loads(source.latest_offset) == raw["sources"][0]["latestOffset"]
    assert progress.sink_description == "ForeachBatchSink"
    assert json.loads(progress.json) == raw


def test_file_and_rate_source_progress():
    files = QueryProgress.from_json(fixture_text("progress_file.json"))
    assert files.sources[0].description.startswith("FileStreamSource[file:")
    assert json.loads(files.sources[0].end_offset) == {"logOffset": files.batch_id}
    assert files.sources[0].latest_offset is None
    rate = QueryProgress.from_json(fixture_text("progress_rate.json"))
    assert rate.sources[0].description.startswith("RateStreamV2")
    assert rate.sources[0].end_offset == rate.sources[0].latest_offset
    assert rate.sink_description == "MemorySink"


def test_lifecycle_events():
    started = parse_event("started", fixture_text("started.json"), 1.0)
    assert isinstance(started, QueryStarted) and started.stream == "rate_stream"
    idle = parse_event("idle", fixture_text("idle.json"), 1.0)
    assert isinstance(idle, QueryIdle) and idle.timestamp > 1.7e9
    stopped = parse_event("terminated", fixture_text("terminated_stopped.json"), 123.0)
    assert isinstance(stopped, QueryTerminated)
    assert stopped.exception is None and stopped.message is None and stopped.timestamp == 123.0


def test_failed_foreach_batch_message_is_the_python_exception():
    failed = parse_event("terminated", fixture_text("terminated_exception.json"), 1.0)
    assert isinstance(failed, QueryTerminated)
    assert "Traceback" in failed.exception
    assert failed.message == "ValueError: boom at batch 1"


def test_exception_summary_skips_frames_backtraces_and_the_query_plan():
    text = (
        "[FOREACH_BATCH_USER_FUNCTION_ERROR] An error occurred. Return Message: Traceback (most recent call last):\n"
        '  File "x.py", line 1, in f\n    raise DeltaError("x")\n'
        "deltalake.DeltaError: Kernel error\n   0: <unknown>\n\n"
        "The above exception was the direct cause of the following exception:\n\n"
        'Traceback (most recent call last):\n  File "y.py", line 2, in g\n'
        "streamops.pipeline.exceptions.LakeTableError: cannot read `/lake/bronze/events`: Kernel error\n"
        "\tat org.apache.X.y(X.scala:1)\n=== Streaming Query ===\n+- ~StreamingExecutionRelation FileStreamSource"
    )
    assert (
        exception_summary(text)
        == "streamops.pipeline.exceptions.LakeTableError: cannot read `/lake/bronze/events`: Kernel error"
    )


def test_exception_summary_of_a_jvm_error_is_its_first_line():
    text = "java.lang.IllegalStateException: source table changed\n\tat org.apache.X.y(X.scala:1)"
    assert exception_summary(text) == "java.lang.IllegalStateException: source table changed"
    assert exception_summary(None) is None


def test_missing_rates_read_as_zero():
    raw = json.loads(fixture_text("progress_rate.json"))["progress"]
    del raw["inputRowsPerSecond"], raw["processedRowsPerSecond"]
    progress = QueryProgress.from_json(raw)
    assert progress.input_rows_per_second == 0.0 and progress.processed_rows_per_second == 0.0


@pytest.mark.parametrize(
    "kind, text, message",
    [
        ("progress", "{not json", "not valid JSON"),
        ("progress", '{"id": "x"}', "missing or bad"),
        ("started", "[1, 2]", "must be an object"),
        ("bogus", "{}", "unknown listener event kind"),
    ],
)
def test_bad_events_raise_a_clear_error(kind, text, message):
    with pytest.raises(ProgressEventError, match=message):
        parse_event(kind, text, 0.0)
