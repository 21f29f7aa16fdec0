"""Data-quality expectations evaluated in the silver write, on both Delta connectors: counts in
`_system/expectations`, drop to the quarantine, warn kept, fail stops its group only."""

from __future__ import annotations

import shutil
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest
from small_landing import event, write_events

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import CONNECTORS, DeltaConnector, connector_for
from streamops.pipeline.expectations.rules import Expectation, ExpectationSet
from streamops.pipeline.pipeline_events import SilverBatchResult, Unmonitored
from streamops.pipeline.registry.schema_registry import SchemaRegistry
from streamops.pipeline.registry.silver_schemas import silver_schemas
from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
from streamops.pipeline.silver.silver_stream import SilverGroupWriter, SilverSettings

RULES = ExpectationSet(
    default=(Expectation("has_user", "warn", expect="user IS NOT NULL"),),
    tables={
        "purchase": (
            Expectation("price_nonneg", "drop", expect="price >= 0"),
            Expectation("one_order", "warn", unique=("order_id",)),
            Expectation("has_coupon", "warn", expect="coupon IS NOT NULL"),
            Expectation("good_sku", "drop", expect="item__sku IS NULL OR item__sku <> 'bad'"),
        ),
        "refund": (Expectation("small_refund", "fail", expect="amount < 1000"),),
        "visit": (Expectation("one_page", "warn", unique=("page",)),),
    },
)


def purchase(i: int, **fields) -> dict:
    return event("purchase", i, event_time=f"2026-11-22T10:00:0{i}Z", **fields)


EVENTS = [
    purchase(0, user="u", price=10, order_id="o1", item={"sku": "a"}),
    purchase(1, user="u", price=-5, order_id="o2"),
    purchase(2, price=3, order_id="o1"),
    purchase(3, user="u", price=4, order_id="o3", item={"sku": "bad"}),
    purchase(4, user="u", price=-1, order_id="o3"),
    purchase(5, user="u", price=1),
    purchase(6, user="u", price=2),
    event("visit", 0, user="u", page="home"),
    event("visit", 1, page="home"),
    event("visit", 2, user="v", page="cart"),
    event("refund", 0, user="u", amount=10),
    event("refund", 1, user="u", amount=5000),
]
EXPECTED_FAILED = {
    ("purchase", "has_user"): 1,
    ("purchase", "price_nonneg"): 2,
    ("purchase", "one_order"): 2,
    ("purchase", "good_sku"): 1,
    ("visit", "has_user"): 1,
    ("visit", "one_page"): 1,
}
ROWS_SEEN = {"purchase": 7, "visit": 3}


class SilverResults(Unmonitored):
    """What the pipeline tells the monitor of each silver batch."""

    def __init__(self) -> None:
        self.silver: list[SilverBatchResult] = []

    def silver_committed(self, result: SilverBatchResult, schemas) -> None:
        self.silver.append(result)


@pytest.fixture(scope="module", params=CONNECTORS)
def checked(spark, tmp_path_factory, request):
    """One landing file with known violations, drained once per connector with the rules."""
    root = tmp_path_factory.mktemp(f"expectations_{request.param}")
    write_events(root / "landing", "1.ndjson", EVENTS)
    lake = LakeLayout.at(root / "lake")
    settings = PipelineSettings(
        lake=lake,
        input=LandingInput(root / "landing"),
        trigger_seconds=1.0,
        silver=SilverSettings(types_per_group=1, expectations=RULES),
    )
    events = SilverResults()
    supervisor = Supervisor(spark, settings, connector_for(request.param, spark), events, log=lambda _: None)
    return lake, supervisor.run_until_idle(), request.param, events


def rows(path: Path) -> list[dict]:
    return read_delta(str(path)).to_pylist()


def counts(lake: LakeLayout) -> list[dict]:
    return rows(lake.expectations)


def test_passed_and_failed_add_up_to_the_rows_seen_and_failed_is_the_known_count(checked):
    lake, _, _, _ = checked
    passed: dict[tuple[str, str], int] = defaultdict(int)
    failed: dict[tuple[str, str], int] = defaultdict(int)
    for row in counts(lake):
        if row["applicable"]:
            passed[row["table"], row["expectation"]] += row["passed"]
            failed[row["table"], row["expectation"]] += row["failed"]
    assert dict(failed) == {key: EXPECTED_FAILED.get(key, 0) for key in failed}
    assert set(failed) == {*EXPECTED_FAILED, ("purchase", "has_user")}
    for (table, rule), n in failed.items():
        assert passed[table, rule] + n == ROWS_SEEN[table], (table, rule)


def test_dropped_rows_are_quarantined_with_every_rule_they_failed_and_not_in_silver(checked):
    lake, _, _, events = checked
    quarantined = {
        r["raw_text"] and eval_id(r["raw_text"]): r["detail"]
        for r in rows(lake.bronze_quarantine)
        if r["reason"] == "expectation"
    }
    assert quarantined == {
        "purchase-1": "price_nonneg",
        "purchase-3": "good_sku",
        "purchase-4": "price_nonneg, one_order",
    }
    silver = sorted(r["event_id"] for r in rows(lake.silver("purchase")))
    assert silver == ["purchase-0", "purchase-2", "purchase-5", "purchase-6"], "warn rows stay, drop rows go"
    assert sorted(r["event_id"] for r in rows(lake.silver("visit"))) == ["visit-0", "visit-1", "visit-2"]
    told = Counter()
    for result in events.silver:
        told.update(result.quarantined)
    assert told == {"expectation": 3}, "the monitor hears of dropped rows under their own reason"


def eval_id(raw_text: str) -> str:
    import json

    return json.loads(raw_text)["event_id"]


def test_a_rule_on_a_column_the_table_does_not_have_is_not_applicable(checked):
    lake, _, _, _ = checked
    coupon = [r for r in counts(lake) if r["expectation"] == "has_coupon"]
    assert coupon and all(not r["applicable"] and r["passed"] == r["failed"] == 0 for r in coupon)
    assert {r["table"] for r in coupon} == {"purchase"}


def test_counts_name_the_table_version_the_batch_wrote_once_per_batch(checked):
    lake, _, _, _ = checked
    written = counts(lake)
    assert (
        Counter((r["stream"], r["batch_id"], r["table"], r["expectation"]) for r in written).most_common(1)[0][1] == 1
    )
    log = read_delta(str(lake.silver("purchase")))
    assert log.num_rows == 4
    for row in written:
        assert row["version"] is not None and row["version"] >= 0
        assert row["stream"] == f"silver_{row['table']}"


def test_a_fail_rule_stops_its_group_alone_and_writes_nothing_of_the_batch(checked):
    lake, report, _, _ = checked
    assert list(report.failures) == ["silver_refund"]
    message = report.failures["silver_refund"][0]
    for part in ("small_refund", "`refund`", "batch 0", "1 rows"):
        assert part in message, message
    assert report.failed
    assert not (lake.silver("refund") / "_delta_log").exists() or rows(lake.silver("refund")) == []
    assert not [r for r in counts(lake) if r["table"] == "refund"], "a batch that stopped counts nothing"


class CountsWriteCrash(Exception):
    """The driver dying between the silver commits and the counts' commit."""


@dataclass(frozen=True)
class CrashingBeforeCounts:
    """The run's connector, except that writing `_system/expectations` fails."""

    connector: DeltaConnector
    counts_table: str

    def __getattr__(self, name: str):
        return getattr(self.connector, name)

    def write_batch(self, table, data, commit):
        if str(table) == self.counts_table:
            raise CountsWriteCrash()
        return self.connector.write_batch(table, data, commit)


def test_a_batch_replayed_after_a_crash_before_its_counts_writes_them_once_with_the_same_numbers(
    checked, spark, tmp_path
):
    source, _, connector_name, _ = checked
    lake = LakeLayout.at(tmp_path / "lake")
    shutil.copytree(str(source.root), str(lake.root))
    connector = connector_for(connector_name, spark)
    bronze = spark.createDataFrame(read_delta(str(lake.bronze_events)).to_pandas())
    schemas = silver_schemas(SchemaRegistry.load(lake.schema_registry), ["purchase"])
    commit = BatchCommitInfo("silver_replayed", 0)
    settings = SilverSettings(expectations=RULES)
    crashing = CrashingBeforeCounts(connector, str(lake.expectations))
    with pytest.raises(CountsWriteCrash):
        SilverGroupWriter(lake, crashing, "replayed", settings, Unmonitored()).write(bronze, schemas, commit)
    silver_after_crash = rows(lake.silver("purchase"))
    result = SilverGroupWriter(lake, connector, "replayed", settings, Unmonitored()).write(bronze, schemas, commit)
    assert rows(lake.silver("purchase")) == silver_after_crash, "the replay wrote no silver row again"
    replayed = [r for r in counts(lake) if r["stream"] == "silver_replayed"]
    assert {(r["expectation"], r["failed"]) for r in replayed if r["applicable"]} == {
        (rule, n) for (table, rule), n in EXPECTED_FAILED.items() if table == "purchase"
    }
    assert all(r["passed"] + r["failed"] == ROWS_SEEN["purchase"] for r in replayed if r["applicable"])
    version = {r["version"] for r in replayed}
    assert len(version) == 1 and None not in version
    assert [c.failed for c in result.expectations if c.expectation == "price_nonneg"] == [2]
    SilverGroupWriter(lake, connector, "replayed", settings, Unmonitored()).write(bronze, schemas, commit)
    assert len([r for r in counts(lake) if r["stream"] == "silver_replayed"]) == len(replayed), "counted once"


@pytest.mark.parametrize("connector_name", ["native"])
def test_a_unique_warn_rule_counts_a_key_once_across_the_tasks_of_a_batch(spark, tmp_path, connector_name):
    """A `warn` unique rule of a table without drop rules is counted from the keys the sink's
    tasks tally, not by a window over the batch: rows of one key that different tasks wrote are
    still failures beyond the key's first, and a row whose key is null passes. On native, as
    delta-spark's source reads small files in a task each; the embedded source packs 64 MB into
    one, and the sink and the driver's sum are the same on both."""
    from deltalake import DeltaTable

    pages = [["home", "cart"], ["home", None], ["home", "cart", "pay"]]
    for n, landed in enumerate(pages):
        visits = [event("visit", 10 * n + i, **({"page": page} if page else {})) for i, page in enumerate(landed)]
        write_events(tmp_path / "landing", f"{n}.ndjson", visits)
    lake = LakeLayout.at(tmp_path / "lake")
    rules = ExpectationSet(
        tables={
            "visit": (
                Expectation("one_page", "warn", unique=("page",)),
                Expectation("has_page", "warn", expect="page IS NOT NULL"),
            )
        }
    )
    events = SilverResults()
    connector = connector_for(connector_name, spark)
    for stages in ("bronze", "silver"):  # bronze's three batches become one silver batch
        settings = PipelineSettings(
            lake=lake,
            input=LandingInput(tmp_path / "landing", max_files_per_trigger=1),
            trigger_seconds=1.0,
            silver=SilverSettings(types_per_group=1, expectations=rules),
            stages=stages,
        )
        report = Supervisor(spark, settings, connector, events, log=lambda _: None).run_until_idle()
        assert not report.failed, report.failures

    assert [result.rows_by_type for result in events.silver] == [{"visit": 7}]
    tasks = len(DeltaTable(str(lake.silver("visit"))).file_uris())
    assert tasks >= 2, "`home` is in every bronze file, so its rows were written by different tasks"
    found = {(r["expectation"], r["passed"], r["failed"]) for r in counts(lake)}
    assert found == {("one_page", 4, 3), ("has_page", 6, 1)}


def test_a_keyed_unique_rule_writes_each_rows_key_and_puts_no_window_in_the_plan(spark):
    """Keyed (the projection carries KEYS_COLUMN, no drop rule beside it): the row's key, no
    window. Beside a drop rule, or without KEYS_COLUMN (CDC's projection), the window stays."""
    from pyspark.sql import functions as F

    from streamops.pipeline.expectations.rule_columns import (
        FAILED_COLUMN,
        KEYS_COLUMN,
        TABLE_LINEAGE_TYPES,
        RuleScope,
        TableRules,
        rule_selects,
    )
    from streamops.pipeline.records.column_names import RESCUED_DATA_COLUMN

    no_items = F.lit(None).cast("array<string>")
    rows = spark.createDataFrame([("home",), ("home",), (None,)], "page string").select(
        F.lit("visit").alias("event_type"),
        F.lit("{}").alias("payload"),
        *[F.lit(None).cast(kind).alias(name) for name, kind in TABLE_LINEAGE_TYPES.items()],
        F.lit(None).cast("string").alias(RESCUED_DATA_COLUMN),
        no_items.alias(FAILED_COLUMN),
        no_items.alias(KEYS_COLUMN),
        F.struct("page").alias("layer"),
    )
    schema = {"type": "struct", "fields": [{"name": "page", "type": "string", "nullable": True, "metadata": {}}]}
    one_page = Expectation("one_page", "warn", unique=("page",))

    def evaluated(rules: tuple[Expectation, ...], working: tuple[str, ...]):
        scope = RuleScope("layer", schema, (TableRules("visit", 1, rules),))
        out = rows.select(*working)
        for columns in rule_selects([scope], working, "event_type"):
            out = out.select(*columns)
        return out

    def has_window(frame) -> bool:
        return "Window" in frame._jdf.queryExecution().executedPlan().toString()

    keyed = evaluated((one_page,), tuple(rows.columns))
    assert not has_window(keyed)
    assert [(r[FAILED_COLUMN], r[KEYS_COLUMN]) for r in keyed.collect()] == [
        ([], ["expect_key\x00one_page\x00home"]),
        ([], ["expect_key\x00one_page\x00home"]),
        ([], []),
    ]
    beside_drop = evaluated((one_page, Expectation("no_x", "drop", expect="page <> 'x'")), tuple(rows.columns))
    assert has_window(beside_drop)
    assert sorted(r[FAILED_COLUMN] for r in beside_drop.collect()) == [[], ["drop\x00no_x"], ["warn\x00one_page"]]
    assert has_window(evaluated((one_page,), tuple(c for c in rows.columns if c != KEYS_COLUMN)))


def _field(name: str, kind) -> dict:
    return {"name": name, "type": kind, "nullable": True, "metadata": {}}


def test_the_rules_read_no_payload_again_and_change_no_rows_typed_payload_or_rescued_data(spark):
    """Where no window shuffles the batch, a layer with rules is read once for its rules and its
    typed payload: the plan holds as many JSON reads as without rules, and each row comes out
    the same. Covered here: a layer whose types have rules and one whose do not, nested fields,
    an unfit variation (its typed payload and rescued data read apart) and a row without fields."""
    from pyspark.sql import functions as F

    from streamops.pipeline.delta_connector.write_plan import TALLY_ITEMS_COLUMN
    from streamops.pipeline.expectations.rule_columns import TableRules
    from streamops.pipeline.records.column_names import RESCUED_DATA_COLUMN
    from streamops.pipeline.registry.schema_compat import FieldChange
    from streamops.pipeline.registry.silver_schemas import SilverSchema
    from streamops.pipeline.silver.silver_stream import TYPED_COLUMN, silver_routes

    item = {"type": "struct", "fields": [_field("sku", "string"), _field("qty", "long")]}
    purchase = {"type": "struct", "fields": [_field("price", "long"), _field("item", item), _field("user", "string")]}
    schemas = {
        "other": SilverSchema("other", 1, {"type": "struct", "fields": [_field("x", "long")]}, None),
        "purchase": SilverSchema(
            "purchase",
            1,
            purchase,
            None,
            unfit={"h2": (FieldChange("price", "long", "string"),)},
            variation_schemas={"h2": {**purchase, "fields": [_field("price", "string"), *purchase["fields"][1:]]}},
        ),
        "visit": SilverSchema(
            "visit", 1, {"type": "struct", "fields": [_field("page", "string"), _field("price", "string")]}, None
        ),
    }
    rules = {
        "purchase": TableRules(
            "purchase",
            1,
            (
                Expectation("price_nonneg", "warn", expect="price >= 0"),
                Expectation("has_sku", "warn", expect="item__sku IS NOT NULL"),
            ),
        )
    }
    payloads = [
        ("purchase", "h1", '{"price": 10, "item": {"sku": "a", "qty": 2}, "user": "u"}'),
        ("purchase", "h1", '{"price": -5, "user": "v"}'),
        ("purchase", "h2", '{"price": "L5", "item": {"sku": "b"}}'),
        ("purchase", "h1", "{}"),
        ("other", "h3", '{"x": 7}'),
        ("visit", "h4", '{"page": "home", "price": "free"}'),
    ]
    bronze = spark.createDataFrame(
        [(*row, f"f{i}.ndjson", i) for i, row in enumerate(payloads)],
        "event_type string, schema_hash string, payload string, source_file string, batch_id long",
    ).select("*", F.current_timestamp().alias("event_time"), F.current_timestamp().alias("ingest_time"))

    def routed(table_rules):
        frame = silver_routes(schemas, "rescue", table_rules).of(bronze)
        reads = frame._jdf.queryExecution().optimizedPlan().toString().count("from_json(")
        rows = {r["payload"]: r.asDict() for r in frame.collect()}
        return reads, rows

    reads, checked = routed(rules)
    plain_reads, plain = routed(None)
    assert reads == plain_reads
    kept = (TYPED_COLUMN, RESCUED_DATA_COLUMN, "_q_detail", "_route")
    assert {p: [r[c] for c in kept] for p, r in checked.items()} == {p: [r[c] for c in kept] for p, r in plain.items()}
    assert plain[payloads[2][2]][RESCUED_DATA_COLUMN] is not None
    failed = {p: r[TALLY_ITEMS_COLUMN] for p, r in checked.items()}
    assert failed == {
        payloads[0][2]: [],
        payloads[1][2]: ["expect_failed\x00purchase\x00warn\x00price_nonneg\x01warn\x00has_sku"],
        payloads[2][2]: ["expect_failed\x00purchase\x00warn\x00price_nonneg"],
        payloads[3][2]: ["expect_failed\x00purchase\x00warn\x00price_nonneg\x01warn\x00has_sku"],
        payloads[4][2]: [],
        payloads[5][2]: [],
    }
