"""`streamops run --master spark://...` on a real standalone cluster (a master and a worker
started from the pip PySpark, executors in their own JVMs and Python workers): every line is
accounted for exactly once, and the driver receives no row data. The proof of the latter: the
driver's process tree (Python, its JVM, the Python worker that makes the commits) peaks at
about the same memory whether its one batch holds 1x or 10x the lines."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import psutil
import pytest
from deltalake import DeltaTable

from pipeline.generator.run import generate
from pipeline.generator.settings import GeneratorSettings
from pipeline.standalone_cluster import StandaloneCluster
from streamops.lake_layout import LakeLayout

SMALL_LINES = 15_000
DRIVER_GROWTH_LIMIT_MB = 120
"""The 10x batch carries ~60 MB more landing text than the 1x one: a driver that collected it
(as Arrow, in the JVM and in Python) would grow by well over twice that."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=1, cores=1) as running:
        yield running


def run_on_cluster(cluster: StandaloneCluster, root: Path, lines: int) -> tuple[dict, dict, float]:
    landing, lake = root / "landing", LakeLayout.at(root / "lake")
    manifest = generate(GeneratorSettings(out=landing, events=lines, event_types=20, drift=0.5, bad=0.01, seed=5))
    command = [sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--landing", str(landing),
               "--master", cluster.master_url, "--until-idle", "--max-files-per-trigger", "1000", "--json"]
    driver = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = [0.0]
    done = threading.Event()

    def sample() -> None:
        root_process = psutil.Process(driver.pid)
        while not done.wait(0.2):
            try:
                tree = [root_process, *root_process.children(recursive=True)]
                peak[0] = max(peak[0], sum(p.memory_info().rss for p in tree if p.is_running()) / 2**20)
            except psutil.NoSuchProcess:
                continue

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = driver.communicate(timeout=900)
    done.set()
    sampler.join()
    assert driver.returncode == 0, stderr[-3000:]
    return manifest, json.loads(stdout), peak[0]


def ids(table: Path) -> Counter:
    return Counter(DeltaTable(str(table)).to_pyarrow_table(columns=["event_id"]).column(0).to_pylist())


def test_a_cluster_run_is_exactly_once_and_the_driver_holds_no_rows(cluster, tmp_path):
    peaks = {}
    for scale in (1, 10):
        root = tmp_path / f"x{scale}"
        manifest, report, peaks[scale] = run_on_cluster(cluster, root, SMALL_LINES * scale)
        lake = LakeLayout.at(root / "lake")
        assert report["failures"] == {}
        quarantine = DeltaTable(str(lake.bronze_quarantine)).to_pyarrow_table(columns=["stream"]).column(0).to_pylist()
        bronze_ids = ids(lake.bronze_events)
        assert sum(bronze_ids.values()) + quarantine.count("bronze") == manifest["lines_total"]
        assert len(bronze_ids) == sum(bronze_ids.values()) == manifest["events_total"], "no duplicate in bronze"
        silver = Counter()
        for event_type in manifest["event_types"]:
            silver.update(ids(lake.silver(event_type)))
        silver_quarantine = sum(1 for stream in quarantine if stream.startswith("silver_"))
        assert sum(silver.values()) + silver_quarantine == sum(bronze_ids.values())
        assert set(silver) == set(bronze_ids) and max(silver.values()) == 1, "no duplicate or loss in silver"
    assert peaks[10] - peaks[1] < DRIVER_GROWTH_LIMIT_MB, peaks
