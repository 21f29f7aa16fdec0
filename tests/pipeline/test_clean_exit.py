"""Commands that succeed exit 0, every time: nothing aborts the process at interpreter exit.

The bug this guards against: `streamops run` printed its summary, then died with SIGABRT
(exit 134, "terminate called without an active exception"). An Arrow thread-pool thread was
still releasing a finished delta-rs scan whose Parquet files were Python objects (deltalake's
default `PyFileSystem`), so it needed the GIL while the main thread was finalizing the
interpreter; CPython ended that thread with `pthread_exit` inside a `noexcept` C++ destructor.
streamops reads every table through `streamops.core.delta_format.read`, which gives Arrow its native local
filesystem. The race is timing-dependent, so the real commands run several times each, in
subprocesses, on fresh lakes (the first run on a new lake aborted most), two at a time so the
machine is busy the way it was when the aborts were seen. The lake-reading loop is where the
race shows most: with the old reads, its script aborted in about a third of the runs.
A run of the real command costs 35-130 s on a 2-core machine (a JVM, and Python worker
processes for every query), so the default is one pair of runs (about 1-2 minutes for the file);
STREAMOPS_CLEAN_EXIT_RUNS / STREAMOPS_CLEAN_EXIT_READS raise the counts for a longer soak.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow.fs as pa_fs
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.core.storage.arrow_filesystem import arrow_filesystem
from streamops.monitor.progress_log import ProgressLog
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

RUNS = int(os.environ.get("STREAMOPS_CLEAN_EXIT_RUNS", "2"))
READS = int(os.environ.get("STREAMOPS_CLEAN_EXIT_READS", "30"))
PARALLEL = 2
RUN_TIMEOUT = 300

# Ends on a scan of every table, right before the interpreter exits: the widest race window.
READ_LAKE = """
import sys
from streamops.pipeline.lake_summary import summarize_lake
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout

lake = LakeLayout.at(sys.argv[1])
summary = summarize_lake(lake)
tables = sorted(log.parent for log in lake.root.local_path.rglob("_delta_log"))
print(summary.bronze_rows, len(tables), sum(read_delta(table).num_rows for table in tables))
"""


def command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=RUN_TIMEOUT)


def assert_clean_exit(result: subprocess.CompletedProcess, what: str) -> None:
    """Exit 0 and no sign of a native abort, with the stderr tail when not."""
    tail = result.stderr[-2000:]
    assert result.returncode == 0, f"{what} exited {result.returncode}:\n{tail}"
    for sign in ("terminate called", "Fatal Python error", "core dumped"):
        assert sign not in result.stderr, f"{what} printed {sign!r}:\n{tail}"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """`streamops run --until-idle` on RUNS new lakes, PARALLEL at a time, all from one landing."""
    work = tmp_path_factory.mktemp("clean-exit")
    landing = work / "landing"
    generate(GeneratorSettings(out=landing, events=300, event_types=4, bad=0.02))
    lakes = [work / f"lake{i}" for i in range(RUNS)]

    def run(lake: Path) -> subprocess.CompletedProcess:
        return command(
            "-m",
            "streamops",
            "run",
            "--lake",
            str(lake),
            "--landing",
            str(landing),
            "--until-idle",
            "--metrics-port",
            "0",
            cwd=work,
        )

    with ThreadPoolExecutor(PARALLEL) as pool:
        return list(zip(lakes, pool.map(run, lakes)))


def test_run_until_idle_exits_0_every_time_on_new_lakes(runs):
    assert len(runs) == RUNS
    for lake, result in runs:
        assert_clean_exit(result, f"streamops run --lake {lake.name}")
        assert "bronze/events" in result.stdout and "silver rows" in result.stdout, result.stdout
        assert DeltaTable(str(LakeLayout.at(lake).bronze_events)).count() > 0


def test_reading_a_lake_then_exiting_exits_0_every_time(runs, tmp_path):
    lake = runs[0][0]
    readers = {
        "the lake-reading script": ("-c", READ_LAKE, str(lake)),
        "streamops status": ("-m", "streamops", "status", "--lake", str(lake)),
    }
    jobs = ["streamops status" if i % 4 == 0 else "the lake-reading script" for i in range(READS)]
    with ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda job: command(*readers[job], cwd=tmp_path), jobs))
    for i, (job, result) in enumerate(zip(jobs, results)):
        assert_clean_exit(result, f"{job} (run {i + 1} of {READS})")
    bronze, tables, rows = map(int, results[1].stdout.split())
    assert bronze > 0 and tables >= 6 and rows > bronze


def test_lake_tables_are_read_without_python_file_objects(runs):
    """The mechanism, without timing: Arrow gets its native filesystem, so no Parquet file of a
    scan owns a Python object that the scan's teardown, on an Arrow thread, needs the GIL for."""
    lake = LakeLayout.at(runs[0][0])
    for path in (lake.bronze_events, lake.query_progress):
        filesystem = arrow_filesystem(path)
        assert isinstance(filesystem, pa_fs.SubTreeFileSystem), filesystem
        assert isinstance(filesystem.base_fs, pa_fs.LocalFileSystem)
    bronze = DeltaTable(str(lake.bronze_events))
    assert read_delta(bronze).num_rows == bronze.count() > 0
    # a partitioned table read pruned by partition: the rows of exactly that partition's files
    progress_log = DeltaTable(str(lake.query_progress))
    files = progress_log.file_uris(file_pruning_predicate=[("event", "=", "progress")])
    rows = ProgressLog(lake.query_progress).read(events=["progress"])
    assert rows.num_rows == sum(pq.ParquetFile(f).metadata.num_rows for f in files) > 0
    assert set(rows.column("event").to_pylist()) == {"progress"}
