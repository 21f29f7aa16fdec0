"""Expectations end to end, on each Delta connector: a generated load whose rule violations are
known exactly (`streamops generate --violations`), run by `streamops run --expectations` as a
user runs it, SIGKILLed mid-run and restarted; then every count in `_system/expectations`, every
silver table and the quarantine are checked against the generator's manifest and the lines on
disk. One generation and two runs per connector: this module is on CI's end-to-end path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from waiting import wait_until

from streamops.core.delta_format.read import is_table, read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.delta_connector.connector import CONNECTORS
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.generator.violations import FUTURE_EVENT_TIME, VIOLATION_RULES

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

RUN_TIMEOUT = 600
EVENTS = 3_000
EXPECTATION_REASON = "expectation"
RULES_SEPARATOR = ", "
"""How a quarantined row's detail lists the rules it failed."""
ACTIONS = {rule.name: rule.action for rule in VIOLATION_RULES}


@dataclass(frozen=True)
class Ran:
    lake: LakeLayout
    landing: Path
    manifest: dict[str, Any]
    rows_counted_at_kill: int


def streamops(*args: str, **popen: Any) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "streamops", *args], start_new_session=True, **popen)


def counted_rows(lake: LakeLayout) -> int:
    """Rows the expectations table has counted so far (each rule counts every row once)."""
    if not is_table(lake.expectations):
        return 0
    rows = read_delta(lake.expectations, columns=["expectation", "passed", "failed"]).to_pylist()
    return sum(r["passed"] + r["failed"] for r in rows if r["expectation"] == VIOLATION_RULES[0].name)


@pytest.fixture(scope="module", params=CONNECTORS)
def ran(request, tmp_path_factory) -> Ran:
    """One load per connector; a continuous run over the first half of the files killed (SIGKILL,
    the whole process group) once its first batch's counts are committed, then the second half
    lands and `--until-idle` drains: the kill comes mid-run however fast the run is."""
    work = tmp_path_factory.mktemp(f"expectations_{request.param}")
    landing = work / "landing"
    manifest = generate(
        GeneratorSettings(
            out=landing, events=EVENTS, event_types=4, drift=0.5, bad=0.0, violations=0.05, seed=21, events_per_file=250
        )
    )
    later = work / "later"
    later.mkdir()
    for landed in manifest["files"][len(manifest["files"]) // 2 :]:
        (landing / landed["name"]).rename(later / landed["name"])
    lake = LakeLayout.at(work / "lake")
    run = ("run", "--lake", str(lake.root), "--landing", str(landing), "--delta", request.param)
    rules = ("--expectations", str(landing / manifest["expectations_file"]))
    with open(work / "killed.err", "wb") as err:
        first = streamops(
            *run,
            *rules,
            "--duration",
            "3600",
            "--trigger",
            "1",
            "--max-files-per-trigger",
            "2",
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        wait_until(lambda: counted_rows(lake) or first.poll() is not None, RUN_TIMEOUT, "the first counts")
        assert first.poll() is None, (work / "killed.err").read_text()[-3000:]
    finally:
        try:
            os.killpg(first.pid, signal.SIGKILL)
        except ProcessLookupError:  # the group ended on its own: the assertion above says why
            pass
        first.wait(timeout=60)
    at_kill = counted_rows(lake)
    for landed in later.iterdir():
        landed.rename(landing / landed.name)
    drained = subprocess.run(
        [sys.executable, "-m", "streamops", *run, *rules, "--until-idle"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
    )
    assert drained.returncode == 0, drained.stderr[-3000:]
    return Ran(lake, landing, manifest, at_kill)


def landed_events(ran: Ran) -> list[dict[str, Any]]:
    return [
        json.loads(line) for f in ran.manifest["files"] for line in (ran.landing / f["name"]).read_bytes().splitlines()
    ]


def dropped_rules(event: dict[str, Any]) -> set[str]:
    """The drop rules an event fails, judged from the line itself."""
    failed = set()
    if event["player"]["id"] is None:
        failed.add("player_id_present")
    if event["event_time"] == FUTURE_EVENT_TIME:
        failed.add("event_time_before_2090")
    return failed


def test_the_kill_came_mid_run(ran):
    assert 0 < ran.rows_counted_at_kill < ran.manifest["events_total"]


def test_each_rule_counts_every_row_of_its_table_once_and_fails_the_manifest_rows(ran):
    rows = read_delta(ran.lake.expectations).to_pylist()
    keys = Counter((r["stream"], r["batch_id"], r["table"], r["expectation"]) for r in rows)
    assert [key for key, n in keys.items() if n > 1] == [], "a batch counted twice"
    failed, seen = Counter(), Counter()
    for r in rows:
        assert r["applicable"] and r["action"] == ACTIONS[r["expectation"]], r
        failed[(r["table"], r["expectation"])] += r["failed"]
        seen[(r["table"], r["expectation"])] += r["passed"] + r["failed"]
    manifest = ran.manifest
    assert {(t, rule): n for t, rules in manifest["violations"].items() for rule, n in rules.items()} == dict(failed)
    assert dict(seen) == {
        (t, rule): entry["events"] for t, entry in manifest["event_types"].items() for rule in ACTIONS
    }


def test_dropped_rows_are_quarantined_with_their_rules_and_nowhere_in_silver(ran):
    expected = {e["event_id"]: (e["event_type"], rules) for e in landed_events(ran) if (rules := dropped_rules(e))}
    quarantined = [r for r in read_delta(ran.lake.bronze_quarantine).to_pylist() if r["reason"] == EXPECTATION_REASON]
    found = {}
    for r in quarantined:
        event = json.loads(r["raw_text"])
        assert event["event_id"] not in found, "quarantined twice"
        found[event["event_id"]] = (r["event_type"], set(r["detail"].split(RULES_SEPARATOR)))
    assert found == expected
    for table, entry in ran.manifest["event_types"].items():
        ids = read_delta(ran.lake.silver(table), columns=["event_id"]).column(0).to_pylist()
        assert len(ids) == entry["events"] - ran.manifest["violations_dropped"][table], table
        assert not set(ids) & set(expected), table


def test_warned_rows_stay_in_silver(ran):
    for table, rules in ran.manifest["violations"].items():
        silver = read_delta(ran.lake.silver(table), columns=["event_id", "context__session__seq"]).to_pylist()
        assert sum(r["context__session__seq"] < 0 for r in silver) == rules["session_seq_not_negative"], table
        ids = [r["event_id"] for r in silver]
        assert len(ids) - len(set(ids)) == rules["one_row_per_event_id"], table
