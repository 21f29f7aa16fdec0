"""Spark's scratch space for one process, in a directory of its own, and the scratch that killed
runs left behind, removed at the next start.

A Spark driver keeps its scratch in `spark-*` directories under `spark.local.dir` (/tmp by
default): the JARs of `spark.jars.packages` it serves to executors (with the object stores'
connectors, 700 MB), shuffle files, cached blocks; its JVM also unpacks native libraries into
`java.io.tmpdir`. Spark's shutdown hook deletes them, and a JVM killed with SIGKILL runs no
hook: the kernel's OOM killer, a supervisor's or a container's stop timeout, a job that
crash-loops each leave their scratch in /tmp, until the disk fills and the next start fails
with "No space left on device".

So each process takes a directory of its own under one root per user, `run-*`, beside a lock
file that it holds an advisory lock on (`flock`) while it lives. The kernel drops that lock when
the process ends, however it ends, so whoever claims a scratch next removes every directory whose
lock nobody holds: what a killed run left goes with the next start, never a live run's. A process
that ends normally removes its own. Where the user chose Spark's local directories
(`SPARK_LOCAL_DIRS`, `spark.local.dir`), they stay as chosen and nothing is claimed.
"""

from __future__ import annotations

import atexit
import logging
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from streamops.pipeline.runtime.spark_jars import spark_settings_outside

try:
    import fcntl
except ImportError:  # Windows: no flock, and Spark's scratch stays where Spark puts it
    fcntl = None  # type: ignore[assignment]

LOG = logging.getLogger(__name__)
LOCAL_DIR_SETTING = "spark.local.dir"
LOCAL_DIRS_ENV = "SPARK_LOCAL_DIRS"
"""Spark's own ways to choose the local directories: the environment wins over the setting."""
PREFIX = "run-"
LOCK_SUFFIX = ".lock"


@dataclass(frozen=True)
class Scratch:
    """A process's scratch directory and the descriptor of its held lock file."""

    path: Path
    lock: Path
    descriptor: int
    owner: int = field(default_factory=os.getpid)

    def release(self) -> None:
        """Remove the directory and its lock file: the process is done with Spark. Not in a
        child forked from it, which inherits the exit handler but not the scratch."""
        if os.getpid() != self.owner:
            return
        shutil.rmtree(self.path, ignore_errors=True)
        self.lock.unlink(missing_ok=True)
        os.close(self.descriptor)


def scratch_root() -> Path:
    """Where every streamops process of this user on this machine keeps its Spark scratch."""
    return Path(tempfile.gettempdir()) / f"streamops-spark-{os.getuid()}"


def local_dirs_chosen(conf: Mapping[str, str]) -> bool:
    """Whether the user chose Spark's local directories: in the environment, in the run's Spark
    settings `conf`, or in those Spark reads besides (`spark-defaults.conf`, `PYSPARK_SUBMIT_ARGS`)."""
    return bool(
        os.environ.get(LOCAL_DIRS_ENV) or conf.get(LOCAL_DIR_SETTING) or spark_settings_outside().get(LOCAL_DIR_SETTING)
    )


def claim(root: Path) -> Scratch:
    """A new scratch directory under `root` for this process, its lock held until it ends."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    while True:
        descriptor, name = tempfile.mkstemp(prefix=PREFIX, suffix=LOCK_SUFFIX, dir=root)
        lock = Path(name)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            # Another start's sweep may have taken the new file for a dead run's and removed
            # it between its creation and the lock: the lock must be on the file still there.
            if os.stat(lock).st_ino == os.fstat(descriptor).st_ino:
                path = lock.with_name(lock.name[: -len(LOCK_SUFFIX)])
                path.mkdir(mode=0o700)
                return Scratch(path, lock, descriptor)
        except (BlockingIOError, FileNotFoundError):
            pass
        os.close(descriptor)


def remove_dead(root: Path) -> list[Path]:
    """Remove the scratch directories under `root` whose process ended without removing its
    own (its lock is free, or its lock file is gone); return them."""
    removed: list[Path] = []
    for lock in sorted(root.glob(f"{PREFIX}*{LOCK_SUFFIX}")):
        try:
            descriptor = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            continue
        try:
            path = lock.with_name(lock.name[: -len(LOCK_SUFFIX)])
            if path.exists():
                shutil.rmtree(path, ignore_errors=True)
                removed.append(path)
            lock.unlink(missing_ok=True)
        finally:
            os.close(descriptor)
    for path in root.glob(f"{PREFIX}*"):
        if path.is_dir() and not path.with_name(path.name + LOCK_SUFFIX).exists():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


_claimed: list[Scratch] = []


def process_scratch(conf: Mapping[str, str]) -> Path | None:
    """This process's Spark scratch directory, claimed once (after removing dead runs'), or None
    where the user chose Spark's local directories or the system has no `flock`."""
    if fcntl is None or local_dirs_chosen(conf):
        return None
    if not _claimed:
        root = scratch_root()
        try:
            removed = remove_dead(root) if root.is_dir() else []
            _claimed.append(claim(root))
        except OSError as error:
            LOG.warning("no Spark scratch of its own under %s (%s): Spark keeps it in its default place", root, error)
            return None
        if removed:
            LOG.info(
                "removed the Spark scratch of %d run(s) that ended without removing it, under %s", len(removed), root
            )
        atexit.register(_claimed[0].release)
    return _claimed[0].path
