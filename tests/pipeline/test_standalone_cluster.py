"""`streamops run --master spark://...` on a real standalone cluster (a master and a worker
started from the pip PySpark, executors in their own JVMs and Python workers): every line is
accounted for exactly once, and the driver receives no row data. The proof of the latter is
measured twice over, with the batch holding 1x and then 10x the lines: what Spark's tasks sent
back to the driver (the "Result Size" of every task in Spark's own event log) stays a sliver of
the landing bytes, and each of the driver's Python processes (the CLI, and the Python workers the
driver's JVM starts: the source's planner, the sink's commit worker) peaks at about the same
memory. Each process role is compared with itself: a sum over the tree counts the pages a forked
worker shares with its daemon once per child, and children come and go (one run peaked 1 GB
above the next that way). The driver JVM's resident size is not the measure either: its heap
grows lazily with whatever the scheduler allocates, by more than the difference at stake here
from one run to the next."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import psutil
import pytest
from spark_event_log import event_log_conf_dir, task_result_bytes
from standalone_cluster import StandaloneCluster

from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]

SMALL_LINES = 15_000
PYTHON_GROWTH_LIMIT_MB = 40
"""The 10x batch carries ~60 MB more landing text than the 1x one: a driver that collected it
as Arrow into Python would grow by more than that."""
RESULT_SHARE_LIMIT = 0.02
"""Task results carry add actions, counts, metrics and new schema variations, whose growth with
the batch is a small share of the added landing bytes; rows would be at least those bytes."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=1, cores=1) as running:
        yield running


def role(process: psutil.Process, driver: int) -> str:
    """`driver` for the CLI, else the module a Python worker runs (and the daemon's worker module)."""
    if process.pid == driver:
        return "driver"
    command = process.cmdline()
    return " ".join(command[2:4]) if command[1:2] == ["-m"] else process.name()


def run_on_cluster(
    cluster: StandaloneCluster, root: Path, lines: int, delta: str = "embedded"
) -> tuple[dict, dict, dict[str, float], int]:
    landing, lake = root / "landing", LakeLayout.at(root / "lake")
    manifest = generate(GeneratorSettings(out=landing, events=lines, event_types=20, drift=0.5, bad=0.01, seed=5))
    conf_dir, events = event_log_conf_dir(root)
    command = [
        sys.executable,
        "-m",
        "streamops",
        "run",
        "--lake",
        str(lake.root),
        "--landing",
        str(landing),
        "--master",
        cluster.master_url,
        "--until-idle",
        "--max-files-per-trigger",
        "1000",
        "--delta",
        delta,
        "--json",
    ]
    environment = {**os.environ, "SPARK_CONF_DIR": str(conf_dir)}
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environment)
    peaks: dict[str, float] = {}
    done = threading.Event()

    def sample() -> None:
        root_process = psutil.Process(driver.pid)
        while not done.wait(0.2):
            try:
                tree = [root_process, *root_process.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            for process in tree:
                try:
                    if process.name() != "java":
                        name = role(process, driver.pid)
                        peaks[name] = max(peaks.get(name, 0.0), process.memory_info().rss / 2**20)
                except psutil.Error:
                    continue

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = driver.communicate(timeout=900)
    done.set()
    sampler.join()
    assert driver.returncode == 0, stderr[-3000:]
    return manifest, json.loads(stdout), peaks, task_result_bytes(events)


def ids(table: Path) -> Counter:
    return Counter(read_delta(str(table), columns=["event_id"]).column(0).to_pylist())


@pytest.mark.parametrize("connector_name", ["embedded", "native"])
def test_a_cluster_run_is_exactly_once_and_the_driver_holds_no_rows(cluster, tmp_path, connector_name):
    peaks, results, landings = {}, {}, {}
    for scale in (1, 10):
        root = tmp_path / f"x{scale}"
        manifest, report, peaks[scale], results[scale] = run_on_cluster(
            cluster, root, SMALL_LINES * scale, connector_name
        )
        landings[scale] = sum(path.stat().st_size for path in (root / "landing").rglob("*") if path.is_file())
        lake = LakeLayout.at(root / "lake")
        assert report["failures"] == {}
        quarantine = read_delta(str(lake.bronze_quarantine), columns=["stream"]).column(0).to_pylist()
        bronze_ids = ids(lake.bronze_events)
        assert sum(bronze_ids.values()) + quarantine.count("bronze") == manifest["lines_total"]
        assert len(bronze_ids) == sum(bronze_ids.values()) == manifest["events_total"], "no duplicate in bronze"
        silver = Counter()
        for event_type in manifest["event_types"]:
            silver.update(ids(lake.silver(event_type)))
        silver_quarantine = sum(1 for stream in quarantine if stream.startswith("silver_"))
        assert sum(silver.values()) + silver_quarantine == sum(bronze_ids.values())
        assert set(silver) == set(bronze_ids) and max(silver.values()) == 1, "no duplicate or loss in silver"
    print(f"python peaks MB {peaks}, task result bytes {results}, landing bytes {landings}")
    assert results[1] > 0
    assert results[10] - results[1] < RESULT_SHARE_LIMIT * (landings[10] - landings[1]), (results, landings)
    assert "driver" in peaks[1] and "driver" in peaks[10]
    grown = {name: round(peaks[10][name] - peaks[1][name]) for name in peaks[1].keys() & peaks[10].keys()}
    assert max(grown.values()) < PYTHON_GROWTH_LIMIT_MB, (grown, peaks)
