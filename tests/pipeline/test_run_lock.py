"""One run per stage of a lake: the lock file, its refusal line, and when it is taken over.
No Spark: the lock is taken before Spark starts (tests/pipeline/test_faults.py runs the CLI)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import orjson
import pytest

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.run import run_lock
from streamops.pipeline.run.run_lock import STALE_SECONDS, LakeBusyError, LockHolder, RunLock


def write_lock(lake: LakeLayout, stage: str, **fields) -> None:
    holder = {
        "run_id": "other",
        "host": socket.gethostname(),
        "pid": os.getpid(),
        "since": 0.0,
        "heartbeat": time.time(),
    }
    lake.run_lock(stage).write_bytes(orjson.dumps({**holder, **fields}))


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_run_holds_its_stages_and_releases_them(tmp_path):
    lake = LakeLayout.at(tmp_path)
    lock = RunLock(lake, ("bronze", "silver"), on_lost=lambda line: None)
    lock.acquire()
    held = LockHolder.from_bytes(lake.run_lock("silver").read_bytes())
    assert held is not None and held.pid == os.getpid() and held.host == socket.gethostname()
    lock.release()
    assert not lake.run_lock("bronze").exists() and not lake.run_lock("silver").exists()


def test_a_second_run_of_a_stage_is_refused_with_the_first_one_named(tmp_path):
    lake = LakeLayout.at(tmp_path)
    first = RunLock(lake, ("bronze",), on_lost=lambda line: None)
    first.acquire()
    try:
        with pytest.raises(LakeBusyError) as refused:
            RunLock(lake, ("silver", "bronze"), on_lost=lambda line: None).acquire()
        line = str(refused.value)
        assert "\n" not in line
        assert f"host {socket.gethostname()}, pid {os.getpid()}, since " in line
        assert "bronze stage" in line and str(lake.run_lock("bronze")) in line
        assert not lake.run_lock("silver").exists(), "a refused run keeps none of its locks"
        other_stage = RunLock(lake, ("silver",), on_lost=lambda line: None)
        other_stage.acquire()  # --stages silver beside --stages bronze
        other_stage.release()
    finally:
        first.release()


def test_the_lock_of_a_killed_run_on_this_host_is_taken_over(tmp_path):
    lake = LakeLayout.at(tmp_path)
    write_lock(lake, "bronze", pid=dead_pid())
    lock = RunLock(lake, ("bronze",), on_lost=lambda line: None)
    lock.acquire()
    assert LockHolder.from_bytes(lake.run_lock("bronze").read_bytes()).run_id == lock.holder.run_id
    lock.release()


def test_a_lock_from_another_host_is_taken_over_only_once_its_heartbeat_is_stale(tmp_path):
    lake = LakeLayout.at(tmp_path)
    write_lock(lake, "bronze", host="elsewhere", pid=1, heartbeat=time.time() - STALE_SECONDS / 2)
    with pytest.raises(LakeBusyError, match="host elsewhere, pid 1"):
        RunLock(lake, ("bronze",), on_lost=lambda line: None).acquire()
    write_lock(lake, "bronze", host="elsewhere", pid=1, heartbeat=time.time() - STALE_SECONDS - 1)
    lock = RunLock(lake, ("bronze",), on_lost=lambda line: None)
    lock.acquire()
    lock.release()


def test_a_half_written_lock_holds_nobody(tmp_path):
    lake = LakeLayout.at(tmp_path)
    lake.run_lock("bronze").write_bytes(b'{"run_id": "x", "ho')
    lock = RunLock(lake, ("bronze",), on_lost=lambda line: None)
    lock.acquire()
    lock.release()


def test_a_run_whose_lock_was_taken_over_is_told_to_stop(tmp_path, monkeypatch):
    monkeypatch.setattr(run_lock, "HEARTBEAT_SECONDS", 0.05)
    lake = LakeLayout.at(tmp_path)
    lost: list[str] = []
    lock = RunLock(lake, ("bronze",), on_lost=lost.append)
    lock.acquire()
    try:
        before = LockHolder.from_bytes(lake.run_lock("bronze").read_bytes()).heartbeat
        deadline = time.monotonic() + 10
        while LockHolder.from_bytes(lake.run_lock("bronze").read_bytes()).heartbeat == before:
            assert time.monotonic() < deadline, "the heartbeat rewrites the lock"
            time.sleep(0.02)
        write_lock(lake, "bronze", run_id="taker")
        while not lost:
            assert time.monotonic() < deadline, "the holder notices the takeover"
            time.sleep(0.02)
        assert "took over the bronze lock" in lost[0]
    finally:
        lock.release()
    assert LockHolder.from_bytes(lake.run_lock("bronze").read_bytes()).run_id == "taker", "never deletes another's lock"
