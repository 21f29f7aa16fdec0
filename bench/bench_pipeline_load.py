"""Sustained load through bronze and silver: the seed's 8,000 events/s over 300 event types.

The pipeline runs as `streamops run` runs it: through its entry point (`run_pipeline`, in a
thread of this process), on the SparkSession it builds and stops, with the monitor it attaches
to every run (a StreamMonitor on the lake's progress log, no exporter as without
`--metrics-port`); the JSON says so (`"monitor": "attached"`).

Once the pipeline's queries are up (continuous triggers), a generator process writes one file
per second at `--rate` for `--duration` seconds; then the pipeline gets up to `--drain` seconds
until every generated event is in silver or the silver quarantine (how long that took is reported).
Reported per layout (grouped queries, and the seed's one query per event type):
- throughput: events generated, events in silver when generation ended, and the seconds after
  that until every event was accounted for (silver rows + quarantined rows = events generated);
- freshness: for every silver row, the timestamp of the Delta commit that added its file minus
  its event time (p50/p95/max, and over the last minute of generation), and the same for bronze's
  rows over that minute (the first hop alone);
- silver batch time: how long each silver batch that read rows took (Spark's `triggerExecution`,
  from the progress log the monitor kept), p50/p95/max over generation and its last minute;
- CPU and memory of the pipeline's process tree (driver, JVM, Python workers).

    python bench/bench_pipeline_load.py --rate 8000 --duration 300 --layouts grouped,per_type

With `--rates` (a list) each layout runs at each rate in turn, and the output names the highest
rate the pipeline kept up with (every event accounted for within three trigger intervals after
generation ended) and the highest that also kept the p95 freshness over the last minute of
generation within `--freshness-goal`. The generator is a process of its own on the same cores
(about 11 µs of CPU per event), not counted in the pipeline's CPU.

    python bench/bench_pipeline_load.py --rates 8000,12000,16000,20000,25000 --duration 120 --layouts grouped

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from bench_support import ProcessTreeSampler, cpu_seconds_by_role, machine

from streamops.core.delta_format.commit_metadata import BatchCommitInfo
from streamops.core.delta_format.log import DeltaLog
from streamops.core.delta_format.read import is_table
from streamops.core.lake_layout import LakeLayout
from streamops.monitor.progress_log import ProgressLog
from streamops.monitor.progress_record import PHASE_COLUMNS
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.expectations.rules import NO_EXPECTATIONS, Expectation, ExpectationSet
from streamops.pipeline.lake_summary import summarize_lake
from streamops.pipeline.registry.event_groups import DEFAULT_TYPES_PER_GROUP
from streamops.pipeline.run.pipeline_run import RunOptions, run_pipeline
from streamops.pipeline.run.supervisor import RunReport, Supervisor
from streamops.pipeline.silver.silver_stream import POLL_SECONDS, SilverSettings


def latencies(lake: LakeLayout, since: float | None = None) -> list[float]:
    """Seconds from event time to the silver batch commit that added the row, for every silver
    row; commits that are not a stream's batch (maintenance) are skipped, and so is a table whose
    first batch a stop interrupted (a folder without commits)."""
    tables = sorted(t for t in lake.silver_root.iterdir() if is_table(t)) if lake.silver_root.is_dir() else []
    return sorted(v for table in tables for v in table_latencies(table, "_event_time", since))


def table_latencies(table: Path, time_column: str, since: float | None = None) -> list[float]:
    """Seconds from each row's `time_column` to the stream batch commit that added its file."""
    values: list[float] = []
    log = DeltaLog(table)
    for version in range(0, log.latest_version() + 1):
        commit = log.commit(version)
        if BatchCommitInfo.from_commit_info(commit.commit_info) is None:
            continue
        committed = (commit.timestamp_ms or 0) / 1000.0
        if since is not None and committed < since:
            continue
        for add in commit.data_adds:
            times = pq.read_table(table / add.path, columns=[time_column]).column(time_column)
            micros = pc.cast(pc.cast(times, pa.timestamp("us", tz="UTC")), pa.int64())
            values.extend(committed - m / 1e6 for m in micros.to_pylist() if m is not None)
    return values


def quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"p50": None, "p95": None, "max": None}
    pick = lambda q: round(values[min(len(values) - 1, int(q * (len(values) - 1)))], 2)  # noqa: E731
    return {"p50": pick(0.50), "p95": pick(0.95), "max": round(values[-1], 2)}


def silver_batch_seconds(lake: LakeLayout, windows: dict[str, tuple[float, float]]) -> dict[str, dict]:
    """Per window name: seconds each silver batch that read rows took (Spark's
    `triggerExecution`), for batches that started in the window's [since, until): read back,
    once, from the progress log the monitor kept, so it is what `streamops` users see of their
    own batches."""
    log = ProgressLog(lake.query_progress)
    trigger = PHASE_COLUMNS["triggerExecution"]
    rows = (
        log.read(columns=["stream", "timestamp", "num_input_rows", "batch_duration_ms", trigger], events=["progress"])
        if log.exists()
        else None
    )
    batches = [
        (row["timestamp"].timestamp(), (row[trigger] or row["batch_duration_ms"]) / 1000.0)
        for row in (rows.to_pylist() if rows is not None else [])
        if row["stream"].startswith("silver_") and row["num_input_rows"]
    ]
    return {
        name: quantiles(sorted(seconds for started, seconds in batches if since <= started < until))
        for name, (since, until) in windows.items()
    }


def accounted(lake: LakeLayout) -> int:
    summary = summarize_lake(lake)
    return sum(summary.silver_rows.values()) + sum(summary.quarantine_by_reason.values())


def wait_until_accounted(lake: LakeLayout, events: int, timeout: float) -> float | None:
    """Seconds until every event is in silver or quarantine; None if `timeout` passed first."""
    started = time.time()
    while time.time() - started < timeout:
        if accounted(lake) >= events:
            return round(time.time() - started, 1)
        time.sleep(2)
    return None


RULE_TEMPLATES = (
    {"expect": "event_id IS NOT NULL"},
    {"expect": "_event_time < timestamp'2090-01-01'"},
    {"expect": "_event_time > timestamp'2000-01-01'"},
    {"expect": "player__id IS NOT NULL"},
    {"expect": "context__session__seq >= 0"},
    {"expect": "length(event_id) > 8"},
    {"expect": "_source_file IS NOT NULL"},
    {"unique": ("event_id",)},
    {"expect": "player__id <> ''"},
    {"expect": "context__session__seq < 1000000000"},
)
"""Rules over the generator's columns (a table without a column reports its rules not applicable)."""


def default_rules(count: int) -> ExpectationSet:
    """`count` warn rules for every silver table (`--rules`), the templates in turn."""
    if not count:
        return NO_EXPECTATIONS
    rules = [Expectation(f"rule_{n}", "warn", **RULE_TEMPLATES[n % len(RULE_TEMPLATES)]) for n in range(count)]
    return ExpectationSet(default=tuple(rules))


def spark_jobs_per_batch(supervisor: Supervisor) -> dict[str, float]:
    """Spark jobs per micro-batch of each running query, from Spark's status tracker: a query's
    batches run under its run id as the job group. Its recent progress names the batches."""
    tracker = supervisor.spark.sparkContext.statusTracker()
    per_batch = {}
    for query in supervisor.spark.streams.active:
        batches = {p.batchId for p in query.recentProgress if p.numInputRows}
        if batches:
            per_batch[query.name] = round(len(tracker.getJobIdsForGroup(str(query.runId))) / len(batches), 2)
    return per_batch


class PipelineThread:
    """`run_pipeline(options)` in a thread, as `streamops run` runs it (its Spark, its monitor):
    `started()` returns the Supervisor once its queries are up, `stop()` asks it to stop and
    waits until the run has stopped everything it started (queries, monitor, Spark)."""

    def __init__(self, options: RunOptions) -> None:
        self.supervisor: Supervisor | None = None
        self.report: RunReport | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(options,), daemon=True)
        self._thread.start()

    def _run(self, options: RunOptions) -> None:
        try:
            self.report = run_pipeline(options, on_start=self._on_start)
        except BaseException as error:  # noqa: BLE001 - raised in the bench's thread by started()/stop()
            self.error = error

    def _on_start(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def started(self, stream: str = "management") -> Supervisor:
        """The Supervisor, once it supervises `stream` (bronze's query is started before it)."""
        while self.supervisor is None or stream not in self.supervisor.supervised:
            if not self._thread.is_alive():
                raise SystemExit(f"the pipeline ended before its queries started: {self.error!r}")
            time.sleep(0.5)
        return self.supervisor

    def stop(self, timeout: float = 300) -> RunReport | None:
        if self.supervisor is not None:
            self.supervisor.request_stop()
        self._thread.join(timeout=timeout)
        if self.error is not None:
            raise self.error
        return self.report


def run_layout(
    root: Path,
    layout: str,
    rate: int,
    duration: int,
    drain: int,
    trigger: float,
    event_types: int,
    types_per_group: int,
    delta: str = "embedded",
    silver_poll: float = POLL_SECONDS,
    rules: int = 0,
) -> dict:
    landing, lake = root / layout / "landing", LakeLayout.at(root / layout / "lake")
    landing.mkdir(parents=True)
    types_per_group = 1 if layout == "per_type" else types_per_group
    options = RunOptions(
        lake=lake,
        input=LandingInput(landing, max_files_per_trigger=1000),
        trigger_seconds=trigger,
        silver=SilverSettings(types_per_group=types_per_group, max_files_per_trigger=1000, poll_seconds=silver_poll),
        delta=delta,
        expectations=default_rules(rules),
    )
    run = PipelineThread(options)
    supervisor = run.started()
    generator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "streamops",
            "generate",
            "--out",
            str(landing),
            "--events",
            str(rate * duration),
            "--rate",
            str(rate),
            "--event-types",
            str(event_types),
            "--bad",
            "0",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    started = time.time()
    # PSS every 5 s: the pipeline runs in this process, on the cores the sampler would take from it
    with ProcessTreeSampler(interval=1.0, exclude={generator.pid}, pss_interval=5.0) as sampler:
        cpu_before = cpu_seconds_by_role(exclude={generator.pid})
        generator.wait()
        generated_at = time.time()
        cpu_after = cpu_seconds_by_role(exclude={generator.pid})
        in_silver_when_generated = sum(summarize_lake(lake).silver_rows.values())
        caught_up_after = wait_until_accounted(lake, events=rate * duration, timeout=drain)
        jobs_per_batch = spark_jobs_per_batch(supervisor)
        report = run.stop()
    summary = summarize_lake(lake)
    events = rate * duration
    return {
        "layout": layout,
        "delta": delta,
        "rate": rate,
        "event_types": event_types,
        "types_per_group": types_per_group,
        "rules_per_table": rules,
        "spark_jobs_per_batch": jobs_per_batch,
        "silver_queries": len(summary.groups),
        "events_generated": events,
        "generation_seconds": round(generated_at - started, 1),
        "silver_rows_when_generation_ended": in_silver_when_generated,
        "silver_rows_at_end": sum(summary.silver_rows.values()),
        "quarantined_at_end": sum(summary.quarantine_by_reason.values()),
        "all_accounted_seconds_after_generation": caught_up_after,
        "sustained_events_per_s": round(in_silver_when_generated / (generated_at - started)),
        "freshness_seconds": quantiles(latencies(lake)),
        "freshness_last_minute_of_generation": quantiles(latencies(lake, since=generated_at - 60)),
        **silver_batch_seconds(
            lake,
            {
                "silver_batch_seconds_during_generation": (started, generated_at),
                "silver_batch_seconds_last_minute_of_generation": (generated_at - 60, generated_at),
            },
        ),
        "bronze_freshness_last_minute_of_generation": quantiles(
            sorted(table_latencies(Path(str(lake.bronze_events)), "event_time", since=generated_at - 60))
        ),
        "peak_rss_mb": round(sampler.usage.peak_rss_mb),
        "peak_rss_mb_by_role": sampler.usage.peak_rss_mb_by_role,
        "peak_pss_mb": round(sampler.usage.peak_pss_mb),
        "peak_pss_mb_by_role": sampler.usage.peak_pss_mb_by_role,
        "mean_cpu_percent": sampler.usage.mean_cpu_percent,
        "cores_used_during_generation_by_role": {
            role: round((cpu_after[role] - cpu_before[role]) / (generated_at - started), 2) for role in cpu_after
        },
        "failures": (report or supervisor.report).failures,
        "bronze_rows": summary.bronze_rows,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rate", type=int, default=8000)
    parser.add_argument("--rates", help="comma-separated rates to run in turn (overrides --rate)")
    parser.add_argument("--freshness-goal", type=float, default=15.0, help="seconds, p95, with --rates")
    parser.add_argument("--duration", type=int, default=300)
    parser.add_argument("--drain", type=int, default=300)
    parser.add_argument("--trigger", type=float, default=5.0)
    parser.add_argument("--layouts", default="grouped,per_type")
    parser.add_argument("--event-types", type=int, default=300)
    parser.add_argument("--types-per-group", type=int, default=DEFAULT_TYPES_PER_GROUP, help="grouped layout")
    parser.add_argument("--delta", choices=("embedded", "native"), default="embedded", help="the Delta connector")
    parser.add_argument(
        "--silver-poll", type=float, default=POLL_SECONDS, help="seconds, as `streamops run --silver-poll`"
    )
    parser.add_argument("--rules", type=int, default=0, help="warn rules on every silver table (expectations)")
    args = parser.parse_args()
    info = machine()
    rates = [int(r) for r in args.rates.split(",")] if args.rates else [args.rate]
    with tempfile.TemporaryDirectory(prefix="bench-load-") as scratch:
        results = [
            run_layout(
                Path(scratch) / str(rate),
                layout,
                rate,
                args.duration,
                args.drain,
                args.trigger,
                args.event_types,
                args.types_per_group,
                args.delta,
                args.silver_poll,
                args.rules,
            )
            for rate in rates
            for layout in args.layouts.split(",")
        ]
    report = {
        "benchmark": "pipeline_load",
        "machine": info,
        "monitor": "attached",
        "rates": rates,
        "duration_seconds": args.duration,
        "trigger_seconds": args.trigger,
        "silver_poll_seconds": args.silver_poll,
        "results": results,
    }
    if args.rates:
        report.update(
            freshness_goal_seconds=args.freshness_goal,
            highest_sustained_rate=highest_sustained(results, args.trigger, args.freshness_goal),
        )
    print(json.dumps(report, indent=2))


def highest_sustained(results: list[dict], trigger: float, goal: float) -> dict[str, dict[str, int | None]]:
    """Per layout, the highest rate the pipeline kept up with (every event accounted for within
    three trigger intervals after generation ended: a backlog would take longer to drain), and
    the highest that also kept the last minute's p95 freshness within `goal`."""
    best: dict[str, dict[str, int | None]] = {}
    for result in results:
        after = result["all_accounted_seconds_after_generation"]
        kept_up = after is not None and after <= 3 * trigger
        p95 = result["freshness_last_minute_of_generation"]["p95"]
        fresh = kept_up and p95 is not None and p95 <= goal
        layout = best.setdefault(result["layout"], {"kept_up": None, "within_freshness_goal": None})
        for key, passed in (("kept_up", kept_up), ("within_freshness_goal", fresh)):
            if passed:
                layout[key] = max(layout[key] or 0, result["rate"])
    return best


if __name__ == "__main__":
    main()
