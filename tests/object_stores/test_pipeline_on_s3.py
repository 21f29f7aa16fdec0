"""`streamops run` with its landing and its lake on S3 (moto's server), on each Delta connector:
two waves of input with a SIGKILL between them, then every line once in bronze or quarantine
and every event once in silver. Spark reads the landing and keeps its checkpoints through S3A;
the embedded connector's tasks write their Parquet files straight to the bucket and the driver
commits through delta-rs; the native one writes through delta-spark on S3A."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from lake_accounting import assert_exactly_once
from store_servers import azure_store, s3_store
from waiting import wait_until

from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.services, pytest.mark.spark]


def test_two_waves_and_a_sigkill_on_s3_lose_and_duplicate_nothing(s3_server, store_env, tmp_path, connector_name):
    store = s3_store(s3_server)
    store_env(store.env)
    prefix = f"pipeline-{connector_name}"
    manifests = [
        generate(GeneratorSettings(out=tmp_path / f"wave{n}", events=1500, event_types=5, bad=0.01, seed=n, drift=0.5))
        for n in (1, 2)
    ]
    landing = store.upload(tmp_path / "wave1", f"{prefix}/landing")
    lake = LakeLayout.at(f"{store.uri_prefix}/{prefix}/lake")
    run = [
        sys.executable, "-m", "streamops", "run", "--lake", str(lake.root), "--landing", landing,
        "--delta", connector_name, "--trigger", "1", "--max-files-per-trigger", "1", "--types-per-group", "3",
    ]  # fmt: skip
    commits = lake.checkpoint(BRONZE_STREAM) / "commits"
    pipeline = subprocess.Popen([*run, "--duration", "3600"], env=os.environ, start_new_session=True)
    try:
        wait_until(
            lambda: commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir()),
            timeout=300,
            what="a bronze batch committed on S3",
        )
    finally:
        os.killpg(pipeline.pid, signal.SIGKILL)
        pipeline.wait(60)

    for path in (tmp_path / "wave2").glob("*.ndjson"):  # the second wave, renamed so its files are new
        path.rename(path.with_name("wave2-" + path.name))
    store.upload(tmp_path / "wave2", f"{prefix}/landing")
    drained = subprocess.run([*run, "--until-idle", "--json"], capture_output=True, text=True, timeout=900)
    assert drained.returncode == 0, drained.stderr[-3000:]

    assert_exactly_once(lake, sum(m["lines_total"] for m in manifests))
    assert not Path(prefix).exists(), "nothing was written to a local folder named after the URI"


def test_a_lake_on_azure_without_spark_s_azure_connector_is_one_line_before_any_batch(azurite, store_env, tmp_path):
    """streamops fetches S3A itself; Azure's and GCS's Hadoop connectors come with the cluster."""
    store = azure_store(azurite)
    store_env(store.env)
    generate(GeneratorSettings(out=tmp_path / "landing", events=100, event_types=2))
    run = subprocess.run(
        [sys.executable, "-m", "streamops", "run", "--lake", f"{store.uri_prefix}/no-connector/lake",
         "--landing", str(tmp_path / "landing"), "--until-idle"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert run.returncode == 2, run.stderr[-3000:]
    errors = [line for line in run.stderr.splitlines() if line.startswith("streamops: error:")]
    assert len(errors) == 1 and "org.apache.hadoop:hadoop-azure" in errors[0], run.stderr[-3000:]
    assert "\tat " not in run.stderr
