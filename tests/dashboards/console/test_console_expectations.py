"""The console's Expectations page, on a lake whose `_system/expectations` and quarantine rows are
written with delta-rs in the pipeline's schemas: what it shows is compared with those rows."""

from __future__ import annotations

import pandas as pd
import pytest
from expectation_counts import batch_time, counts, dropped_row, utc_text, write_counts, write_quarantine
from test_console_reads_well import _page_problems
from test_console_views import frame, lake_files, open_page, texts

from streamops.core.lake_layout import BRONZE_EVENTS_TABLE, BRONZE_STREAM, LakeLayout

CLEAN, BAD = (100, 0), (97, 3)


@pytest.fixture
def rules_lake(tmp_path) -> LakeLayout:
    lake = LakeLayout.at(tmp_path / "lake")
    write_counts(
        lake,
        counts("purchase", "silver_shop", "price_nonneg", "drop", [CLEAN] * 4 + [BAD] * 6)
        + counts("purchase", "silver_shop", "has_id", "warn", [CLEAN] * 10)
        + counts("login", "silver_shop", "has_id", "warn", [CLEAN, BAD, BAD]),
    )
    write_quarantine(
        lake,
        [
            dropped_row("purchase", "silver_shop", batch, "price_nonneg", f'{{"price": -{batch}, "n": {n}}}')
            for batch in range(4, 10)
            for n in range(3)
        ]
        + [dropped_row("checkout", "silver_pay", 2, "amount_set", '{"amount": null}')]
        # more rows of another reason, so the Quarantine page opens on it unless told otherwise
        + [dict(dropped_row("purchase", "silver_shop", 9, "", '{"price": "x"}'), reason="incompatible_type")] * 25,
    )
    return lake


def test_each_rule_shows_whether_it_fails_since_when_and_its_counts(console, rules_lake):
    at = open_page(console, rules_lake, "expectations_view.py")
    rules = frame(at, "table", "expectation", "failing_since").set_index(["table", "expectation"])
    assert set(rules.index) == {("purchase", "price_nonneg"), ("purchase", "has_id"), ("login", "has_id")}
    price = rules.loc[("purchase", "price_nonneg")]
    assert price["state"] == "failing" and price["action"] == "drop"
    assert price["failing_since"] == pd.Timestamp(batch_time(4))
    assert (price["failed"], price["passed"], price["batches_failing"]) == (18, 6 * 97 + 4 * 100, "6 of 10")
    login = rules.loc[("login", "has_id")]
    assert login["state"] == "failing" and login["failing_since"] == pd.Timestamp(batch_time(1))
    assert (login["failed"], login["passed"], login["batches_failing"]) == (6, 294, "2 of 3")
    passing = rules.loc[("purchase", "has_id")]
    assert passing["state"] == "passing" and pd.isna(passing["failing_since"]) and passing["failed"] == 0
    assert list(rules["state"]) == ["failing", "failing", "passing"]
    page = texts(at)
    assert "3 rules on 2 tables; 2 failing, on 2 tables" in page
    assert "Rules fail on `login`, `purchase`" in at.warning[0].value


def test_a_chosen_table_shows_its_failing_rules_and_the_rows_its_drop_rules_removed(console, rules_lake):
    at = open_page(console, rules_lake, "expectations_view.py", table="purchase")
    assert at.selectbox(key="table").value == "purchase"
    page = texts(at)
    assert f"`price_nonneg` (drop) fails since batch 4, {utc_text(batch_time(4))}: 18 rows failed" in page
    assert "`has_id` (warn) fails" not in page
    examples = frame(at, "detail", "raw_text", "ingest_time")
    assert len(examples) == 18
    assert set(examples["detail"]) == {"price_nonneg"}
    assert list(examples["ingest_time"]) == sorted(examples["ingest_time"], reverse=True)
    assert set(examples["batch_id"]) == set(range(4, 10))
    at.button(key="open_quarantine").click().run()
    assert not at.exception
    assert at.title[0].value == "Quarantine" and at.selectbox(key="reason").value == "expectation"


def test_a_table_whose_rules_warn_has_no_quarantined_rows_to_show(console, rules_lake):
    at = open_page(console, rules_lake, "expectations_view.py", table="login")
    assert "No row of `login` is in the quarantine" in texts(at)
    assert not [d for d in at.dataframe if "raw_text" in d.value.columns]


def test_a_table_name_from_the_url_that_has_no_rules_is_not_used(console, rules_lake):
    at = open_page(console, rules_lake, "expectations_view.py", table="../../etc")
    assert at.selectbox(key="table").value in ("purchase", "login")


@pytest.mark.parametrize("table", ["purchase", "login"])
def test_the_page_reads_as_every_console_page_does(console, rules_lake, table):
    """Em dashes for missing values (a passing rule's failure start), times in UTC with 24-hour clocks."""
    assert _page_problems(open_page(console, rules_lake, "expectations_view.py", table=table)) == []


def test_the_page_writes_nothing_and_says_what_is_missing_on_a_lake_without_rules(console, rules_lake, tmp_path):
    before = lake_files(rules_lake)
    open_page(console, rules_lake, "expectations_view.py")
    assert lake_files(rules_lake) == before
    empty = open_page(console, LakeLayout.at(tmp_path), "expectations_view.py")
    assert "No expectation counts yet" in empty.info[0].value


def test_bronze_rules_show_the_lines_bronze_dropped_and_a_silver_table_only_its_own(console, tmp_path):
    """Bronze's drop rules quarantine lines from stream `bronze` with their own event type: they
    are bronze's examples, not those of the silver table of that type."""
    lake = LakeLayout.at(tmp_path / "lake")
    write_counts(
        lake,
        counts(BRONZE_EVENTS_TABLE, BRONZE_STREAM, "not_a_test", "drop", [BAD])
        + counts("purchase", "silver_shop", "price_nonneg", "drop", [BAD]),
    )
    write_quarantine(
        lake,
        [dropped_row("purchase", BRONZE_STREAM, 0, "not_a_test", f'{{"test": true, "n": {n}}}') for n in range(3)]
        + [dropped_row("purchase", "silver_shop", 0, "price_nonneg", f'{{"price": -{n}}}') for n in range(2)],
    )
    for table, rule, rows in ((BRONZE_EVENTS_TABLE, "not_a_test", 3), ("purchase", "price_nonneg", 2)):
        at = open_page(console, lake, "expectations_view.py", table=table)
        examples = frame(at, "detail", "raw_text", "ingest_time")
        assert (set(examples["detail"]), len(examples)) == ({rule}, rows), table
