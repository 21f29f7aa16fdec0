"""The StreamingQueryListener: the monitor's only contact with PySpark.

Spark calls listeners on its listener-bus thread and drops events when they are slow
(`onQueryStarted` even runs inside `DataStreamWriter.start()`). PySpark's default bridge
converts every event into Python objects field by field before the callback runs: dozens of
Py4J round-trips per progress event, enough to stall the bus with a few hundred streams. This
listener registers its own bridge that asks the JVM for the event's JSON (one round-trip) and
hands it to a bounded queue; parsing and all I/O happen on the
monitor's worker thread.
"""

from __future__ import annotations

from streamops.core.extras import require_pyspark

require_pyspark(__name__)

import logging
import time
from collections import deque
from typing import Any, Callable

import orjson
from pyspark.sql.streaming import StreamingQueryListener

from streamops.monitor.progress_event import EventKind

Offer = Callable[[EventKind, str, float], Any]
JAVA_LISTENER_INTERFACE = "org.apache.spark.sql.streaming.PythonStreamingQueryListener"

log = logging.getLogger("streamops.monitor")


class MonitorListener(StreamingQueryListener):
    """Forwards every listener event as (kind, JSON text, receive time) to `offer`.

    `timings`, when given, receives the wall time of each callback as Spark's bus sees it
    (JSON round-trip plus enqueue), for the listener benchmark.
    """

    def __init__(self, offer: Offer, timings: deque[float] | None = None) -> None:
        self._offer = offer
        self.timings = timings
        self._java_listener: Any = None

    @property
    def _jlistener(self) -> Any:
        """The JVM-side listener Spark registers: our JSON bridge instead of PySpark's."""
        if self._java_listener is None:
            from pyspark import SparkContext

            jvm = SparkContext._jvm
            if jvm is None:
                raise RuntimeError("no active SparkContext: start Spark before attaching the monitor")
            self._java_listener = jvm.org.apache.spark.sql.streaming.PythonStreamingQueryListenerWrapper(
                _JsonBridge(self)
            )
        return self._java_listener

    def forward_java_event(self, kind: EventKind, jevent: Any) -> None:
        started = time.perf_counter()
        try:
            self._offer(kind, jevent.json(), time.time())
        except Exception:  # a listener must never throw into Spark's bus
            log.exception("streamops monitor could not take a %s event", kind)
        if self.timings is not None:
            self.timings.append(time.perf_counter() - started)

    # The Python-level callbacks: used when Spark hands us PySpark event objects (Spark Connect,
    # or callers driving the listener directly); same output as the JSON bridge.

    def onQueryStarted(self, event: Any) -> None:
        self._offer_dict(
            "started",
            {
                "id": str(event.id),
                "runId": str(event.runId),
                "name": event.name,
                "timestamp": event.timestamp,
            },
        )

    def onQueryProgress(self, event: Any) -> None:
        self._offer("progress", event.progress.json, time.time())

    def onQueryIdle(self, event: Any) -> None:
        self._offer_dict("idle", {"id": str(event.id), "runId": str(event.runId), "timestamp": event.timestamp})

    def onQueryTerminated(self, event: Any) -> None:
        self._offer_dict(
            "terminated",
            {
                "id": str(event.id),
                "runId": str(event.runId),
                "exception": event.exception,
                "errorClassOnException": event.errorClassOnException,
            },
        )

    def _offer_dict(self, kind: EventKind, data: dict[str, Any]) -> None:
        self._offer(kind, orjson.dumps(data).decode(), time.time())


class _JsonBridge:
    """Implements Spark's Python listener interface through Py4J callbacks."""

    def __init__(self, listener: MonitorListener) -> None:
        self._listener = listener

    def onQueryStarted(self, jevent: Any) -> None:
        self._listener.forward_java_event("started", jevent)

    def onQueryProgress(self, jevent: Any) -> None:
        self._listener.forward_java_event("progress", jevent)

    def onQueryIdle(self, jevent: Any) -> None:
        self._listener.forward_java_event("idle", jevent)

    def onQueryTerminated(self, jevent: Any) -> None:
        self._listener.forward_java_event("terminated", jevent)

    class Java:
        implements = [JAVA_LISTENER_INTERFACE]
