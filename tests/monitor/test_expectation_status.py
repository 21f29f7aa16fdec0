"""Which rules fail on which table and since when, from `_system/expectations` written with
delta-rs in the pipeline's schema; and how `streamops status` shows them beside the streams."""

from __future__ import annotations

import json
from datetime import timedelta

from expectation_counts import batch_time, counts, utc_text, write_counts
from monitor_fixtures import recorded_sequence

from streamops.cli import main
from streamops.core.lake_layout import LakeLayout
from streamops.monitor.expectation_status import LOOKBACK, RECENT_BATCHES, failing_rules, rule_statuses
from streamops.monitor.fleet_status import fleet_status
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import row_of

CLEAN, BAD = (100, 0), (95, 5)


def expectation_lake(root) -> LakeLayout:
    lake = LakeLayout.at(root / "lake")
    write_counts(
        lake,
        # fails from batch 3 on, with clean batches between failing ones: one failure since batch 3
        counts("purchase", "silver_shop", "price_nonneg", "drop", [CLEAN] * 3 + [BAD, BAD, CLEAN, CLEAN] + [BAD] * 8)
        # never fails
        + counts("purchase", "silver_shop", "has_id", "warn", [CLEAN] * 15)
        # failed long ago, then RECENT_BATCHES clean batches: not failing now
        + counts("login", "silver_shop", "has_id", "warn", [BAD] * 2 + [CLEAN] * RECENT_BATCHES)
        # a column the table does not have yet: counted nothing
        + counts("login", "silver_shop", "price_nonneg", "drop", [(0, 0)] * 12, applicable=False)
        # failed at batch 0, passed RECENT_BATCHES batches, fails again: the failure began at batch 11
        + counts("checkout", "silver_pay", "amount_set", "warn", [BAD] + [CLEAN] * RECENT_BATCHES + [BAD, BAD]),
    )
    return lake


def test_a_rule_fails_while_its_tables_last_batches_failed_rows_since_its_failure_began(tmp_path):
    lake = expectation_lake(tmp_path)
    statuses = {(s.table, s.expectation): s for s in rule_statuses(lake)}
    assert set(statuses) == {
        ("purchase", "price_nonneg"),
        ("purchase", "has_id"),
        ("login", "has_id"),
        ("login", "price_nonneg"),
        ("checkout", "amount_set"),
    }
    failing = failing_rules(lake)
    assert [(s.table, s.expectation) for s in failing] == [("checkout", "amount_set"), ("purchase", "price_nonneg")]

    price = statuses[("purchase", "price_nonneg")]
    assert (price.stream, price.action, price.recent_batches) == ("silver_shop", "drop", RECENT_BATCHES)
    # the last 10 of 15 batches: 5..14, of which 7..14 failed (5 rows each), 5 and 6 clean
    assert (price.failing_batches, price.failed, price.passed) == (8, 40, 8 * 95 + 2 * 100)
    assert (price.total_failed, price.total_passed) == (10 * 5, 10 * 95 + 5 * 100)
    assert price.failing_since_batch_id == 3
    assert price.failing_since == batch_time(3).timestamp()
    assert (price.last_batch_id, price.last_committed_at) == (14, batch_time(14).timestamp())

    checkout = statuses[("checkout", "amount_set")]
    assert checkout.failing_since_batch_id == 11
    assert (checkout.failing_batches, checkout.failed, checkout.total_failed) == (2, 10, 15)

    old = statuses[("login", "has_id")]
    assert not old.failing and old.failing_since is None
    assert (old.failed, old.total_failed) == (0, 10)
    assert not statuses[("purchase", "has_id")].failing
    assert not statuses[("login", "price_nonneg")].failing


def test_only_the_look_back_is_read_and_a_failure_older_than_it_begins_at_its_edge(tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    two_days_ago = batch_time(0) - timedelta(days=2)
    write_counts(
        lake,
        counts("archive", "silver_old", "has_id", "warn", [BAD] * 3, first_at=two_days_ago)
        # fails every batch for 30 hours, a batch an hour
        + counts(
            "purchase",
            "silver_shop",
            "price_nonneg",
            "drop",
            [BAD] * 30,
            first_at=two_days_ago + timedelta(hours=20),
            every=timedelta(hours=1),
        ),
    )
    now = (two_days_ago + timedelta(hours=50)).timestamp()
    assert [(s.table, s.expectation) for s in rule_statuses(lake, now=now)] == [("purchase", "price_nonneg")]
    (price,) = failing_rules(lake, now=now)
    assert price.failing_since_batch_id == 6, "the first batch within the day before `now`"
    assert price.failing_since == now - LOOKBACK.total_seconds()
    assert price.total_failed == 24 * 5
    assert failing_rules(lake, now=now + 2 * LOOKBACK.total_seconds()) == []


def test_a_lake_without_rules_has_no_rule_status(tmp_path):
    assert rule_statuses(LakeLayout.at(tmp_path)) == []


def with_progress_log(lake: LakeLayout) -> LakeLayout:
    """A drained file stream's recorded run, so `streamops status` has a stream to judge."""
    rows = [
        row_of(event, "file_stream", event.timestamp, reading)
        for event, reading in recorded_sequence("sequence_file_drained.jsonl")
    ]
    ProgressLog(lake.query_progress).append(rows)
    return lake


def test_status_lists_failing_rules_after_the_streams_without_changing_their_status(tmp_path, capsys):
    plain = with_progress_log(LakeLayout.at(tmp_path / "plain"))
    lake = with_progress_log(expectation_lake(tmp_path))
    assert main(["status", "--lake", str(plain.root), "--json"]) == 0
    without = json.loads(capsys.readouterr().out)
    assert main(["status", "--lake", str(lake.root), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [s["status"] for s in report["streams"]] == [s["status"] for s in without["streams"]]
    assert [r.status for r in fleet_status(lake)] == [s["status"] for s in report["streams"]]
    assert without["failing_expectations"] == []
    rules = {(r["table"], r["expectation"]): r for r in report["failing_expectations"]}
    assert list(rules) == [("checkout", "amount_set"), ("purchase", "price_nonneg")]
    price = rules[("purchase", "price_nonneg")]
    assert price["failing_since"] == batch_time(3).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    assert price["failing_since_batch_id"] == 3
    assert (price["failed"], price["failing_batches"], price["recent_batches"], price["action"]) == (40, 8, 10, "drop")

    assert main(["status", "--lake", str(lake.root)]) == 0
    text = capsys.readouterr().out
    streams, section = text.split("2 expectations failing on 2 tables")
    assert "file_stream" in streams and "price_nonneg" not in streams
    lines = {line.split()[1]: line for line in section.splitlines()[3:]}
    assert set(lines) == {"amount_set", "price_nonneg"}
    assert lines["price_nonneg"].split()[:6] == ["purchase", "price_nonneg", "drop", "40", "960", "8"]
    assert f"batch 3, {utc_text(batch_time(3))}" in lines["price_nonneg"]
    assert main(["status", "--lake", str(plain.root)]) == 0
    assert "expectation" not in capsys.readouterr().out
