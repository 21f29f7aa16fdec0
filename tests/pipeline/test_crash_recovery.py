"""Exactly once across real crashes: `streamops run` is SIGKILLed (driver, JVM and workers)
while batches are in flight, restarted, killed again, and finally drained; every table must
then hold exactly the manifest's rows, none twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

from deltalake import DeltaTable

from pipeline.generator.run import generate
from pipeline.generator.settings import GeneratorSettings
from pipeline.lake_summary import summarize_lake
from streamops.lake_layout import LakeLayout


def start_run(lake: Path, landing: Path, *extra: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "streamops", "run", "--lake", str(lake), "--landing", str(landing),
               "--trigger", "0.5", "--max-files-per-trigger", "2", "--types-per-group", "4", *extra]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)


def table_version(path: Path) -> int:
    return DeltaTable(str(path)).version() if DeltaTable.is_deltatable(str(path)) else -1


def batches_in_flight(lake: LakeLayout) -> list[str]:
    """Checkpoints whose last planned batch has no commit: the kill landed mid-batch."""
    pending = []
    for checkpoint in lake.checkpoint_dirs():
        planned = {int(p.name) for p in (checkpoint / "offsets").glob("[0-9]*")}
        committed = {int(p.name) for p in (checkpoint / "commits").glob("[0-9]*")}
        if planned and max(planned) not in committed:
            pending.append(f"{checkpoint.name}:{max(planned)}")
    return pending


def kill_when(process: subprocess.Popen, ready, timeout: float = 240.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and process.poll() is None and not ready():
        time.sleep(0.2)
    assert process.poll() is None, process.stderr.read().decode()[-2000:]
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=60)


def test_sigkill_at_any_point_then_restart_loses_and_duplicates_nothing(tmp_path):
    landing, lake_dir = tmp_path / "landing", tmp_path / "lake"
    manifest = generate(
        GeneratorSettings(out=landing, events=6000, event_types=12, drift=0.5, bad=0.01, seed=11, events_per_file=200)
    )
    lake = LakeLayout.at(lake_dir)
    in_flight: list[str] = []
    kill_points = [
        lambda: table_version(lake.bronze_events) >= 2,
        lambda: any(table_version(p) >= 1 for p in lake.silver_root.glob("*")) if lake.silver_root.exists() else False,
        lambda: table_version(lake.bronze_events) >= 8,
    ]
    for ready in kill_points:
        kill_when(start_run(lake_dir, landing, "--duration", "600"), ready)
        in_flight += batches_in_flight(lake)
    assert in_flight, "at least one kill should land while a batch is planned but not committed"

    final = start_run(lake_dir, landing, "--until-idle")
    assert final.wait(timeout=600) == 0, final.stderr.read().decode()[-3000:]

    summary = summarize_lake(lake)
    assert summary.bronze_rows == manifest["events_total"]
    assert summary.silver_rows == {t: v["events"] - v["incompatible_rows"] for t, v in manifest["event_types"].items()}
    expected_quarantine = dict(manifest["expected_quarantine"], incompatible_type=manifest["incompatible_rows_total"])
    assert summary.quarantine_by_reason == {k: v for k, v in expected_quarantine.items() if v}
    bronze_ids = DeltaTable(str(lake.bronze_events)).to_pyarrow_table(columns=["event_id"]).column(0).to_pylist()
    assert not [i for i, n in Counter(bronze_ids).items() if n > 1]
    for event_type in manifest["event_types"]:
        ids = DeltaTable(str(lake.silver(event_type))).to_pyarrow_table(columns=["event_id"]).column(0).to_pylist()
        assert len(ids) == len(set(ids)), event_type
    registry = DeltaTable(str(lake.schema_registry)).to_pyarrow_table(columns=["event_type", "variation_hash"]).to_pylist()
    assert len(registry) == len({(r["event_type"], r["variation_hash"]) for r in registry}), "a variation registered twice"
