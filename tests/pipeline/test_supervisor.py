"""The supervisor on real queries: a failed query is restarted after 1, 2, 4 ... 60 s while the
others keep running, a query stopped by policy (on_incompatible=fail_group) stays stopped, and
failures not caused by any record stop the stream with one line naming the table and the way out.

`QueryRestarts.tick` takes the time from its caller, so the schedule is checked on real Spark
queries (a rate source whose foreachBatch raises) without waiting it out.
"""

from __future__ import annotations

import re
import threading
from typing import Callable

import pytest
from small_landing import event, silver_count, write_events
from waiting import wait_until

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.delta_connector.connector import EmbeddedDelta
from streamops.pipeline.exceptions import IncompatibleSchemaError, PipelineConfigError
from streamops.pipeline.pipeline_events import Unmonitored
from streamops.pipeline.run.query_restarts import MAX_BACKOFF_SECONDS, QueryRestarts, backoff_seconds
from streamops.pipeline.run.supervisor import PipelineSettings, Supervisor
from streamops.pipeline.silver.silver_stream import SilverSettings

BACKOFF_LINE = re.compile(r"restarting in (\d+)s$")


def rate_query(spark, name: str, batch: Callable[[object, int], None]):
    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 5)
        .load()
        .writeStream.queryName(name)
        .foreachBatch(batch)
        .trigger(processingTime="0.2 seconds")
        .start()
    )


def fail(df, batch_id: int) -> None:
    raise ValueError(f"boom at batch {batch_id}")


def keep(df, batch_id: int) -> None:
    df.count()


def failed(restarts: QueryRestarts, name: str) -> bool:
    query = restarts.supervised[name].query
    return query is not None and not query.isActive


def test_backoff_doubles_from_one_second_up_to_a_minute():
    assert [backoff_seconds(n) for n in range(1, 10)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert MAX_BACKOFF_SECONDS == 60


def test_a_failed_query_restarts_after_1_2_4_seconds_while_the_others_keep_running(spark):
    lines: list[str] = []
    failures: dict[str, list[str]] = {}
    restarts = QueryRestarts(failures, lines.append)
    starts: list[float] = []
    now = 0.0

    def start_failing():
        starts.append(now)
        return rate_query(spark, "failing", fail)

    restarts.supervise("failing", start_failing, now)
    restarts.supervise("steady", lambda: rate_query(spark, "steady", keep), now)
    steady = restarts.supervised["steady"].query
    try:
        for backoff in (1, 2, 4):
            wait_until(lambda: failed(restarts, "failing"), 60, "the failing query to stop")
            now += 0.5
            restarts.tick(now)
            entry = restarts.supervised["failing"]
            assert entry.query is None and entry.next_start == now + backoff
            restarts.tick(now + backoff - 0.01)
            assert entry.query is None, "restarted before its backoff passed"
            now += backoff
            restarts.tick(now)
            assert entry.query is not None and len(starts) == entry.failures + 1
        assert starts == [0.0, 1.5, 4.0, 8.5]
        assert [int(m.group(1)) for line in lines if (m := BACKOFF_LINE.search(line))] == [1, 2, 4]
        assert len(failures["failing"]) == 3 and "steady" not in failures
        assert all(line.startswith("ValueError: boom at batch") and "\n" not in line for line in failures["failing"])
        restarts.tick(now + 1)
        assert restarts.supervised["steady"].query is steady and steady.isActive, "the others keep running"
    finally:
        restarts.stop()
    assert not steady.isActive and restarts.supervised == {}


def test_a_query_stopped_by_policy_stays_stopped_and_text_alone_stops_nothing(spark):
    lines: list[str] = []
    failures: dict[str, list[str]] = {}
    restarts = QueryRestarts(failures, lines.append)

    def stop_by_policy(df, batch_id: int) -> None:
        stop = IncompatibleSchemaError("group `held` stopped on an incompatible schema change (a.level)", "held")
        restarts.policy_stopped(stop)
        raise stop

    def only_the_words(df, batch_id: int) -> None:
        raise RuntimeError("group `worded` stopped on an incompatible schema change (a.level)")

    restarts.supervise("held", lambda: rate_query(spark, "held", stop_by_policy), 0.0)
    restarts.supervise("worded", lambda: rate_query(spark, "worded", only_the_words), 0.0)
    try:
        wait_until(lambda: failed(restarts, "held") and failed(restarts, "worded"), 60, "both queries to stop")
        restarts.tick(1.0)
        held, worded = restarts.supervised["held"], restarts.supervised["worded"]
        assert held.held and held.query is None
        assert not worded.held and worded.failures == 1, "a message is not a policy stop: it is retried"
        restarts.tick(1000.0)
        assert held.query is None, "a held query is never restarted"
        assert worded.query is not None
        assert len(failures["held"]) == 1 and "IncompatibleSchemaError" in failures["held"][0]
        assert [line for line in lines if line.startswith("held ")] == [
            f"held stopped (on_incompatible=fail_group): {failures['held'][0]}"
        ]
    finally:
        restarts.stop()


def test_a_query_that_cannot_start_is_retried_like_a_failed_one(spark):
    lines: list[str] = []
    failures: dict[str, list[str]] = {}
    restarts = QueryRestarts(failures, lines.append)
    attempts: list[int] = []

    def start():
        attempts.append(len(attempts))
        if len(attempts) < 3:
            raise PipelineConfigError("the landing directory is not readable yet")
        return rate_query(spark, "late", keep)

    restarts.supervise("late", start, 0.0)
    try:
        entry = restarts.supervised["late"]
        assert entry.query is None and entry.next_start == 1.0
        restarts.tick(1.0)
        assert entry.query is None and entry.next_start == 3.0
        restarts.tick(3.0)
        assert entry.query is not None and entry.query.isActive
        assert failures == {"late": ["the landing directory is not readable yet"] * 2}
        assert [int(m.group(1)) for line in lines if (m := BACKOFF_LINE.search(line))] == [1, 2]
        assert lines[-1] == "late running again (after 2 failed starts or batches)"
    finally:
        restarts.stop()


def test_run_for_holds_a_fail_group_stop_while_the_other_groups_go_on(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "1.ndjson", [event("a", 0, level=1), event("b", 0, level=1)])
    settings = PipelineSettings(
        lake=lake,
        input=LandingInput(landing),
        trigger_seconds=0.5,
        silver=SilverSettings(types_per_group=1, on_incompatible="fail_group"),
    )
    lines: list[str] = []
    supervisor = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lines.append)
    running = threading.Thread(target=supervisor.run_for, args=(None,))
    running.start()
    try:
        wait_until(lambda: silver_count(lake, "a") == 1 and silver_count(lake, "b") == 1, 120, "a and b in silver")
        write_events(landing, "2.ndjson", [event("a", 1, level="L1"), event("b", 1, level=2)])
        wait_until(
            lambda: any(line.startswith("silver_a stopped (on_incompatible=fail_group)") for line in lines),
            120,
            "silver_a to stop on the incompatible change",
        )
        write_events(landing, "3.ndjson", [event("a", 2, level=3), event("b", 2, level=3)])
        wait_until(lambda: silver_count(lake, "b") == 3, 120, "silver_b to go on")
        held = supervisor.supervised["silver_a"]
        assert held.held and held.query is None and held.failures == 0
    finally:
        supervisor.request_stop()
        running.join(60)
    assert silver_count(lake, "a") == 1
    assert list(supervisor.report.failures) == ["silver_a"]
    assert "IncompatibleSchemaError" in supervisor.report.failures["silver_a"][0]
    assert not any(line.startswith("silver_a failed") for line in lines), "a held group is not retried"


def test_a_damaged_table_stops_the_stream_with_one_line_and_is_retried_with_backoff(spark, tmp_path):
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "a.ndjson", [event("click", i, n=i) for i in range(5)])
    settings = PipelineSettings(
        lake=lake, input=LandingInput(landing), trigger_seconds=0.5, silver=SilverSettings(max_files_per_trigger=5)
    )
    assert (
        Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lambda line: None).run_until_idle().failures
        == {}
    )

    newest = max((lake.bronze_events.local_path / "_delta_log").glob("*.json"))
    newest.write_text("not a delta commit\n")
    write_events(landing, "b.ndjson", [event("click", i, n=i) for i in range(5, 10)])
    lines: list[str] = []
    supervisor = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lines.append)
    running = threading.Thread(target=supervisor.run_for, args=(None,))
    running.start()
    try:
        wait_until(lambda: sum(line.startswith("bronze failed") for line in lines) >= 3, 120, "three bronze failures")
    finally:
        supervisor.request_stop()
        running.join(60)
    report = supervisor.report

    bronze = [line for line in lines if line.startswith("bronze failed")]
    for line in bronze:
        assert "\n" not in line and f"`{lake.bronze_events}`" in line, line
        assert "LakeTableError" in line or "TableUnreadableError" in line, line
    backoffs = [int(m.group(1)) for m in (BACKOFF_LINE.search(line) for line in bronze) if m]
    assert backoffs[:3] == [1, 2, 4], bronze
    assert len(report.failures["bronze"]) == len(bronze)


@pytest.fixture(autouse=True)
def no_query_left(spark):
    yield
    assert [q.name for q in spark.streams.active] == []


def test_a_first_offset_write_cut_short_by_a_kill_does_not_stop_the_restart(spark, tmp_path):
    """A SIGKILL between Spark's write of offsets/0 and its rename left `.0.<uuid>.tmp`; Spark 4.2
    then refused to start bronze ("offsets should be empty on batch 0") on every restart."""
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "a.ndjson", [event("click", i, n=i) for i in range(3)])
    offsets = lake.checkpoint("bronze").local_path / "offsets"
    offsets.mkdir(parents=True)
    name = "0.8c9f3e15-e856-443a-9366-9999d5141266.tmp"
    (offsets / f".{name}").write_bytes(b"")
    (offsets / f"..{name}.crc").write_bytes(b"")
    settings = PipelineSettings(lake=lake, input=LandingInput(landing), trigger_seconds=0.5)
    lines: list[str] = []
    report = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lines.append).run_until_idle()
    assert report.failures == {}
    assert silver_count(lake, "click") == 3
    assert "bronze: removed 2 temporary file(s) of an interrupted checkpoint write" in lines
    assert (offsets / "0").exists()


def test_the_streams_that_follow_bronze_poll_it_between_its_triggers(spark, tmp_path):
    """Spark starts processing-time batches on multiples of the interval: on the trigger alone a
    silver batch would start with bronze's and wait a whole interval for its commit."""
    lake, landing = LakeLayout.at(tmp_path / "lake"), tmp_path / "landing"
    write_events(landing, "a.ndjson", [event("click", i, n=i) for i in range(5)])
    settings = PipelineSettings(
        lake=lake, input=LandingInput(landing), trigger_seconds=5.0, silver=SilverSettings(poll_seconds=0.5)
    )
    supervisor = Supervisor(spark, settings, EmbeddedDelta(), Unmonitored(), log=lambda line: None)
    running = threading.Thread(target=supervisor.run_for, args=(None,))
    running.start()
    try:
        wait_until(lambda: silver_count(lake, "click") == 5, 120, "the silver rows")
        intervals = {q.name: q._jsq.streamingQuery().trigger().intervalMs() for q in spark.streams.active}
    finally:
        supervisor.request_stop()
        running.join(60)
    assert intervals == {"bronze": 5000, "management": 500, "silver_g0001": 500}
