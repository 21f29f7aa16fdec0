"""What a batch of one table's changes does, decided by the reference functions
(pipeline/cdc/change_apply.py) case by case: the current state's MERGE source, the deleted keys,
the history's versions."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from streamops.pipeline.cdc.change_apply import (
    ACTION,
    EVENT_TIME,
    KEY,
    MATCH_FROM,
    OP,
    ORDER,
    SEQUENCE,
    VALID_FROM,
    VALID_TO,
    decide,
    last_per_key,
    marker_cutoff,
)

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)


def c(op: str, key: int | None, seq: int, order: int = 0, **row) -> dict:
    """A change: `seq` is its position (as the sequence text), `order` its arrival in the batch."""
    return {
        OP: op,
        KEY: "" if key is None else f"[{key}]",
        SEQUENCE: f"s{seq:04d}",
        ORDER: order,
        EVENT_TIME: T0 + timedelta(seconds=seq),
        "id": key,
        **row,
    }


def seqs(rows: list[dict]) -> list[tuple[str, str, str]]:
    return [(r[KEY], r[OP], r[SEQUENCE]) for r in rows]


def test_the_last_change_of_each_key_wins_whatever_the_arrival_order():
    batch = [c("u", 1, 5, 0), c("c", 1, 3, 1), c("u", 2, 4, 2), c("d", 2, 6, 3), c("u", 1, 4, 4)]
    assert seqs(last_per_key(batch)) == [("[1]", "u", "s0005"), ("[2]", "d", "s0006")]
    tie = [c("u", 1, 5, 0, v="first"), c("u", 1, 5, 1, v="second")]
    assert last_per_key(tie)[0]["v"] == "second", "one position twice: the later arrival"


def test_a_change_older_than_its_keys_delete_is_dropped_and_a_newer_one_unmarks_it():
    deleted = {"[1]": "s0010", "[2]": "s0010"}
    batch = [c("u", 1, 8), c("c", 2, 12), c("d", 3, 5), c("u", 4, 1)]
    decided = decide(batch, deleted, None)
    assert seqs(decided.current) == [("[2]", "c", "s0012"), ("[3]", "d", "s0005"), ("[4]", "u", "s0001")]
    assert seqs(decided.markers) == [("[3]", "d", "s0005"), ("[2]", "c", "s0012")], "record 3, remove 2's marker"


def test_a_delete_older_than_the_marker_leaves_it():
    decided = decide([c("d", 1, 5)], {"[1]": "s0009"}, None)
    assert seqs(decided.current) == [("[1]", "d", "s0005")], "the MERGE still compares it with the row"
    assert decided.markers == []


def test_a_truncate_drops_what_came_before_it_and_is_remembered():
    batch = [c("c", 1, 1), c("t", None, 5), c("c", 2, 7), c("u", 1, 3)]
    decided = decide(batch, {}, None)
    assert seqs(decided.current) == [("[2]", "c", "s0007")]
    assert decided.truncate[0] == "s0005" and decided.closes_all[0] == "s0005"
    assert seqs(decided.markers) == [("", "t", "s0005")]
    later = decide([c("u", 1, 4), c("c", 3, 9)], {}, "s0005")
    assert seqs(later.current) == [("[3]", "c", "s0009")], "a late change from before the truncate"
    assert later.closes_all is None and later.markers == []


def test_history_versions_follow_each_other_and_a_delete_closes():
    batch = [c("c", 1, 1, 0, v="a"), c("u", 1, 2, 1, v="b"), c("d", 1, 3, 2), c("c", 1, 4, 3, v="c")]
    rows = decide(batch, {}, None, held={}).history
    assert [(r[ACTION], r["v"], r[VALID_FROM], r[VALID_TO]) for r in rows] == [
        ("insert", "a", "s0001", "s0002"),
        ("insert", "b", "s0002", "s0003"),
        ("insert", "c", "s0004", None),
    ]
    assert all(r[MATCH_FROM] == r[VALID_FROM] for r in rows)


def test_history_closes_the_version_open_before_the_batch():
    rows = decide([c("u", 1, 7, v="new")], {}, None, held={"[1]": "s0003"}).history
    close, version = rows
    assert (close[ACTION], close[MATCH_FROM], close[VALID_TO]) == ("close", "s0003", "s0007")
    assert (version[ACTION], version[VALID_FROM], version[VALID_TO]) == ("insert", "s0007", None)
    gone = decide([c("d", 1, 7)], {}, None, held={"[1]": "s0003"}).history
    assert [(r[ACTION], r[VALID_TO]) for r in gone] == [("close", "s0007")]


def test_history_ends_versions_at_a_truncate():
    batch = [c("c", 1, 1), c("t", None, 3), c("c", 1, 5)]
    rows = decide(batch, {}, None, held={"[1]": "s0000"}).history
    assert [(r[ACTION], r[MATCH_FROM], r[VALID_FROM], r[VALID_TO]) for r in rows] == [
        ("close", "s0000", None, "s0001"),
        ("insert", "s0001", "s0001", "s0003"),
        ("insert", "s0005", "s0005", None),
    ]
    through = decide([c("t", None, 3), c("u", 1, 5)], {}, None, held={"[1]": "s0001"}).history
    assert (through[0][ACTION], through[0][VALID_TO]) == ("close", "s0003")


def test_late_and_replayed_changes_make_no_version():
    held = {"[1]": "s0005"}
    assert decide([c("u", 1, 4), c("u", 1, 5)], {}, None, held=held).history == []
    assert decide([c("u", 1, 4)], {"[1]": "s0006"}, None, held={}).history == []
    assert decide([c("u", 1, 4)], {}, "s0004", held={}).history == []


def test_replaying_a_batch_against_what_it_left_adds_nothing():
    batch = [c("c", 1, 1), c("u", 1, 2), c("c", 2, 3), c("d", 2, 4), c("t", None, 5), c("c", 3, 6)]
    first = decide(batch, {}, None, held={})
    after_deleted = {m[KEY]: m[SEQUENCE] for m in first.markers if m[OP] == "d"}
    truncated = next(m[SEQUENCE] for m in first.markers if m[OP] == "t")
    replay = decide(batch, after_deleted, truncated, held={"[3]": "s0006"})
    assert replay.history == [] and replay.markers == [] and replay.closes_all is None
    assert seqs(replay.current) == [("[3]", "c", "s0006")], "left to the MERGE, which finds the row as new"


def test_markers_older_than_the_retention_are_cut_in_source_time():
    cutoff = marker_cutoff([c("u", 1, 100), c("u", 2, 40)], retention_seconds=30)
    assert cutoff == T0 + timedelta(seconds=70)
    assert marker_cutoff([{EVENT_TIME: None}], 30) is None
