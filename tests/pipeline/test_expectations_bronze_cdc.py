"""Data-quality expectations on bronze's rows and on CDC tables, on both Delta connectors: counts
in `_system/expectations`, drop to the quarantine with the raw line, warn kept, fail stops its
stream alone with nothing of the batch written. A CDC table's rules check the row each upsert
would write; deletes carry no row and are not checked."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest
from cdc_landing import current_rows, land
from small_landing import event, write_events
from test_expectations_silver import CrashingBeforeCounts

from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import BRONZE_EVENTS_TABLE, BRONZE_STREAM, LakeLayout
from streamops.core.storage.location import Location
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.cdc.cdc_settings import CdcSettings
from streamops.pipeline.cdc.debezium_mode import DebeziumChanges
from streamops.pipeline.expectations.rules import Expectation, ExpectationSet
from streamops.pipeline.pipeline_events import BronzeBatchResult, CdcBatchResult, Unmonitored
from streamops.pipeline.run.supervisor import PipelineSettings, RunReport, Supervisor
from streamops.pipeline.silver.silver_stream import SilverSettings

pytestmark = pytest.mark.spark


class Told(Unmonitored):
    """What the pipeline tells the monitor of each bronze and CDC batch."""

    def __init__(self) -> None:
        self.bronze: list[BronzeBatchResult] = []
        self.cdc: list[CdcBatchResult] = []

    def bronze_committed(self, result: BronzeBatchResult, max_event_time: float | None) -> None:
        self.bronze.append(result)

    def cdc_applied(self, result: CdcBatchResult) -> None:
        self.cdc.append(result)


def run(spark, connector, lake: LakeLayout, landing, rules: ExpectationSet, mode=None) -> tuple[RunReport, Told]:
    settings = PipelineSettings(
        lake=lake,
        input=LandingInput(Location.local(landing)),
        trigger_seconds=1.0,
        silver=SilverSettings(types_per_group=2, expectations=rules),
        **({"mode": mode} if mode is not None else {}),
    )
    told = Told()
    report = Supervisor(spark, settings, connector, told, log=lambda _: None).run_until_idle()
    return report, told


def totals(lake: LakeLayout, table: str) -> dict[str, tuple[int, int]]:
    """Rule -> (passed, failed) over every batch that counted `table`."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in read_delta(lake.expectations).to_pylist():
        if row["table"] == table:
            found[row["expectation"]][0] += row["passed"]
            found[row["expectation"]][1] += row["failed"]
    return {rule: (passed, failed) for rule, (passed, failed) in found.items()}


def expectation_quarantine(lake: LakeLayout) -> list[dict]:
    return [r for r in read_delta(lake.bronze_quarantine).to_pylist() if r["reason"] == "expectation"]


BRONZE_RULES = ExpectationSet(
    bronze=(
        Expectation("not_a_test", "drop", expect="payload NOT LIKE '%\"test\": true%'"),
        Expectation("one_id", "warn", unique=("event_id",)),
        Expectation("known_source", "warn", expect="source_file LIKE '%.ndjson' AND kafka_topic IS NULL"),
    )
)


def test_bronze_rules_count_every_line_bound_for_bronze_and_drop_to_the_quarantine(spark, connector, tmp_path):
    landing = tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("visit", 0), event("visit", 1, test=True), event("visit", 0, page="x")])
    (landing / "2.ndjson").write_text("not json\n" + json.dumps(event("login", 3, test=True)) + "\n")
    lake = LakeLayout.at(tmp_path / "lake")
    report, told = run(spark, connector, lake, landing, BRONZE_RULES)
    assert report.failures == {}
    assert totals(lake, BRONZE_EVENTS_TABLE) == {"not_a_test": (2, 2), "one_id": (3, 1), "known_source": (4, 0)}
    dropped = expectation_quarantine(lake)
    assert sorted(json.loads(r["raw_text"])["event_id"] for r in dropped) == ["login-3", "visit-1"]
    assert {(r["stream"], r["detail"]) for r in dropped} == {(BRONZE_STREAM, "not_a_test")}
    assert sorted(r["event_id"] for r in read_delta(lake.bronze_events).to_pylist()) == ["visit-0", "visit-0"]
    assert {r["reason"] for r in read_delta(lake.bronze_quarantine).to_pylist()} == {"expectation", "malformed_json"}
    assert sum(c.failed for r in told.bronze for c in r.expectations if c.expectation == "not_a_test") == 2
    versions = {r["version"] for r in read_delta(lake.expectations).to_pylist()}
    assert None not in versions and versions <= set(range(read_delta_version(lake) + 1))


def read_delta_version(lake: LakeLayout) -> int:
    from streamops.core.delta_format.read import open_table

    return open_table(lake.bronze_events).version()


def test_a_bronze_fail_rule_stops_bronze_alone_and_writes_nothing_of_the_batch(spark, connector, tmp_path):
    landing = tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("visit", 0), event("visit", 1, test=True)])
    lake = LakeLayout.at(tmp_path / "lake")
    rules = ExpectationSet(bronze=(Expectation("no_tests", "fail", expect="payload NOT LIKE '%\"test\"%'"),))
    report, _ = run(spark, connector, lake, landing, rules)
    assert list(report.failures) == [BRONZE_STREAM]
    line = report.failures[BRONZE_STREAM][0]
    for part in ("bronze stopped in batch 0", "`no_tests` failed on 1 rows", f"`{BRONZE_EVENTS_TABLE}`"):
        assert part in line, line
    assert read_delta(lake.bronze_events).num_rows == 0
    assert not is_table(lake.expectations) or read_delta(lake.expectations).num_rows == 0


def price_change(op: str, lsn: int, row: dict | None, before: dict | None = None) -> str:
    source = {"connector": "postgresql", "db": "shop", "schema": "public", "table": "prices", "lsn": lsn}
    source |= {"sequence": f'["{lsn - 1}","{lsn}"]', "ts_ms": 1_795_000_000_000 + lsn}
    return json.dumps({"op": op, "before": before, "after": row, "source": source, "ts_ms": 1_795_000_000_900 + lsn})


CDC = DebeziumChanges(CdcSettings(keys={"public.prices": ("sku",)}))
CHANGES = [
    price_change("c", 10, {"sku": "a", "price": 1.0}),
    price_change("c", 11, {"sku": "b", "price": -2.0}),
    price_change("u", 12, {"sku": "a", "price": 3.0}),
    price_change("c", 13, {"sku": "d", "price": 4.0}),
    price_change("c", 14, {"sku": "c", "price": 6.0}),
    price_change("d", 15, None, before={"sku": "c", "price": -1.0}),
]
CDC_RULES = ExpectationSet(
    default=(Expectation("has_price", "warn", expect="price IS NOT NULL"),),
    tables={
        "public.prices": (
            Expectation("price_nonneg", "drop", expect="price >= 0"),
            Expectation("not_d", "warn", expect="sku <> 'd'"),
            Expectation("one_change_per_sku", "warn", unique=("sku",)),
            Expectation("has_vat", "warn", expect="vat IS NOT NULL"),
        )
    },
)


def test_cdc_rules_check_each_upsert_and_a_dropped_change_is_not_applied(spark, connector, tmp_path):
    land(tmp_path / "landing", "changes.ndjson", CHANGES)
    lake = LakeLayout.at(tmp_path / "lake")
    report, told = run(spark, connector, lake, tmp_path / "landing", CDC_RULES, CDC)
    assert report.failures == {}
    assert totals(lake, "public.prices") == {
        "has_price": (5, 0),
        "price_nonneg": (4, 1),
        "not_d": (4, 1),
        "one_change_per_sku": (4, 1),
        "has_vat": (0, 0),
    }
    assert current_rows(lake, "public.prices", ("sku", "price")) == {("a", 3.0), ("d", 4.0)}
    [dropped] = expectation_quarantine(lake)
    assert dropped["detail"] == "price_nonneg" and json.loads(dropped["raw_text"])["after"]["sku"] == "b"
    counted = read_delta(lake.expectations).to_pylist()
    assert {r["applicable"] for r in counted if r["expectation"] == "has_vat"} == {False}
    silver = {r["version"] for r in counted}
    assert silver == {max(a["silver_version"] for a in read_delta(lake.cdc_applies).to_pylist())}
    assert sum(r.quarantined.get("expectation", 0) for r in told.cdc) == 1
    assert sum(c.failed for r in told.cdc for c in r.expectations) == 3


def test_a_cdc_fail_rule_stops_its_group_and_applies_nothing_of_the_batch(spark, connector, tmp_path):
    land(tmp_path / "landing", "changes.ndjson", CHANGES)
    lake = LakeLayout.at(tmp_path / "lake")
    rules = ExpectationSet(tables={"public.prices": (Expectation("cheap", "fail", expect="price < 5"),)})
    report, _ = run(spark, connector, lake, tmp_path / "landing", rules, CDC)
    [stream] = report.failures
    line = report.failures[stream][0]
    assert stream.startswith("silver_")
    for part in ("stopped in batch 0", "`cheap` failed on 1 rows of table `public.prices`"):
        assert part in line, line
    assert current_rows(lake, "public.prices", ("sku", "price")) == set()
    assert not is_table(lake.expectations) or read_delta(lake.expectations).num_rows == 0
    assert read_delta(lake.bronze_events).num_rows == len(CHANGES), "bronze goes on"


@pytest.mark.parametrize("stage", ["bronze", "cdc"])
def test_a_batch_replayed_after_a_crash_before_its_counts_counts_once(spark, connector, tmp_path, stage):
    """The first run commits the batch's tables and dies before its counts; the restart replays
    the batch: the tables keep one copy of it, and the counts are written once, with the numbers
    a run without the crash writes."""
    lake = LakeLayout.at(tmp_path / "lake")
    if stage == "bronze":
        write_events(tmp_path / "landing", "1.ndjson", [event("visit", 0), event("visit", 1, test=True)])
        rules, mode, table, expected = BRONZE_RULES, None, BRONZE_EVENTS_TABLE, {"not_a_test": (1, 1)}
    else:
        land(tmp_path / "landing", "changes.ndjson", CHANGES)
        rules, mode, table, expected = CDC_RULES, CDC, "public.prices", {"price_nonneg": (4, 1)}
    crashing = CrashingBeforeCounts(connector, str(lake.expectations))
    crashed, _ = run(spark, crashing, lake, tmp_path / "landing", rules, mode)
    assert any("CountsWriteCrash" in line for lines in crashed.failures.values() for line in lines), crashed.failures
    assert not is_table(lake.expectations) or read_delta(lake.expectations).num_rows == 0
    report, _ = run(spark, connector, lake, tmp_path / "landing", rules, mode)
    assert report.failures == {}
    counted = totals(lake, table)
    assert {rule: counted[rule] for rule in expected} == expected
    keys = [
        (r["stream"], r["batch_id"], r["table"], r["expectation"]) for r in read_delta(lake.expectations).to_pylist()
    ]
    assert len(keys) == len(set(keys)), "a batch counted twice"
    if stage == "bronze":
        assert sorted(r["event_id"] for r in read_delta(lake.bronze_events).to_pylist()) == ["visit-0"]
        assert len(expectation_quarantine(lake)) == 1
    else:
        assert current_rows(lake, "public.prices", ("sku", "price")) == {("a", 3.0), ("d", 4.0)}
        assert len(expectation_quarantine(lake)) == 1
