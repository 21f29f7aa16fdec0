"""Keeps streaming queries running: a query that stops with an error is started again after an
exponential backoff (1, 2, 4 ... 60 s) while the others keep running, and one stopped by a
policy (on_incompatible=fail_group, or a rule whose action is `fail`) is left stopped, since replaying its batch would fail the
same way.

A policy stop is known by type, never by the text of the query's exception: the writer that
stops its query reports the typed error here (`policy_stopped`) before raising it. foreachBatch
functions run in the driver's Python process, so the report is in place by the time the query
is seen inactive; the exception itself reaches the driver through Py4J as text only.

`tick(now)` takes the time from its caller, so the restart schedule is tested on real queries
without waiting it out.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from streamops.monitor.progress_event import exception_summary
from streamops.pipeline.exceptions import ExpectationFailedError, IncompatibleSchemaError

if TYPE_CHECKING:
    from pyspark.sql.streaming import StreamingQuery

MAX_BACKOFF_SECONDS = 60.0
STOP_BATCH_TIMEOUT_SECONDS = 30.0
STOP_POLL_SECONDS = 0.05
POLICY = "on_incompatible=fail_group"


def stop_between_batches(queries: list[StreamingQuery], timeout: float) -> None:
    """Stop each query between two of its batches, waiting up to `timeout` for a running one.

    stop() in the middle of a batch cancels its jobs: Spark logs every cancelled write task as an
    ERROR with its stack trace and the Python workers die on a broken pipe, which is what a user
    stopping a healthy pipeline must not see. Nothing is lost either way (the batch is replayed),
    so after `timeout` a batch still running is cancelled."""
    deadline = time.monotonic() + timeout
    waiting = list(queries)
    while waiting:
        for query in list(waiting):
            if not query.isActive or not query.status["isTriggerActive"] or time.monotonic() >= deadline:
                query.stop()
                waiting.remove(query)
        if waiting:
            time.sleep(STOP_POLL_SECONDS)


def backoff_seconds(failures: int) -> float:
    """How long to wait before start number `failures + 1` of a query."""
    return min(MAX_BACKOFF_SECONDS, 2.0 ** (failures - 1))


@dataclass
class Supervised:
    """One query, with its restart history."""

    name: str
    start: Callable[[], StreamingQuery]
    query: StreamingQuery | None = None
    failures: int = 0
    next_start: float = 0.0
    last_error: str | None = None
    held: bool = False


class QueryRestarts:
    def __init__(
        self,
        failures: dict[str, list[str]],
        log: Callable[[str], None],
        explain: Callable[[str], str | None] = lambda name: None,
    ) -> None:
        """Every failure is appended to `failures[name]` (a run's report) and logged in one line:
        `explain(name)`'s measured cause when it finds one (pipeline/failure_causes.py), else the
        exception's own line."""
        self.failures = failures
        self.log = log
        self.explain = explain
        self.supervised: dict[str, Supervised] = {}
        self._policy_stops: dict[str, IncompatibleSchemaError] = {}

    def supervise(self, name: str, start: Callable[[], StreamingQuery], now: float) -> None:
        entry = Supervised(name, start)
        self.supervised[name] = entry
        self._start(entry, now)

    def policy_stopped(self, stop: IncompatibleSchemaError) -> None:
        """Called by a writer, on the driver thread running its batch, just before it raises."""
        self._policy_stops[stop.stream] = stop

    def tick(self, now: float) -> None:
        """Notice stopped queries and start those whose backoff has passed."""
        for entry in self.supervised.values():
            if entry.held:
                continue
            if entry.query is not None and not entry.query.isActive:
                error = entry.query.exception()
                entry.query = None
                message = (self.explain(entry.name) or first_line(error)) if error else "stopped"
                stop = self._policy_stops.pop(entry.name, None)
                if stop is not None:
                    entry.held = True
                    self.failures.setdefault(entry.name, []).append(message)
                    why = "an expectation's action fail" if isinstance(stop, ExpectationFailedError) else POLICY
                    self.log(f"{entry.name} stopped ({why}): {message}")
                    continue
                self._back_off(entry, message, now)
            if entry.query is None and now >= entry.next_start:
                self._start(entry, now)

    def down(self) -> list[str]:
        """Streams not running now: failed and waiting for their restart, or held by policy."""
        return sorted(e.name for e in self.supervised.values() if e.held or e.query is None or not e.query.isActive)

    def stop(self, batch_timeout: float = STOP_BATCH_TIMEOUT_SECONDS) -> None:
        stop_between_batches([e.query for e in self.supervised.values() if e.query is not None], batch_timeout)
        self.supervised.clear()

    def _start(self, entry: Supervised, now: float) -> None:
        self._policy_stops.pop(entry.name, None)
        try:
            entry.query = entry.start()
        except Exception as error:  # noqa: BLE001 - a query that cannot start is retried like a failed one
            self._back_off(entry, self.explain(entry.name) or first_line(error), now)
            return
        if entry.failures:
            self.log(f"{entry.name} running again (after {entry.failures} failed starts or batches)")

    def _back_off(self, entry: Supervised, message: str, now: float) -> None:
        entry.failures += 1
        entry.last_error = message
        self.failures.setdefault(entry.name, []).append(message)
        backoff = backoff_seconds(entry.failures)
        entry.next_start = now + backoff
        self.log(f"{entry.name} failed ({message}); restarting in {backoff:.0f}s")


def first_line(error: BaseException) -> str:
    """The line of a query's failure an operator needs (the Python exception of a foreachBatch)."""
    return exception_summary(str(error)) or type(error).__name__
