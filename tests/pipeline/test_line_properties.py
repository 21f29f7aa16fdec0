"""Property tests: whatever bytes land, the two classifiers agree, and every line bronze accepts
is read by every later stage (the registry, Spark's inference, the silver parse, the writers).

Seeded and bounded (`derandomize`), so CI runs the same examples every time."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from hostile_lines import hostile_lines, landing_lines
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.bronze_classifier import judge_line, strip_bom
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.records.record_rules import MAX_DEPTH, MAX_RECORD_BYTES, QUARANTINE_REASONS
from streamops.pipeline.records.strict_json import loads
from streamops.pipeline.registry.schema_registry import NewVariation, SchemaRegistry
from streamops.pipeline.registry.schema_variation import variation_paths
from streamops.pipeline.registry.silver_schemas import silver_schemas
from streamops.pipeline.silver.silver_stream import SilverGroupWriter, SilverSettings

FIELDS = ("event_type", "event_id", "event_time_text", "schema_hash", "quarantine_reason")
PROPERTY_SETTINGS = settings(
    max_examples=60,
    derandomize=True,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def jvm_classifier(spark):
    return spark.sparkContext._jvm.streamops.jvm.BronzeLineClassifier()


def jvm_verdict(classifier, line: bytes) -> dict:
    row = classifier.call(bytearray(strip_bom(line)), MAX_RECORD_BYTES, MAX_DEPTH)
    return dict(zip(FIELDS, (row.get(i) for i in range(len(FIELDS)))))


def python_verdict(line: bytes) -> dict:
    verdict = judge_line(line)
    values = (verdict.event_type, verdict.event_id, verdict.event_time, verdict.schema_hash, verdict.reason)
    return dict(zip(FIELDS, values))


@PROPERTY_SETTINGS
@given(lines=st.lists(hostile_lines, min_size=1, max_size=30))
def test_the_jvm_and_python_classifiers_agree_on_every_line(jvm_classifier, lines):
    for line in lines:
        python = python_verdict(line)
        assert jvm_verdict(jvm_classifier, line) == python, line
        assert python["quarantine_reason"] in (None, *QUARANTINE_REASONS)
        assert python["quarantine_reason"] != "unprocessable", line


@settings(PROPERTY_SETTINGS, max_examples=12)
@given(lines=st.lists(landing_lines, min_size=5, max_size=40))
def test_every_accepted_line_reaches_silver_or_is_quarantined_with_a_reason(spark, tmp_path_factory, lines):
    accepted = [v for v in map(judge_line, lines) if v.reason is None]
    for verdict in accepted:
        variation_paths(loads(verdict.payload.decode("utf-8")))
    lake = LakeLayout.at(tmp_path_factory.mktemp("lake"))
    registry = SchemaRegistry.load(lake.schema_registry)
    commit = BatchCommitInfo(stream="bronze", batch_id=0)
    first = {}
    for verdict in accepted:
        first.setdefault((verdict.event_type, verdict.schema_hash), verdict.payload.decode("utf-8"))
    new = [NewVariation(t, h, p) for (t, h), p in first.items()]
    registration = registry.register(spark, EmbeddedDelta(), new, 0, commit)
    assert registration.rejected == {}
    if not accepted:
        return
    schemas = silver_schemas(registry, sorted({v.event_type for v in accepted}))
    now = datetime.now(timezone.utc)
    bronze = spark.createDataFrame(
        pa.table(
            {
                "event_type": [v.event_type for v in accepted],
                "payload": [v.payload.decode("utf-8") for v in accepted],
                "event_time": pa.array([now] * len(accepted), pa.timestamp("us", tz="UTC")),
                "ingest_time": pa.array([now] * len(accepted), pa.timestamp("us", tz="UTC")),
                "source_file": ["f"] * len(accepted),
                "batch_id": [0] * len(accepted),
                "schema_hash": [v.schema_hash for v in accepted],
            }
        )
    )
    writer = SilverGroupWriter(lake, EmbeddedDelta(), "g0001", SilverSettings(), Unmonitored())
    result = writer.write(bronze, schemas, BatchCommitInfo(stream="silver_g0001", batch_id=0))
    assert result.quarantined == {}, "unfit fields are rescued, nothing is unprocessable"
    assert result.rows_by_type == dict(Counter(v.event_type for v in accepted))
    unfit = Counter(v.event_type for v in accepted if v.schema_hash in schemas[v.event_type].unfit)
    assert sum(
        a.rows_affected
        for a in result.alerts
        if a.field == min(c.path for c in schemas[a.event_type].unfit[a.variation_hash])
    ) == sum(unfit.values())
