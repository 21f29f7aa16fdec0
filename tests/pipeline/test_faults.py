"""Faults beyond SIGKILL, each with the real `streamops run` going: a disk that fills mid-batch,
a second run on the same lake, SIGTERM, a data file of bronze deleted or truncated under silver,
a writer the pipeline does not know. Each ends with one line that says what happened and what to
do, and a restart after the cause is gone loses and duplicates nothing.

The object store that stops answering is in tests/object_stores/test_store_outage.py; the same
faults mixed with SIGKILL over many cycles are bench/bench_chaos.py's."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake
from deltalake.exceptions import CommitFailedError
from lake_accounting import assert_exactly_once, ids, with_event_id
from waiting import wait_until

from streamops.core.delta_format.damaged_files import table_damaged_files
from streamops.core.delta_format.read import read_delta
from streamops.core.lake_layout import BRONZE_STREAM, LakeLayout
from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings

pytestmark = [pytest.mark.e2e, pytest.mark.spark]

RUN_TIMEOUT = 600
JAVA_STACK_LINE = "\tat "


def streamops(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streamops", *args], capture_output=True, text=True, timeout=RUN_TIMEOUT
    )


def start_streamops(*args: str, stderr: Path) -> subprocess.Popen:
    with open(stderr, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "streamops", *args], stdout=subprocess.DEVNULL, stderr=out, start_new_session=True
        )


def bronze_committed(lake: LakeLayout) -> bool:
    commits = lake.checkpoint(BRONZE_STREAM) / "commits"
    return commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir())


def assert_no_traces(stderr: str) -> None:
    """On failure shows where the first trace starts (its cause) and how the output ends."""
    first = min((i for i in (stderr.find(JAVA_STACK_LINE), stderr.find("Traceback")) if i >= 0), default=-1)
    assert first < 0, f"{stderr[max(0, first - 1000) : first + 3000]}\n[...]\n{stderr[-1500:]}"


def doctor_findings(lake: LakeLayout) -> dict[str, list[str]]:
    doctor = streamops("checkpoint", "doctor", "--lake", str(lake.root), "--json")
    report = json.loads(doctor.stdout)
    return {c["stream"]: [f["code"] for f in c["findings"]] for c in report["checkpoints"]}


@pytest.fixture
def small_disk(tmp_path):
    """An 8 MB tmpfs (a real ENOSPC), grown to 512 MB by `grow()`; needs root, as CI runs."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    assert mounted.returncode == 0, f"mounting a tmpfs needs root (CI runs as root): {mounted.stderr.decode()}"

    def grow() -> None:
        subprocess.run(["mount", "-o", "remount,size=512m", str(disk)], check=True)

    try:
        yield disk, grow
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def test_a_full_disk_stops_with_one_line_and_a_restart_after_freeing_space_carries_on(
    tmp_path, small_disk, connector_name
):
    disk, grow = small_disk
    manifest = generate(GeneratorSettings(out=tmp_path / "landing", events=40000, event_types=8, bad=0.01))
    lake = LakeLayout.at(disk / "lake")
    run = ("run", "--lake", str(lake.root), "--landing", str(tmp_path / "landing"), "--delta", connector_name)

    full = streamops(*run, "--until-idle")
    assert full.returncode == 1, full.stderr[-3000:]
    failures = [line for line in full.stderr.splitlines() if " failed: " in line]
    assert failures, full.stderr[-3000:]
    assert f"failed: no space left for `{disk}/lake" in failures[0], failures
    assert "free on its disk, the batch needs about" in failures[0]
    assert_no_traces(full.stderr)

    grow()
    again = streamops(*run, "--until-idle")
    assert again.returncode == 0, again.stderr[-3000:]
    assert_exactly_once(lake, manifest["lines_total"])
    for table in lake.table_dirs():
        assert table_damaged_files(table) == [], f"a commit of {table} references a partial file"


def test_a_second_run_is_refused_sigterm_stops_the_first_and_the_doctor_stays_quiet(tmp_path):
    landing = tmp_path / "landing"
    first_wave = generate(GeneratorSettings(out=landing, events=3000, event_types=6, bad=0.01, events_per_file=500))
    lake = LakeLayout.at(tmp_path / "lake")
    run = ("run", "--lake", str(lake.root), "--landing", str(landing), "--trigger", "1")
    first = start_streamops(*run, "--duration", "3600", "--max-files-per-trigger", "1", stderr=tmp_path / "first.err")
    try:
        wait_until(lambda: bronze_committed(lake), timeout=300, what="the first run's first bronze batch")
        second = streamops(*run, "--until-idle")
        assert second.returncode == 2, second.stderr
        assert second.stderr.count("\n") == 1 and "another `streamops run` runs the bronze stage" in second.stderr
        assert f"pid {first.pid}, since " in second.stderr
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=90) == 0, (tmp_path / "first.err").read_text()[-3000:]
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
    stopped = (tmp_path / "first.err").read_text()
    assert "stopped by SIGTERM between batches" in stopped
    assert_no_traces(stopped)

    # new variations of the same event types: the management batches that read them assign no group
    drift = generate(GeneratorSettings(out=tmp_path / "wave2", events=2000, event_types=6, drift=1.0, bad=0.0, seed=9))
    for path in (tmp_path / "wave2").glob("*.ndjson"):
        shutil.move(path, landing / f"wave2-{path.name}")
    drained = streamops(*run, "--until-idle")
    assert drained.returncode == 0, drained.stderr[-3000:]
    assert_exactly_once(lake, first_wave["lines_total"] + drift["lines_total"])
    assert not any(doctor_findings(lake).values()), doctor_findings(lake)
    assert not lake.run_lock("bronze").exists() and not lake.run_lock("silver").exists()


def test_a_deleted_or_truncated_bronze_file_is_named_then_restored_and_read_once(tmp_path, connector_name):
    landing = tmp_path / "landing"
    manifest = generate(GeneratorSettings(out=landing, events=3000, event_types=4, bad=0.0, events_per_file=1000))
    lake = LakeLayout.at(tmp_path / "lake")
    run = ("run", "--lake", str(lake.root), "--landing", str(landing), "--delta", connector_name)
    bronze_only = streamops(*run, "--until-idle", "--stages", "bronze", "--max-files-per-trigger", "1")
    assert bronze_only.returncode == 0, bronze_only.stderr[-3000:]
    files = sorted(DeltaTable(str(lake.bronze_events)).file_uris())
    assert len(files) >= 2, files
    deleted, truncated = Path(files[0].removeprefix("file://")), Path(files[-1].removeprefix("file://"))
    backup = tmp_path / "backup"
    backup.mkdir()
    for path in (deleted, truncated):
        shutil.copy2(path, backup / path.name)
    deleted.unlink()
    with open(truncated, "r+b") as handle:
        handle.truncate(truncated.stat().st_size // 2)

    broken = streamops(*run, "--until-idle")
    assert broken.returncode == 1, broken.stderr[-3000:]
    line = next(line for line in broken.stderr.splitlines() if " failed: " in line)
    assert deleted.name in line and "is missing" in line and "version" in line, line
    assert truncated.name in line and "truncated" in line, line
    assert "streamops lake fsck" in line
    assert_no_traces(broken.stderr)
    assert any("source_files_damaged" in codes for codes in doctor_findings(lake).values())
    listed = streamops("lake", "fsck", str(lake.bronze_events))
    assert listed.returncode == 1 and deleted.name in listed.stdout and truncated.name in listed.stdout

    for path in (deleted, truncated):
        shutil.copy2(backup / path.name, path)
    restored = streamops(*run, "--until-idle")
    assert restored.returncode == 0, restored.stderr[-3000:]
    assert_exactly_once(lake, manifest["lines_total"])


def first_row(table) -> pa.Table | None:
    """The table's first row, once it has one (its first commits may hold none: a batch that read
    nothing commits its txn alone)."""
    if not DeltaTable.is_deltatable(str(table)):
        return None
    rows = read_delta(table).slice(0, 1)
    return rows if rows.num_rows else None


def foreign_append(table, rows: pa.Table, attempts: int = 5) -> None:
    """Append as another program would: its row's columns merged into the table's (the pipeline
    adds columns as the data drifts), and a commit that lost a race with the pipeline's tried again."""
    for attempt in range(attempts):
        try:
            write_deltalake(str(table), rows, mode="append", schema_mode="merge")
            return
        except CommitFailedError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)


@pytest.mark.parametrize("connector_name", ["embedded"])  # appends never conflict on either: one is enough
def test_a_foreign_writer_appending_while_the_pipeline_runs_loses_nothing(tmp_path, connector_name):
    landing = tmp_path / "landing"
    manifest = generate(GeneratorSettings(out=landing, events=4000, event_types=4, bad=0.0, events_per_file=250))
    lake = LakeLayout.at(tmp_path / "lake")
    run = ("run", "--lake", str(lake.root), "--landing", str(landing), "--trigger", "0.5", "--delta", connector_name)
    pipeline = start_streamops(*run, "--duration", "3600", "--max-files-per-trigger", "1", stderr=tmp_path / "run.err")
    appended: dict[str, list[str]] = {"bronze": [], "silver": []}
    try:
        template = wait_until(lambda: first_row(lake.bronze_events), 300, "a bronze row")
        silver_table = lake.silver(template.column("event_type")[0].as_py())
        silver_template = wait_until(lambda: first_row(silver_table), 300, f"a row of {silver_table.name} in silver")

        failures: list[BaseException] = []

        def foreign_writes() -> None:
            try:
                for i in range(8):
                    for name, table, rows in (
                        ("bronze", lake.bronze_events, template),
                        ("silver", silver_table, silver_template),
                    ):
                        event_id = f"foreign-{name}-{i}"
                        foreign_append(table, with_event_id(rows, event_id))
                        appended[name].append(event_id)
            except BaseException as error:  # noqa: BLE001 - reported by the test's own thread
                failures.append(error)

        writer = threading.Thread(target=foreign_writes)
        writer.start()
        writer.join(300)
        assert not writer.is_alive() and not failures, failures
        wait_until(lambda: sum(ids(lake.bronze_events).values()) >= manifest["events_total"] + 8, 600, "bronze drained")
        pipeline.send_signal(signal.SIGTERM)
        assert pipeline.wait(timeout=90) == 0, (tmp_path / "run.err").read_text()[-3000:]
    finally:
        if pipeline.poll() is None:
            os.killpg(pipeline.pid, signal.SIGKILL)
    drained = streamops(*run, "--until-idle")
    assert drained.returncode == 0, drained.stderr[-3000:]

    bronze = ids(lake.bronze_events)
    silver = ids(silver_table)
    assert [bronze[event_id] for event_id in appended["bronze"]] == [1] * 8, "each foreign bronze row once"
    assert [silver[event_id] for event_id in appended["bronze"]] == [1] * 8, "and in silver once, through bronze"
    assert [silver[event_id] for event_id in appended["silver"]] == [1] * 8, "each foreign silver row once"
    generated = {k: v for k, v in bronze.items() if not k.startswith("foreign-")}
    assert len(generated) == manifest["events_total"] and max(generated.values()) == 1
