"""One `streamops run` per stage of a lake: a second one is refused with the first one named.

Two runs of the same stage would run the same queries on the same checkpoints: Spark refuses
that only inside one session, and two drivers racing on one offset log is how checkpoints get
corrupted (the doctor's `concurrent_writers`). So a run takes `<lake>/_system/run_locks/<stage>.json`
with a write-if-absent (the local disk's link, an object store's conditional PUT), holds it with a
heartbeat, and deletes it when it ends.

A lock outlives a run that was killed. It is taken over when its holder is provably gone: on the
same host, its process no longer exists; from another host, its heartbeat is older than
`STALE_SECONDS`. A holder that finds its lock taken over (it stalled longer than that) stops,
since another run now owns the checkpoints.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace

import orjson

from streamops.core.exceptions import StreamopsError
from streamops.core.lake_layout import LakeLayout
from streamops.core.plain_text import human_seconds
from streamops.core.storage.location import Location

HEARTBEAT_SECONDS = 10.0
STALE_SECONDS = 60.0


class LakeBusyError(StreamopsError):
    """Another `streamops run` holds the stage of this lake."""


@dataclass(frozen=True)
class LockHolder:
    run_id: str
    host: str
    pid: int
    since: float
    heartbeat: float

    @classmethod
    def me(cls) -> LockHolder:
        now = time.time()
        return cls(uuid.uuid4().hex, socket.gethostname(), os.getpid(), now, now)

    def to_bytes(self) -> bytes:
        return orjson.dumps(asdict(self))

    @classmethod
    def from_bytes(cls, data: bytes) -> LockHolder | None:
        try:
            fields = orjson.loads(data)
            return cls(
                str(fields["run_id"]), str(fields["host"]), int(fields["pid"]), fields["since"], fields["heartbeat"]
            )
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return None  # a lock written halfway (a full disk) holds nobody

    def is_gone(self, now: float) -> bool:
        """True when the holder provably no longer runs."""
        if self.host == socket.gethostname():
            return not _process_exists(self.pid)
        return now - self.heartbeat > STALE_SECONDS

    def describe(self, stage: str, now: float) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since))
        return (
            f"another `streamops run` runs the {stage} stage of this lake: host {self.host}, pid {self.pid}, "
            f"since {since} (last heartbeat {human_seconds(now - self.heartbeat)} ago)"
        )


class RunLock:
    """The locks of the stages one run runs; `acquire()` before any query starts, `release()` after."""

    def __init__(self, lake: LakeLayout, stages: tuple[str, ...], on_lost: Callable[[str], None]) -> None:
        """`on_lost(line)`: called from the heartbeat thread when another run took a lock over."""
        self.lake = lake
        self.stages = stages
        self.holder = LockHolder.me()
        self.on_lost = on_lost
        self._held: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def acquire(self) -> None:
        try:
            for stage in self.stages:
                self._take(stage)
                self._held.append(stage)
        except BaseException:
            self.release()
            raise
        self._thread = threading.Thread(target=self._beat, name="streamops-run-lock", daemon=True)
        self._thread.start()

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(HEARTBEAT_SECONDS)
        for stage in self._held:
            if self._owner(stage) == self.holder.run_id:
                self.lake.run_lock(stage).delete()
        self._held.clear()

    def _take(self, stage: str) -> None:
        path = self.lake.run_lock(stage)
        for _ in range(3):
            try:
                path.create(self.holder.to_bytes())
                return
            except FileExistsError:
                pass
            current = _read(path)
            now = time.time()
            if current is not None and not current.is_gone(now):
                raise LakeBusyError(
                    f"{current.describe(stage, now)}; stop that run first (a run whose host is down "
                    f"loses its lock {STALE_SECONDS:.0f} s after its last heartbeat, or delete `{path}`)"
                )
            path.delete()  # its holder is gone: the next create decides between runs taking it over
        raise LakeBusyError(f"could not take `{path}`: other runs kept taking it; start one run at a time")

    def _owner(self, stage: str) -> str | None:
        try:
            current = _read(self.lake.run_lock(stage))
        except (OSError, StreamopsError):
            return None  # the store is away: the lock is left to go stale
        return None if current is None else current.run_id

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SECONDS):
            for stage in list(self._held):
                try:
                    owner = self._owner(stage)
                    if owner is not None and owner != self.holder.run_id:
                        self._held.remove(stage)
                        self.on_lost(
                            f"another run took over the {stage} lock of this lake after this run's heartbeat "
                            f"stalled for over {STALE_SECONDS:.0f} s: stopping, it owns the checkpoints now"
                        )
                        continue
                    beat = replace(self.holder, heartbeat=time.time())
                    self.lake.run_lock(stage).write_bytes(beat.to_bytes())
                except (OSError, StreamopsError):
                    continue  # the store is away: the queries fail and say so; the lock waits for it


def _read(path: Location) -> LockHolder | None:
    try:
        return LockHolder.from_bytes(path.read_bytes())
    except FileNotFoundError:
        return None


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True
