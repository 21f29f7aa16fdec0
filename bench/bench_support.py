"""What every pipeline benchmark records besides its own figures: the machine, and the CPU and
memory of the whole process tree (Python driver, JVM, Spark's Python workers) while it ran; and
the monitor `streamops run` attaches, for benches that drive the pipeline's writers themselves."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import psutil

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from streamops.core.lake_layout import LakeLike
    from streamops.pipeline.pipeline_events import MonitorEvents

TESTS = Path(__file__).resolve().parent.parent / "tests"


def test_helpers() -> None:
    """Make the test suite's server helpers (a standalone Spark cluster, Spark's event log)
    importable: they are not part of the installed package."""
    if str(TESTS) not in sys.path:
        sys.path.insert(0, str(TESTS))


def machine() -> dict:
    return {
        "cpus": os.cpu_count(),
        "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "python": platform.python_version(),
        "load_average_1m_at_start": round(os.getloadavg()[0], 2),
    }


@dataclass
class TreeUsage:
    """`peak_rss_mb` is the tree's; `peak_rss_mb_by_role` each role's own peak: `driver_python`
    (the root process), `jvm` (java: in local mode the driver and executors in one JVM) and
    `python_workers` (the other Python processes: Spark's workers, data source planners).

    A sum of RSS counts every page shared between processes once per process: the libraries
    (libarrow, libpython, delta-rs) each Python worker maps, and what a forked worker shares
    with its daemon. The PSS figures (proportional set size, Linux) share such a page among the
    processes that map it, so their sum is the physical memory the tree holds."""

    peak_rss_mb: float = 0.0
    cpu_percent_samples: list[float] = field(default_factory=list)
    peak_rss_mb_by_role: dict[str, float] = field(default_factory=dict)
    peak_pss_mb: float = 0.0
    peak_pss_mb_by_role: dict[str, float] = field(default_factory=dict)

    @property
    def mean_cpu_percent(self) -> float:
        samples = self.cpu_percent_samples
        return round(sum(samples) / len(samples), 1) if samples else 0.0


class ProcessTreeSampler:
    """Samples a process (`root`, default this one) and all its descendants every `interval`
    seconds, in a thread; PSS every `pss_interval` seconds (default: every sample). Reading PSS
    makes the kernel walk each process's page tables: 35 ms for a pipeline's JVM, 300 ms of wall
    time for its 27 processes on a busy machine, taken from the cores being measured."""

    def __init__(
        self,
        interval: float = 0.5,
        exclude: set[int] | None = None,
        root: int | None = None,
        skip_java: bool = False,
        pss_interval: float | None = None,
    ) -> None:
        self.root = root
        self.skip_java = skip_java
        self.interval = interval
        self.pss_interval = interval if pss_interval is None else pss_interval
        self.exclude = exclude if exclude is not None else set()
        self.usage = TreeUsage()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._known: dict[int, psutil.Process] = {}

    def __enter__(self) -> ProcessTreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _tree(self) -> list[psutil.Process]:
        try:
            root = psutil.Process(self.root)
            processes = [root] + root.children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        processes = [p for p in processes if p.pid not in self.exclude and not (self.skip_java and _is_java(p))]
        for process in processes:
            self._known.setdefault(process.pid, process)
        return [self._known[p.pid] for p in processes]

    def _run(self) -> None:
        for process in self._tree():
            process.cpu_percent(None)
        root = self.root or os.getpid()
        pss_due = 0.0
        while not self._stop.wait(self.interval):
            cpu = 0.0
            rss: dict[str, float] = {}
            pss: dict[str, float] = {}
            with_pss = time.monotonic() >= pss_due
            if with_pss:
                pss_due = time.monotonic() + self.pss_interval
            for process in self._tree():
                try:
                    used = process.memory_info().rss
                    cpu += process.cpu_percent(None)
                except psutil.NoSuchProcess:
                    continue
                role = _role(process, root)
                rss[role] = rss.get(role, 0.0) + used / 2**20
                if with_pss:
                    pss[role] = pss.get(role, 0.0) + _pss_bytes(process.pid) / 2**20
            self.usage.peak_rss_mb = max(self.usage.peak_rss_mb, sum(rss.values()))
            self.usage.peak_pss_mb = max(self.usage.peak_pss_mb, sum(pss.values()))
            _keep_peaks(self.usage.peak_rss_mb_by_role, rss)
            _keep_peaks(self.usage.peak_pss_mb_by_role, pss)
            self.usage.cpu_percent_samples.append(cpu)


def _keep_peaks(peaks: dict[str, float], sample: dict[str, float]) -> None:
    for role, mb in sample.items():
        peaks[role] = round(max(peaks.get(role, 0.0), mb))


def _pss_bytes(pid: int) -> int:
    """The process's PSS from /proc/PID/smaps_rollup (0 once it has ended)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as rollup:
            for line in rollup:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return 0


def _role(process: psutil.Process, root: int) -> str:
    return "driver_python" if process.pid == root else "jvm" if _is_java(process) else "python_workers"


def _is_java(process: psutil.Process) -> bool:
    try:
        return process.name() == "java"
    except psutil.NoSuchProcess:
        return False


def timed(function, *args, **kwargs) -> tuple[float, TreeUsage, object]:
    with ProcessTreeSampler() as sampler:
        started = time.perf_counter()
        result = function(*args, **kwargs)
        seconds = time.perf_counter() - started
    return seconds, sampler.usage, result


@dataclass(frozen=True)
class MeasuredRun:
    """A command run to its end: when it started (`time.time()`, to compare with file times such
    as a table's last commit), the CPU seconds of its whole tree, and its memory."""

    started: float
    cpu_seconds: float
    usage: TreeUsage


def run_measured(
    argv: list[str], timeout: float = 3600, interval: float = 0.5, env: dict[str, str] | None = None
) -> MeasuredRun:
    """Run `argv` as a benchmark variant (in `env`, default this process's environment); a failed
    run ends the benchmark with its stderr's tail. Its CPU is summed from the tree's samples: a
    PySpark program exits without waiting for its JVM, so the children's rusage would leave the
    JVM out."""
    started = time.time()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    with ProcessTreeSampler(interval=interval, root=process.pid) as sampler:
        _, stderr = process.communicate(timeout=timeout)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} ... exited {process.returncode}: {stderr[-3000:]}")
    cpu = sum(sampler.usage.cpu_percent_samples) * interval / 100
    return MeasuredRun(started, round(cpu, 1), sampler.usage)


def cpu_seconds_by_role(root: int | None = None, exclude: set[int] | frozenset[int] = frozenset()) -> dict[str, float]:
    """CPU seconds (user + system) used so far by a process tree, by the roles of TreeUsage;
    the difference of two readings is what ran in between (processes that ended in between are
    not counted: Spark keeps its JVM and reuses its Python workers)."""
    process = psutil.Process(root)
    totals = {"driver_python": 0.0, "jvm": 0.0, "python_workers": 0.0}
    for member in [process] + process.children(recursive=True):
        if member.pid in exclude:
            continue
        try:
            times = member.cpu_times()
        except psutil.NoSuchProcess:
            continue
        totals[_role(member, process.pid)] += times.user + times.system
    return totals


@contextmanager
def product_monitor(spark: SparkSession, lake: LakeLike, delta: str = "embedded") -> Iterator[MonitorEvents]:
    """The monitor `streamops run` attaches to every run (pipeline/run/pipeline_run.py's
    `_run_with`): a StreamMonitor on `lake`'s progress log, its listener on `spark`, no
    exporter (as without `--metrics-port`), started before the writers run and stopped after
    them. Yields the `MonitorEvents` that bronze and silver writers report their commits to."""
    from streamops.monitor.stream_monitor import StreamMonitor
    from streamops.pipeline.pipeline_events import MonitorEvents

    monitor = StreamMonitor(spark, lake, delta_connector=delta)
    monitor.start()
    try:
        yield MonitorEvents(monitor)
    finally:
        monitor.stop()
