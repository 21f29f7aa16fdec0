"""Source kinds and the lag every source reports, read from progress JSON as Spark 3.5 and 4.x
write it (Kafka included: tests/monitor/fixtures/kafka_fixtures.py) and from a source nobody
knows. No JVM."""

from __future__ import annotations

import json

import pytest
from monitor_fixtures import fixture_text, recorded_sequence, replay

from streamops.monitor.fleet import Fleet
from streamops.monitor.progress_event import QueryProgress, SourceProgress
from streamops.monitor.source_backlog import SourceBacklog
from streamops.monitor.source_kinds import SOURCE_KINDS, description_label, kind_of
from streamops.monitor.source_lag import estimated_seconds, read_rate, reported_lag
from streamops.monitor.status_rules import evaluate


def progress(name: str) -> QueryProgress:
    return QueryProgress.from_json(fixture_text(name))


def raw_sources(name: str) -> list[dict]:
    return json.loads(fixture_text(name))["progress"]["sources"]


def behind(raw: dict) -> list[int]:
    """latest - end per partition, computed here from the fixture's own offsets."""
    return [
        raw["latestOffset"][topic][partition] - raw["endOffset"][topic][partition]
        for topic in raw["latestOffset"]
        for partition in raw["latestOffset"][topic]
    ]


@pytest.mark.parametrize("fixture", ["progress_kafka_spark35.json", "progress_kafka_spark4.json"])
def test_kafka_lag_is_the_sum_over_partitions_and_agrees_with_sparks_metrics(fixture):
    raw = raw_sources(fixture)[0]
    source = progress(fixture).sources[0]
    assert kind_of(source) == "kafka"
    lag = reported_lag(source)
    assert lag.offsets == sum(behind(raw)) > 0
    assert lag.max_partition_offsets == int(raw["metrics"]["maxOffsetsBehindLatest"]) == max(behind(raw))
    # Spark's average times the partitions is the same total the offsets give
    assert float(raw["metrics"]["avgOffsetsBehindLatest"]) * len(behind(raw)) == pytest.approx(lag.offsets)
    assert lag.files is None and lag.seconds is None


def test_spark35_layout_has_no_batch_duration_and_still_parses():
    raw = json.loads(fixture_text("progress_kafka_spark35.json"))["progress"]
    assert "batchDuration" not in raw
    event = progress("progress_kafka_spark35.json")
    assert event.batch_duration_ms == 0 and event.duration_ms["triggerExecution"] == 4103
    (operator,) = event.state_operators
    assert operator.operator_name == "stateStoreSave"
    assert operator.num_rows_dropped_by_watermark == raw["stateOperators"][0]["numRowsDroppedByWatermark"]
    assert event.watermark is not None and event.has_watermark


def test_a_databricks_kafka_plus_native_delta_query_reports_both_backlogs():
    raws = raw_sources("progress_kafka_spark4.json")
    kafka, delta = progress("progress_kafka_spark4.json").sources
    assert (kind_of(kafka), kind_of(delta)) == ("kafka", "delta")
    assert reported_lag(kafka).bytes == int(float(raws[0]["metrics"]["estimatedTotalBytesBehindLatest"]))
    delta_lag = reported_lag(delta)
    assert delta_lag.files == int(raws[1]["metrics"]["numFilesOutstanding"])
    assert delta_lag.bytes == int(raws[1]["metrics"]["numBytesOutstanding"])
    assert delta_lag.offsets is None
    # the table is on s3 (not measurable here): what the sources report is the backlog
    reading = SourceBacklog(None).measure("payments_with_accounts", (kafka, delta))
    assert reading.backlog is None and reading.pending is True
    kafka_lag, table_lag = reading.sources
    assert (kafka_lag.source, kafka_lag.kind, kafka_lag.offsets) == (0, "kafka", sum(behind(raws[0])))
    assert (table_lag.source, table_lag.kind, table_lag.files, table_lag.measured) == (1, "delta", 3, False)
    assert reading.offsets == kafka_lag.offsets and reading.files == 3


def test_a_source_nobody_knows_is_unknown_and_keeps_everything_it_reports():
    event = progress("progress_unknown_source.json")
    raw = json.loads(fixture_text("progress_unknown_source.json"))["progress"]
    (source,) = event.sources
    assert kind_of(source) == "unknown"
    assert description_label(source.description) == "com.example.queue.QueueMicroBatchStream"
    lag = reported_lag(source)
    assert lag.offsets == 7200 and lag.bytes == 921600  # Pub/Sub-style names, understood by name
    assert json.loads(source.metrics) == raw["sources"][0]["metrics"]  # kept whole, "mode" included
    assert event.duration_ms["commitBatch"] == 120  # a phase this version does not name
    (operator,) = event.state_operators
    assert operator.operator_name == "transformWithStateExec"
    # integer custom metrics kept, the rest skipped rather than failing the event
    assert dict(operator.custom_metrics) == {"numValueStateVars": 2, "numRegisteredTimers": 800, "numExpiredTimers": 40}
    assert json.loads(event.json)["futureTopLevelField"] == {"any": "thing"}


def test_mistyped_optional_fields_read_as_unknown_instead_of_dropping_the_event():
    raw = json.loads(fixture_text("progress_kafka_spark4.json"))
    raw["progress"]["stateOperators"][0]["numRowsTotal"] = "lots"
    raw["progress"]["sources"][0]["metrics"] = {"avgOffsetsBehindLatest": "NaN", "maxOffsetsBehindLatest": "x"}
    raw["progress"]["durationMs"]["addBatch"] = "slow"
    raw["progress"]["eventTime"]["max"] = "yesterday"
    raw["progress"]["sources"].append("not an object")
    event = QueryProgress.from_json(raw)
    assert event.state_operators[0].num_rows_total == 0
    assert "addBatch" not in event.duration_ms and "max" not in event.event_time
    assert len(event.sources) == 2
    lag = reported_lag(event.sources[0])
    assert lag.offsets == sum(behind(raw["progress"]["sources"][0]))  # the offsets still tell


@pytest.mark.parametrize(
    "description, end, kind",
    [
        ("KafkaV2[Subscribe[a, b]]", '{"a":{"0":1}}', "kafka"),
        ("KafkaSource[SubscribePattern[a.*]]", None, "kafka"),
        ("DeltaSource[file:/lake/t]", None, "delta"),
        (
            "...python.PythonMicroBatchStreamWithTriggerAvailableNow@1f",
            '{"sourceVersion":1,"reservoirId":"x","reservoirVersion":3,"index":-1,"isStartingVersion":false}',
            "delta",
        ),
        ("...python.PythonMicroBatchStream@1f", '{"position": 3}', "python"),
        ("FileStreamSource[file:/landing]", '{"logOffset":2}', "file"),
        ("CloudFilesSource[s3://bucket/in]", '{"seqNum":9,"sourceVersion":1}', "cloud_files"),
        ("KinesisV2[clicks]", None, "kinesis"),
        ("RateStreamV2[rowsPerSecond=5, rampUpTimeSeconds=0, numPartitions=default", "4", "rate"),
        (
            "RatePerMicroBatchStream[rowsPerBatch=10, numPartitions=1, startTimestamp=0, advanceMillisPerBatch=1000]",
            None,
            "rate_micro_batch",
        ),
        ("TextSocketV2[host: localhost, port: 9999]", "3", "socket"),
        ("MemoryStream[value#1]", "7", "memory"),
        ("MyConnector", '{"a":{"0":1}}', "kafka"),
        ("MyConnector", "12", "unknown"),
    ],
)
def test_every_kind_is_recognised_by_description_or_offset_shape(description, end, kind):
    assert kind in SOURCE_KINDS
    assert kind_of(SourceProgress(description, None, end, None, 0, 0.0, 0.0)) == kind


def test_kinesis_reports_time_behind_and_prefetched_bytes():
    metrics = json.dumps({"avgMsBehindLatest": "900.0", "maxMsBehindLatest": "1500", "totalPrefetchedBytes": "4096"})
    lag = reported_lag(SourceProgress("KinesisV2[clicks]", None, None, None, 0, 0.0, 0.0, metrics))
    assert (lag.seconds, lag.bytes, lag.offsets) == (1.5, 4096, None)


def test_a_kafka_stream_falling_behind_is_lagging_with_an_estimated_catch_up_time():
    name = "sequence_kafka_lagging.jsonl"
    fleet = replay(Fleet(), name)
    (view,) = fleet.snapshot().streams
    samples = view.observation.samples
    offsets = [s.offsets for s in samples]
    assert offsets == sorted(offsets) and offsets[0] > 0
    verdict = evaluate(view.observation, samples[-1].ended_at + 0.1)
    assert verdict.status == "lagging"
    assert verdict.reason == (
        f"backlog grew from {offsets[0]} to {offsets[-1]} records behind the latest offset over the last "
        f"{len(samples)} batches"
    )
    (lag,) = view.sources
    events = [e for e, _ in recorded_sequence(name) if isinstance(e, QueryProgress)]
    rows = sum(e.num_input_rows for e in events[1:])
    span = samples[-1].ended_at - samples[0].ended_at
    assert read_rate(samples, 0) == pytest.approx(rows / span)
    assert estimated_seconds(lag.offsets, read_rate(samples, 0)) == pytest.approx(lag.offsets * span / rows)
    assert estimated_seconds(0, None) == 0.0 and estimated_seconds(10, None) is None
