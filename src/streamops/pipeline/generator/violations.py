"""Events that break known data-quality rules on purpose, so a run's expectation counts can be
checked exactly: with `--violations R` a seeded share of the events each break one or two of
`VIOLATION_RULES`, the manifest counts the failures per table and rule, and the rules go into a
file beside it (`RULES_FILE_NAME`) that `streamops run --expectations` reads.

Every rule holds for every event of a clean load whatever its type and drift stage: the fields
named are in every variation and never change kind (`player.id` is an id string,
`context.session.seq` an integer from 1, `event_time` the run's clock, `event_id` unique in the
run). An injected value keeps its JSON kind, except the null `player.id`, which makes one more
schema variation of the type (a null is no path); the manifest lists those variations too.
"""

from __future__ import annotations

import json
import random
from typing import Any, Literal, get_args

from streamops.pipeline.expectations.rules import Expectation
from streamops.pipeline.records.record_rules import EVENT_ID_FIELD, EVENT_TIME_FIELD

ViolationKind = Literal[
    "null_player_id",
    "negative_session_seq",
    "future_event_time",
    "repeated_event_id",
    "null_player_id_and_future_event_time",
]
VIOLATION_KINDS: tuple[ViolationKind, ...] = get_args(ViolationKind)

VIOLATION_RULES = (
    Expectation("player_id_present", "drop", expect="player__id IS NOT NULL"),
    Expectation("session_seq_not_negative", "warn", expect="context__session__seq >= 0"),
    Expectation("event_time_before_2090", "drop", expect="_event_time < timestamp'2090-01-01'"),
    Expectation("one_row_per_event_id", "warn", unique=(EVENT_ID_FIELD,)),
)
"""Two `drop` and two `warn` rules, so one load exercises both actions."""

BROKEN_RULES: dict[ViolationKind, tuple[str, ...]] = {
    "null_player_id": ("player_id_present",),
    "negative_session_seq": ("session_seq_not_negative",),
    "future_event_time": ("event_time_before_2090",),
    "repeated_event_id": ("one_row_per_event_id",),
    "null_player_id_and_future_event_time": ("player_id_present", "event_time_before_2090"),
}
"""The rules an event of each kind fails: one row can fail two rules, and each counts it."""

NULLED_PATH = "player.id:string"
"""The variation path an event with a null `player.id` lacks."""
FUTURE_EVENT_TIME = "2099-12-31T23:59:59.999Z"
RULES_FILE_NAME = "_expectations.yaml"
"""Beside the manifest; the leading `_` keeps Spark's file source from reading it as landing."""


def nulls_player_id(kind: ViolationKind) -> bool:
    return "player_id_present" in BROKEN_RULES[kind]


def violation_count(candidate_lines: int, ratio: float) -> int:
    """round(N * ratio), raised so every kind occurs at least once, never above N."""
    if ratio <= 0:
        return 0
    return min(candidate_lines, max(round(candidate_lines * ratio), len(VIOLATION_KINDS)))


def plan_violations(total_lines: int, ratio: float, bad: set[int], rng: random.Random) -> dict[int, ViolationKind]:
    """Line ordinal -> kind, over the lines that are not bad records, kinds in equal shares."""
    count = violation_count(total_lines - len(bad), ratio)
    drawn = rng.sample(range(total_lines), count + len(bad)) if count else []
    ordinals = [ordinal for ordinal in drawn if ordinal not in bad][:count]
    return {ordinal: VIOLATION_KINDS[index % len(VIOLATION_KINDS)] for index, ordinal in enumerate(ordinals)}


def break_rules(kind: ViolationKind, event: dict[str, Any], earlier_id: str | None) -> bool:
    """Make `event` (a fresh valid event) break the rules of `kind`; False when it cannot: a
    repeated id needs an earlier clean event of the type in the same file (`earlier_id`), so the
    two rows meet in one micro-batch."""
    if kind == "repeated_event_id":
        if earlier_id is None:
            return False
        event[EVENT_ID_FIELD] = earlier_id
    elif kind == "negative_session_seq":
        session = event["context"]["session"]
        session["seq"] = -session["seq"]
    if nulls_player_id(kind):
        event["player"]["id"] = None
    if "event_time_before_2090" in BROKEN_RULES[kind]:
        event[EVENT_TIME_FIELD] = FUTURE_EVENT_TIME
    return True


def rules_yaml() -> str:
    """`VIOLATION_RULES` as an expectations file: every silver table gets them (`default`)."""
    lines = [
        "# The rules `streamops generate --violations` breaks on purpose; the manifest's",
        "# `violations` says how many rows of each table fail each rule.",
        "default:",
    ]
    for rule in VIOLATION_RULES:
        check = (
            f"expect: {json.dumps(rule.expect)}" if rule.expect is not None else f"unique: [{', '.join(rule.unique)}]"
        )
        lines.append(f"  - {{name: {rule.name}, {check}, action: {rule.action}}}")
    return "\n".join(lines) + "\n"
