"""Spark's scratch per process, and what killed processes left, removed by the next start."""

import os
import signal
import subprocess
import sys

import pytest

from streamops.pipeline.runtime import spark_scratch
from streamops.pipeline.runtime.spark_scratch import LOCK_SUFFIX, local_dirs_chosen, remove_dead

HOLDER = """
import sys
from streamops.pipeline.runtime.spark_scratch import process_scratch

path = process_scratch({})
(path / "block").write_bytes(b"x" * 1_000_000)
print(path, flush=True)
sys.stdin.read()
"""


def _environment(tmp_path) -> dict[str, str]:
    """A child's environment whose temporary directory is `tmp_path`'s, Spark's local
    directories not chosen (CI chooses them for every test)."""
    environment = {key: value for key, value in os.environ.items() if key not in ("SPARK_LOCAL_DIRS", "SPARK_CONF_DIR")}
    environment["TMPDIR"] = str(tmp_path)
    return environment


def _holder(tmp_path) -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=_environment(tmp_path),
    )
    return process, process.stdout.readline().strip()


def test_a_killed_processes_scratch_goes_with_the_next_start_a_live_ones_stays_an_ended_ones_went(tmp_path):
    killed, killed_path = _holder(tmp_path)
    live, live_path = _holder(tmp_path)
    root = tmp_path / f"streamops-spark-{os.getuid()}"
    assert {killed_path, live_path} <= {str(path) for path in root.iterdir()}
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=30)
    assert os.path.exists(killed_path), "a SIGKILL runs no exit handler: the scratch is left"

    assert [str(path) for path in remove_dead(root)] == [killed_path]
    assert not os.path.exists(killed_path) and not os.path.exists(killed_path + LOCK_SUFFIX)
    assert os.path.isfile(os.path.join(live_path, "block")), "a live process's scratch is never removed"

    live.communicate("", timeout=30)
    assert live.returncode == 0
    assert list(root.iterdir()) == [], "a process that ends normally removes its own scratch"


def test_a_forked_child_that_exits_leaves_its_parents_scratch(tmp_path):
    scratch = spark_scratch.claim(tmp_path)
    child = os.fork()
    if child == 0:
        scratch.release()
        os._exit(0)
    os.waitpid(child, 0)
    assert scratch.path.is_dir() and scratch.lock.is_file()
    scratch.release()
    assert list(tmp_path.iterdir()) == []


def test_a_dead_runs_directory_without_its_lock_file_is_removed_too(tmp_path):
    """The sweep removes a directory before its lock file: one cut short between the two leaves
    a directory that no lock guards, which the next sweep takes."""
    orphan = tmp_path / "run-abc"
    orphan.mkdir()
    (orphan / "blockmgr").mkdir()
    assert remove_dead(tmp_path) == [orphan]
    assert not orphan.exists()


def test_the_users_choice_of_sparks_local_directories_wins(tmp_path, monkeypatch):
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    monkeypatch.delenv("PYSPARK_SUBMIT_ARGS", raising=False)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    assert not local_dirs_chosen({})
    assert local_dirs_chosen({"spark.local.dir": "/data/spark"})
    (tmp_path / "spark-defaults.conf").write_text("# spark.local.dir /x\nspark.local.dir   /data/spark\n")
    assert local_dirs_chosen({})
    (tmp_path / "spark-defaults.conf").write_text("spark.local.dirs /x\n# spark.local.dir /x\n")
    assert not local_dirs_chosen({})
    monkeypatch.setenv("SPARK_LOCAL_DIRS", "/data/spark")
    assert local_dirs_chosen({})
    assert spark_scratch.process_scratch({}) is None


def test_a_scratch_root_that_cannot_be_made_leaves_spark_its_default_with_a_warning(tmp_path, monkeypatch, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.delenv("SPARK_LOCAL_DIRS", raising=False)
    monkeypatch.delenv("SPARK_CONF_DIR", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    monkeypatch.setattr(spark_scratch, "_claimed", [])
    monkeypatch.setattr(spark_scratch, "scratch_root", lambda: blocker / "streamops-spark-0")
    assert spark_scratch.process_scratch({}) is None
    assert "no Spark scratch of its own under" in caplog.text


SPARK_KILLED = """
import os
import signal

from streamops.pipeline.run.spark_session import build_spark

spark = build_spark(master="local[1]")
assert spark.range(1000).repartition(2).count() == 1000
jvm = spark.sparkContext._jvm.java.lang.System
print(spark.conf.get("spark.local.dir"), jvm.getProperty("java.io.tmpdir"), flush=True)
os.kill(spark.sparkContext._gateway.proc.pid, signal.SIGKILL)
os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.spark
def test_a_killed_runs_spark_scratch_is_its_own_directory_removed_by_the_next_start(tmp_path):
    """Spark's `spark-*` and `blockmgr-*` directories and the JVM's unpacked native libraries
    all go to the process's scratch; killed with its JVM, it leaves them there and only there."""
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    script = tmp_path / "spark_killed.py"
    script.write_text(SPARK_KILLED)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=_environment(temporary)
    )
    assert result.returncode == -signal.SIGKILL, result.stderr[-3000:]
    local_dir, java_temporary = result.stdout.split()
    root = temporary / f"streamops-spark-{os.getuid()}"
    assert local_dir == java_temporary and local_dir.startswith(str(root / "run-"))
    assert sorted(path.name for path in temporary.iterdir()) == [root.name]
    left = {entry.split("-")[0] for entry in os.listdir(local_dir)}
    assert {"spark", "blockmgr"} <= left, left

    assert [str(path) for path in remove_dead(root)] == [local_dir]
    assert list(root.iterdir()) == []
