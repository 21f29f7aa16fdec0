"""`streamops demo`: everything streamops does, running on this machine, from one command.

A drifting load (the generator, with bad records) lands NDJSON files at a steady rate; the
pipeline ingests them with the monitor and its Prometheus exporter; the ops console serves the
lake. Ctrl-C (or the end of `--duration`) stops the load, the pipeline (its queries, the monitor
and the exporter) and the console, and exits 0.

The load runs as back-to-back generator runs ("cycles") of `cycle_seconds` each, so the drift
(new attributes, widening, an incompatible type change, a new event type) shows within minutes
and then repeats: every cycle replays the same run (same seed), so the registry learns nothing
new after the first cycle and `event_id`s repeat once per cycle. The console is a separate
process (`python -m streamops console`): the pipeline package never imports the dashboards.
"""

from __future__ import annotations

import os
import re
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

from streamops.lake_layout import DELTA_LOG_DIR, LakeLayout
from streamops.pipeline.delta_connector.connector import ConnectorName
from streamops.pipeline.exceptions import DemoError
from streamops.pipeline.generator.event_catalog import MAX_EVENT_TYPES
from streamops.pipeline.generator.run import Progress, generate
from streamops.pipeline.generator.settings import GeneratorSettings

HOST = "127.0.0.1"
CONSOLE_START_SECONDS = 90
STOP_WAIT_SECONDS = 20
CYCLE_FILE = re.compile(r"^c(\d{4})-")


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

    def __post_init__(self) -> None:
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

    @property
    def cycle_length(self) -> float:
        """A run shorter than a cycle still shows every drift stage: the cycle fits the run."""
        return self.cycle_seconds if self.duration is None else min(self.cycle_seconds, self.duration)


class _LoadStopped(Exception):
    """Raised from the generator's per-file callback to end a cycle early when the demo stops."""


class DriftingLoad(threading.Thread):
    """Generator runs, back to back, each file moved into `landing` as soon as it is written.

    A cycle writes into its own staging directory (the generator refuses to mix runs in one
    directory) and each finished file is renamed into landing with the cycle as a prefix, which
    keeps names unique and the arrival atomic for Spark's file source.
    """

    def __init__(self, options: DemoOptions, landing: Path, staging: Path, stop: threading.Event) -> None:
        super().__init__(name="streamops-demo-load", daemon=True)
        self.options, self.landing, self.staging, self.stop = options, landing, staging, stop
        self.lines = 0
        self.files = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        cycle = self._next_cycle()
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
                )
                try:
                    generate(settings, on_file=lambda progress, c=cycle: self._publish(progress, out, c))
                except _LoadStopped:
                    break
                cycle += 1
        except BaseException as error:  # noqa: BLE001 - reported by the demo, which then stops
            self.error = error
            self.stop.set()
        finally:
            shutil.rmtree(self.staging, ignore_errors=True)

    def _publish(self, progress: Progress, out: Path, cycle: int) -> None:
        name = progress.file.name
        os.rename(out / name, self.landing / f"c{cycle:04d}-{name}")
        self.files += 1
        self.lines += progress.file.lines
        if self.stop.is_set():
            raise _LoadStopped()

    def _next_cycle(self) -> int:
        """A demo restarted on the same workdir continues after the cycles already landed."""
        cycles = [int(m.group(1)) for p in self.landing.iterdir() if (m := CYCLE_FILE.match(p.name))]
        return max(cycles, default=0) + 1


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
    ) -> None:
        super().__init__(name="streamops-demo-announcer", daemon=True)
        self.console, self.metrics_url, self.lake, self.started = console, metrics_url, lake, started
        self.stop, self.on_failure, self.out = stop, on_failure, out
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
        self._say(banner(self.console.url, self.metrics_url, self.lake, time.monotonic() - self.started))
        while not self.stop.is_set():
            table = first_silver_table(self.lake)
            if table is not None:
                seconds = time.monotonic() - self.started
                self._say(f"first silver commit ({self.lake.silver(table)}) {seconds:.0f}s after start")
                return
            self.stop.wait(0.5)

    def _say(self, text: str) -> None:
        print(text, file=self.out, flush=True)


def banner(console_url: str, metrics_url: str, lake: LakeLayout, seconds: float) -> str:
    root = lake.root
    return "\n".join(
        [
            "",
            f"streamops demo is running ({seconds:.0f}s to start; Ctrl-C stops it)",
            f"  console   {console_url}",
            f"  metrics   {metrics_url}",
            f"  lake      {root}",
            "try, in another terminal:",
            f"  streamops status --lake {root}",
            f"  streamops checkpoint doctor --lake {root}",
            f"  streamops checkpoint correlate {lake.checkpoint('bronze')} --lake {root} --last 3",
            "",
        ]
    )


def run_demo(options: DemoOptions, out: TextIO = sys.stdout) -> int:
    """Run until Ctrl-C/SIGTERM or `options.duration`; 0 when every stream stayed healthy."""
    from streamops.pipeline.lake_summary import summarize_lake
    from streamops.pipeline.pipeline_run import RunOptions, run_pipeline
    from streamops.pipeline.silver.silver_stream import SilverSettings

    started = time.monotonic()
    workdir = options.workdir.expanduser().resolve()
    lake, landing = LakeLayout.at(workdir / "lake"), workdir / "landing"
    for directory in (lake.root.local_path, landing):
        directory.mkdir(parents=True, exist_ok=True)
    stop = threading.Event()
    supervisors = []

    def request_stop(*_: object) -> None:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C forces the exit
        stop.set()
        for supervisor in supervisors:
            supervisor.request_stop()

    def on_start(supervisor) -> None:
        # SparkContext installs its own SIGINT handler (cancel jobs, raise KeyboardInterrupt)
        # when it starts: take Ctrl-C back, so it stops the queries cleanly instead
        signal.signal(signal.SIGINT, signal.default_int_handler if stop.is_set() else request_stop)
        supervisors.append(supervisor)
        if stop.is_set():
            supervisor.request_stop()

    previous = {sig: signal.signal(sig, request_stop) for sig in (signal.SIGINT, signal.SIGTERM)}
    timer = threading.Timer(options.duration, request_stop) if options.duration else None
    print(
        f"streamops demo: {options.rate:g} events/s of {options.event_types} event types into {landing}",
        file=out,
        flush=True,
    )
    console = ConsoleProcess(lake, options.console_port, workdir / "console.log")
    load = DriftingLoad(options, landing, workdir / ".generator", stop)
    announcer = Announcer(
        console, f"http://{HOST}:{options.metrics_port}/metrics", lake, started, stop, request_stop, out
    )
    try:
        load.start()
        announcer.start()
        if timer is not None:
            timer.start()
        report = run_pipeline(
            RunOptions(
                lake=lake.root,
                landing=landing,
                trigger_seconds=options.trigger_seconds,
                metrics_port=options.metrics_port,
                metrics_host=HOST,
                silver=SilverSettings(types_per_group=options.types_per_group),
                delta=options.delta,
            ),
            on_start=on_start,
        )
    finally:
        stop.set()
        if timer is not None:
            timer.cancel()
        load.join()
        console.stop()
        announcer.join(5)
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if announcer.error is not None:
        raise announcer.error
    if load.error is not None:
        raise DemoError(f"the load generator stopped: {load.error}")
    summary = summarize_lake(lake)
    print(
        f"streamops demo stopped after {time.monotonic() - started:.0f}s: {load.lines} lines in {load.files} files, "
        f"{summary.bronze_rows} bronze rows, {sum(summary.quarantine_by_reason.values())} quarantined, "
        f"{len(summary.silver_rows)} silver tables, {summary.schema_alerts} schema alerts",
        file=out,
        flush=True,
    )
    for stream, errors in sorted(report.failures.items()):
        print(f"{stream} failed {len(errors)}x, last: {errors[-1]}", file=out, flush=True)
    return 1 if report.failures else 0
