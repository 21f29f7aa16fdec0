"""`streamops demo`: everything streamops does, running on this machine, from one command.

A drifting load (the generator, with bad records) lands NDJSON files at a steady rate (or, with
`kafka_bootstrap`, produces them to a Kafka topic that bronze reads); the pipeline ingests them
with the monitor and its Prometheus exporter; the ops console serves the lake. Ctrl-C (or the
end of `--duration`) stops the load, the pipeline (its queries, the monitor and the exporter)
and the console, and exits 0.

The load runs as back-to-back generator runs ("cycles") of `cycle_seconds` each, so the drift
(new attributes, widening, an incompatible type change, a new event type) shows within minutes
and then repeats: every cycle replays the same run (same seed), so the registry learns nothing
new after the first cycle and `event_id`s repeat once per cycle. The console is a separate
process (`python -m streamops console`): the pipeline package never imports the dashboards.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TextIO

from streamops.core.lake_layout import DELTA_LOG_DIR, LakeLayout
from streamops.pipeline.delta_connector.connector import ConnectorName
from streamops.pipeline.exceptions import DemoError
from streamops.pipeline.expectations.rules import NO_EXPECTATIONS, ExpectationSet
from streamops.pipeline.generator.event_catalog import MAX_EVENT_TYPES
from streamops.pipeline.generator.kafka_writer import KafkaTarget
from streamops.pipeline.generator.load_feed import KafkaFeed, LandingFeed, LoadFeed
from streamops.pipeline.generator.run import Progress, generate
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.run.stop_signals import StopSignals

HOST = "127.0.0.1"
CONSOLE_START_SECONDS = 90
STOP_WAIT_SECONDS = 20
DEMO_TOPIC = "streamops-demo"
DEMO_PARTITIONS = 4
"""Partitions of the demo's topic when the demo creates it: enough for bronze to read in parallel."""
DEMO_CONSUMER_GROUP = "streamops-demo"


@dataclass(frozen=True)
class DemoOptions:
    workdir: Path
    rate: float = 2000.0
    event_types: int = 50
    duration: float | None = None
    console_port: int = 8501
    metrics_port: int = 9108
    cycle_seconds: float = 300.0
    drift: float = 0.2
    bad: float = 0.005
    trigger_seconds: float = 5.0
    types_per_group: int = 16
    delta: ConnectorName = "embedded"
    kafka_bootstrap: str | None = None
    """Produce the load to a Kafka topic at these brokers, and have bronze read it, instead of
    landing files."""
    topic: str | None = None
    expectations: ExpectationSet = NO_EXPECTATIONS
    """Data-quality rules the pipeline checks on every batch (`--expectations FILE`)."""

    def __post_init__(self) -> None:
        if self.topic is not None and self.kafka_bootstrap is None:
            raise DemoError("--topic needs --kafka-bootstrap HOST:PORT")
        if not self.rate > 0:
            raise DemoError(f"--rate must be a positive number of events/s, got {self.rate}")
        if not 1 <= self.event_types <= MAX_EVENT_TYPES:
            raise DemoError(f"--event-types must be between 1 and {MAX_EVENT_TYPES}, got {self.event_types}")
        if self.duration is not None and not self.duration > 0:
            raise DemoError(f"--duration must be a positive number of seconds, got {self.duration}")
        for name, port in (("--console-port", self.console_port), ("--metrics-port", self.metrics_port)):
            if not 0 < port < 65536:
                raise DemoError(f"{name} must be between 1 and 65535, got {port}")
        if self.console_port == self.metrics_port:
            raise DemoError("--console-port and --metrics-port must differ")

    def feed(self, workdir: Path) -> LoadFeed:
        """Where the load goes: `workdir`'s landing, or the demo's topic (created with
        DEMO_PARTITIONS partitions when missing)."""
        if self.kafka_bootstrap is None:
            return LandingFeed(workdir / "landing")
        return KafkaFeed(
            KafkaTarget(self.kafka_bootstrap, self.topic or DEMO_TOPIC, DEMO_PARTITIONS), DEMO_CONSUMER_GROUP
        )

    @property
    def cycle_length(self) -> float:
        """A run shorter than a cycle still shows every drift stage: the cycle fits the run."""
        return self.cycle_seconds if self.duration is None else min(self.cycle_seconds, self.duration)


class _LoadStopped(Exception):
    """Raised from the generator's per-file callback to end a cycle early when the demo stops."""


class DriftingLoad(threading.Thread):
    """Generator runs, back to back, each file published to the feed as soon as it is written
    (generator/load_feed.py).

    A cycle writes into its own staging directory (the generator refuses to mix runs in one
    directory). A failed load stops the demo (`on_failure`): a pipeline with no input would only
    look healthy.
    """

    def __init__(
        self,
        options: DemoOptions,
        feed: LoadFeed,
        staging: Path,
        stop: threading.Event,
        on_failure: Callable[[], None],
    ) -> None:
        super().__init__(name="streamops-demo-load", daemon=True)
        self.options, self.feed, self.staging, self.stop = options, feed, staging, stop
        self.on_failure = on_failure
        self.lines = 0
        self.files = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        cycle = self.feed.next_cycle()
        try:
            while not self.stop.is_set():
                out = self.staging / f"cycle-{cycle:04d}"
                shutil.rmtree(out, ignore_errors=True)
                settings = GeneratorSettings(
                    out=out,
                    events=max(1, round(self.options.rate * self.options.cycle_length)),
                    event_types=self.options.event_types,
                    drift=self.options.drift,
                    bad=self.options.bad,
                    rate=self.options.rate,
                    target=self.feed.target,
                )
                try:
                    generate(settings, on_file=lambda progress, c=cycle: self._publish(progress, out, c))
                except _LoadStopped:
                    break
                cycle += 1
        except BaseException as error:  # noqa: BLE001 - reported by the demo, which then stops
            self.error = error
            self.on_failure()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)

    def _publish(self, progress: Progress, out: Path, cycle: int) -> None:
        self.feed.publish(out / progress.file.name, cycle)
        self.files += 1
        self.lines += progress.file.lines
        if self.stop.is_set():
            raise _LoadStopped()


class ConsoleProcess:
    """`streamops console` in its own process group, so Ctrl-C reaches it only through us."""

    def __init__(self, lake: LakeLayout, port: int, log: Path) -> None:
        self.url = f"http://{HOST}:{port}"
        self._log = open(log, "ab")
        self._process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "streamops",
                "console",
                "--lake",
                str(lake.root),
                "--port",
                str(port),
                "--host",
                HOST,
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self._log_path = log

    def wait_until_serving(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                tail = self._log_path.read_text(errors="replace").strip().splitlines()[-1:]
                raise DemoError(f"the console did not start: {' '.join(tail) or 'no output'} (log: {self._log_path})")
            if _answers(self.url + "/_stcore/health"):
                return
            time.sleep(0.5)
        raise DemoError(f"the console did not answer on {self.url} within {timeout:.0f}s (log: {self._log_path})")

    def stop(self) -> None:
        if self._process.poll() is None:
            os.killpg(self._process.pid, signal.SIGTERM)
            try:
                self._process.wait(STOP_WAIT_SECONDS)
            except subprocess.TimeoutExpired:
                os.killpg(self._process.pid, signal.SIGKILL)
                self._process.wait(STOP_WAIT_SECONDS)
        self._log.close()


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return answer.status == 200
    except OSError:
        return False


def first_silver_table(lake: LakeLayout) -> str | None:
    if not lake.silver_root.is_dir():
        return None
    return next((p.name for p in sorted(lake.silver_root.iterdir()) if (p / DELTA_LOG_DIR).is_dir()), None)


class Announcer(threading.Thread):
    """Prints the URLs once the console and the metrics endpoint answer, then the first silver
    commit: what a newcomer waits for."""

    def __init__(
        self,
        console: ConsoleProcess,
        metrics_url: str,
        lake: LakeLayout,
        started: float,
        stop: threading.Event,
        on_failure: Callable[[], None],
        out: TextIO,
        feed: LoadFeed,
    ) -> None:
        super().__init__(name="streamops-demo-announcer", daemon=True)
        self.console, self.metrics_url, self.lake, self.started = console, metrics_url, lake, started
        self.stop, self.on_failure, self.out, self.feed = stop, on_failure, out, feed
        self.error: DemoError | None = None

    def run(self) -> None:
        try:
            self.console.wait_until_serving(CONSOLE_START_SECONDS)
        except DemoError as error:
            self.error = error
            self.on_failure()
            return
        while not self.stop.is_set() and not _answers(self.metrics_url):
            self.stop.wait(0.5)
        if self.stop.is_set():
            return
        self._say(banner(self.console.url, self.metrics_url, self.lake, time.monotonic() - self.started, self.feed))
        while not self.stop.is_set():
            table = first_silver_table(self.lake)
            if table is not None:
                seconds = time.monotonic() - self.started
                self._say(f"first silver commit ({self.lake.silver(table)}) {seconds:.0f}s after start")
                return
            self.stop.wait(0.5)

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def banner(console_url: str, metrics_url: str, lake: LakeLayout, seconds: float, feed: LoadFeed) -> str:
    """What to open and what to try; with Kafka, the doctor also asks the brokers, and Kafka's
    own tool sees bronze's consumer group."""
    root = lake.root
    topic, group = feed.notes()
    return "\n".join(
        [
            "",
            f"streamops demo is running ({seconds:.0f}s to start; Ctrl-C stops it)",
            f"  console   {console_url}",
            f"  metrics   {metrics_url}",
            f"  lake      {root}",
            *topic,
            "try, in another terminal:",
            f"  streamops status --lake {root}",
            f"  streamops checkpoint doctor --lake {root}{feed.doctor_flags()}",
            f"  streamops checkpoint correlate {lake.checkpoint('bronze')} --lake {root} --last 3",
            *group,
            "",
        ]
    )


def run_demo(options: DemoOptions, out: TextIO = sys.stdout) -> int:
    """Run until Ctrl-C/SIGTERM or `options.duration`; 0 when every stream stayed healthy."""
    from streamops.pipeline.lake_summary import summarize_lake
    from streamops.pipeline.run.pipeline_run import RunOptions, run_pipeline
    from streamops.pipeline.silver.silver_stream import SilverSettings

    started = time.monotonic()
    workdir = options.workdir.expanduser().resolve()
    lake, feed = LakeLayout.at(workdir / "lake"), options.feed(workdir)
    lake.root.local_path.mkdir(parents=True, exist_ok=True)
    feed.prepare()
    line_input = feed.line_input()
    with StopSignals() as signals:
        stop, request_stop = signals.event, signals.request_stop
        timer = threading.Timer(options.duration, request_stop) if options.duration else None
        print(
            f"streamops demo: {options.rate:g} events/s of {options.event_types} event types into {line_input.describe()}",
            file=out,
            flush=True,
        )
        console = ConsoleProcess(lake, options.console_port, workdir / "console.log")
        load = DriftingLoad(options, feed, workdir / ".generator", stop, request_stop)
        announcer = Announcer(
            console, f"http://{HOST}:{options.metrics_port}/metrics", lake, started, stop, request_stop, out, feed
        )
        try:
            load.start()
            announcer.start()
            if timer is not None:
                timer.start()
            report = run_pipeline(
                RunOptions(
                    lake=lake.root,
                    input=line_input,
                    trigger_seconds=options.trigger_seconds,
                    metrics_port=options.metrics_port,
                    metrics_host=HOST,
                    silver=SilverSettings(types_per_group=options.types_per_group),
                    delta=options.delta,
                    expectations=options.expectations,
                ),
                on_start=signals.on_start,
            )
        finally:
            stop.set()
            if timer is not None:
                timer.cancel()
            load.join()
            console.stop()
            announcer.join(5)
    if announcer.error is not None:
        raise announcer.error
    if load.error is not None:
        raise DemoError(f"the load generator stopped: {load.error}")
    summary = summarize_lake(lake)
    produced = feed.delivered(load.files)
    print(
        f"streamops demo stopped after {time.monotonic() - started:.0f}s: {load.lines} lines {produced}, "
        f"{summary.bronze_rows} bronze rows, {sum(summary.quarantine_by_reason.values())} quarantined, "
        f"{len(summary.silver_rows)} silver tables, {summary.schema_alerts} schema alerts",
        file=out,
        flush=True,
    )
    for stream, errors in sorted(report.failures.items()):
        print(f"{stream} failed {len(errors)}x, last: {errors[-1]}", file=out, flush=True)
    return 1 if report.failed else 0
