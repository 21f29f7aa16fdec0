"""The observed metrics of any query (`df.observe(name, ...)` in the user's code): numbers and
booleans become `streamops_stream_observed_metric` gauges, and every value is kept in the
progress log."""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from monitor_fixtures import observed_progress, rows_read
from prometheus_client import CollectorRegistry
from prometheus_client.parser import text_string_to_metric_families
from pyspark.sql import functions as F
from waiting import wait_until

from streamops.monitor import metric_catalog as catalog
from streamops.monitor.exporter import FleetCollector
from streamops.monitor.fleet import Fleet
from streamops.monitor.progress_event import observed_value
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of
from streamops.monitor.stream_monitor import StreamMonitor

OBSERVED = catalog.OBSERVED_METRIC.name
BIG_DECIMAL = 50_000_000_000_000_000_000_000_000_000
"""A DECIMAL(38,0) sum: Spark writes it as a JSON integer wider than 64 bits."""


def observed_gauges(families, stream: str) -> dict[tuple[str, str], float]:
    """The stream's observed-metric samples of a scrape, by (observation, metric)."""
    return {
        (sample.labels["observation"], sample.labels["metric"]): sample.value
        for family in families
        if family.name == OBSERVED
        for sample in family.samples
        if sample.labels["stream"] == stream
    }


def scrape(fleet: Fleet) -> dict[tuple[str, str], float]:
    registry = CollectorRegistry()
    registry.register(FleetCollector(fleet))
    return observed_gauges(registry.collect(), "rate_stream")


@pytest.mark.parametrize(
    ("value", "gauge"),
    [(7, 7.0), (0.25, 0.25), (True, 1.0), (False, 0.0), (BIG_DECIMAL, float(BIG_DECIMAL))]
    + [(v, None) for v in (None, "abc", "2026-11-28 01:19:38", "NaN", "Infinity", {"a": 1}, [1, 2])],
)
def test_which_values_a_gauge_holds(value, gauge):
    assert observed_value(value) == gauge


def test_numbers_and_booleans_are_gauges_and_every_value_stays_in_the_log(lake):
    observed = {
        "quality": {
            "rows": 10,
            "bad": 3,
            "ratio": 0.3,
            "all_valid": False,
            "any_bad": True,
            "empty": None,
            "last_name": "abc",
            "newest": "2026-11-28 01:19:38",
            "mean": "NaN",
            "nested": {"a": 1},
            "total": BIG_DECIMAL,
        },
        "labels_only": {"source": "s3"},
    }
    event = observed_progress(observed)
    fleet = Fleet()
    fleet.apply(event)
    assert scrape(fleet) == {
        ("quality", "rows"): 10,
        ("quality", "bad"): 3,
        ("quality", "ratio"): 0.3,
        ("quality", "all_valid"): 0,
        ("quality", "any_bad"): 1,
        ("quality", "total"): float(BIG_DECIMAL),
    }

    log = ProgressLog(lake.query_progress)
    log.append([row_of(event, event.stream, time.time())])
    (logged,) = log.read(columns=["observed_metrics"]).to_pylist()
    kept = json.loads(logged["observed_metrics"])
    assert kept["quality"].pop("total") == pytest.approx(BIG_DECIMAL)
    del observed["quality"]["total"]
    assert kept == observed


def test_a_batch_without_observations_keeps_the_values_and_a_new_run_drops_them():
    fleet = Fleet()
    fleet.apply(observed_progress({"quality": {"rows": 10, "bad": 3}, "range": {"min_x": -4}}, batch_id=3))
    fleet.apply(observed_progress(None, batch_id=4))
    assert scrape(fleet) == {("quality", "rows"): 10, ("quality", "bad"): 3, ("range", "min_x"): -4}
    fleet.apply(observed_progress({"quality": {"rows": 6, "bad": "n/a"}}, batch_id=5))
    assert scrape(fleet) == {("quality", "rows"): 6, ("range", "min_x"): -4}

    restarted = observed_progress(None, batch_id=6, run_id="00000000-0000-0000-0000-000000000001")
    fleet.apply(restarted)
    assert scrape(fleet) == {}
    assert row_of(restarted, restarted.stream, time.time())["observed_metrics"] is None


def progress_data(progress) -> dict:
    """A progress as its JSON: PySpark 3.5 gives the JSON's dict, 4.x a StreamingQueryProgress
    (a dict too, whose observations are Rows) with the JSON in `.json`."""
    text = getattr(progress, "json", None)
    return progress if text is None else json.loads(text)


LANDING_FILES = {
    "a.json": [{"x": x, "name": f"a{x}"} for x in (1, -2, 3, -4, 5, -6, 7, 8, 9, 10)],
    "b.json": [{"x": x, "name": f"b{x}"} for x in (-1, 2, -3, 4, 5, 6)],
}


def test_a_users_query_with_two_observations_is_scraped_and_logged(spark, lake, tmp_path):
    landing = tmp_path / "landing"
    landing.mkdir()
    for name, rows in LANDING_FILES.items():
        (landing / name).write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    stream = "observed_stream"
    monitor = StreamMonitor(spark, lake, metrics_port=0, flush_interval_s=0.2).start()
    try:
        observed = (
            spark.readStream.format("json")
            .schema("x int, name string")
            .option("maxFilesPerTrigger", 1)
            .load(str(landing))
            .observe(
                "quality",
                F.count(F.lit(1)).alias("rows"),
                F.sum(F.when(F.col("x") < 0, 1).otherwise(0)).alias("bad"),
                F.max(F.col("x") < 0).alias("any_bad"),
            )
            .observe("range", F.min("x").alias("min_x"), F.max("name").alias("max_name"))
        )
        query = observed.writeStream.format("noop").queryName(stream).trigger(processingTime="0.1 seconds").start()
        try:
            wait_until(lambda: rows_read(query) == 16, what="both files read")
            last = progress_data(query.lastProgress)
            batch_id = {"stream": stream}
            wait_until(
                lambda: (
                    monitor.flush()
                    and monitor.registry.get_sample_value(catalog.BATCH_ID.name, batch_id) == last["batchId"]
                ),
                what="the monitor to apply the last progress event",
            )
            body = urllib.request.urlopen(monitor.exporter_url, timeout=10).read().decode()
            recent = {
                p["batchId"]: p.get("observedMetrics")
                for p in map(progress_data, query.recentProgress)
                if p["numInputRows"]
            }
        finally:
            query.stop()
    finally:
        monitor.stop()

    metrics = last["observedMetrics"]
    assert observed_gauges(text_string_to_metric_families(body), stream) == {
        ("quality", "rows"): metrics["quality"]["rows"],
        ("quality", "bad"): metrics["quality"]["bad"],
        ("quality", "any_bad"): 1.0,
        ("range", "min_x"): metrics["range"]["min_x"],
    }
    assert metrics["quality"]["any_bad"] is True and isinstance(metrics["range"]["max_name"], str)

    progress = [
        row
        for row in ProgressLog(lake.query_progress).read(events=["progress"], streams=[stream]).to_pylist()
        if row["num_input_rows"]
    ]
    logged = {row["batch_id"]: json.loads(row["observed_metrics"]) for row in progress}
    assert logged == recent
    assert sorted((m["quality"]["rows"], m["quality"]["bad"], m["range"]["min_x"]) for m in logged.values()) == [
        (6, 2, -3),
        (10, 3, -6),
    ]
    assert sorted(m["range"]["max_name"] for m in logged.values()) == ["a9", "b6"]
