"""The stream view of queries the streamops pipeline does not run: a Kafka query (Spark 4.x's
progress layout) and a windowed aggregation on RocksDB recorded from a real query. Their runs
are written to a progress log the way the monitor writes it; the page must show each source's
lag, the state and the watermark lag the log holds."""

from __future__ import annotations

import json

import pytest
from recorded_runs import write_recorded_runs
from test_console_views import frame, open_page, texts

from streamops.core.lake_layout import LakeLayout
from streamops.core.plain_text import human_seconds
from streamops.monitor.fleet_status import fleet_status


@pytest.fixture(scope="module")
def recorded_lake(tmp_path_factory) -> LakeLayout:
    lake = LakeLayout.at(tmp_path_factory.mktemp("stateful") / "lake")
    write_recorded_runs(lake)
    return lake


def test_a_kafka_stream_shows_each_sources_records_behind(console, recorded_lake):
    truth = next(row for row in fleet_status(recorded_lake) if row.stream == "orders_enriched")
    at = open_page(console, recorded_lake, "stream_view.py", stream="orders_enriched")
    sources = frame(at, "records_behind", "kind")
    assert list(sources["kind"]) == [lag.kind for lag in truth.sources]
    assert "kafka" in set(sources["kind"])
    assert list(sources["records_behind"]) == [lag.offsets for lag in truth.sources]
    assert all(offsets > 0 for offsets in sources["records_behind"])  # the recording lags
    assert set(sources["from"]) == {"reported"}
    topics = {topic for lag in truth.sources for topic, _, _ in lag.partitions}
    assert list(sources["reads"]) == [f"topic {', '.join(sorted(topics))}"], "named by what it reads, not its class"


def test_a_stateful_stream_shows_state_watermark_and_their_charts(console, recorded_lake):
    truth = next(row for row in fleet_status(recorded_lake) if row.stream == "window_rocksdb")
    assert truth.state_rows is not None and truth.watermark_lag_seconds is not None
    at = open_page(console, recorded_lake, "stream_view.py", stream="window_rocksdb")
    cards = {m.label: m.value for m in at.metric}
    assert cards["State rows"] == f"{truth.state_rows:,}"
    assert cards["Watermark lag"] == human_seconds(truth.watermark_lag_seconds)
    assert "Rows/s in" in cards and "Rows/s out" in cards
    charts = [json.loads(c.proto.spec)["title"] for c in at.get("vega_lite_chart")]
    assert "State rows after each batch" in charts and "Watermark lag (s)" in charts
    sources = frame(at, "reads", "kind")
    assert sources["kind"].tolist() == ["rate"] and sources["reads"].tolist() == ["generated rows, 20 rows/s"]
    assert "records_behind" not in sources.columns, "a rate source has no records behind: the column is left out"
    page = texts(at)
    for warning in truth.warnings:
        assert f":orange[**{warning.code.upper()}**]" in page
