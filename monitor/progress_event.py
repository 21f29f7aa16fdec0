"""Listener events as frozen records with snake_case fields, built once from Spark's JSON.

Spark's own Python conversion (`StreamingQueryProgress.fromJObject`) makes dozens of Py4J
round-trips per event, ~200 ms on a 2-core driver; the monitor instead asks the JVM for the
event's JSON (one round-trip) and builds these records from it. The same constructors read
recorded JSON, so status rules, backlog and the exporter are tested without a JVM.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass, fields
from datetime import datetime
from typing import Any, ClassVar, Iterator, Literal, Mapping, Union

import orjson

from monitor.exceptions import ProgressEventError

EventKind = Literal["started", "progress", "idle", "terminated"]
EVENT_KINDS: tuple[EventKind, ...] = ("started", "progress", "idle", "terminated")
MAX_MESSAGE_CHARS = 500


def iso_to_epoch(value: str | None) -> float | None:
    """Spark's ISO-8601 UTC timestamps ("2024-05-01T10:00:00.123Z") as Unix seconds."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _offset_text(value: Any) -> str | None:
    """Offsets are arbitrary JSON per source; keep them as compact JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


@dataclass(frozen=True)
class SourceProgress:
    description: str
    start_offset: str | None
    end_offset: str | None
    latest_offset: str | None
    num_input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SourceProgress":
        return cls(
            description=str(data.get("description") or ""),
            start_offset=_offset_text(data.get("startOffset")),
            end_offset=_offset_text(data.get("endOffset")),
            latest_offset=_offset_text(data.get("latestOffset")),
            num_input_rows=int(data.get("numInputRows") or 0),
            input_rows_per_second=float(data.get("inputRowsPerSecond") or 0.0),
            processed_rows_per_second=float(data.get("processedRowsPerSecond") or 0.0),
        )

    def to_row(self) -> dict[str, Any]:
        """The progress log's struct for one source: these fields, under these names."""
        return asdict(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> "SourceProgress":
        """Read back what `to_row` wrote: `streamops status` measures backlog from logged sources."""
        return cls(**{name: row[name] for name in SOURCE_FIELDS})


SOURCE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SourceProgress))


class _NamedQuery:
    """An event that carries the query's name."""

    name: str | None
    query_id: str

    @property
    def stream(self) -> str:
        """What the monitor calls the query: its name, or the id of an unnamed query."""
        return self.name or self.query_id


@dataclass(frozen=True)
class QueryProgress(_NamedQuery):
    """One StreamingQueryProgress. Rates Spark omits (NaN) read as 0."""

    query_id: str
    run_id: str
    name: str | None
    timestamp: float
    batch_id: int
    batch_duration_ms: int
    num_input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    duration_ms: Mapping[str, int]
    event_time: Mapping[str, float]
    sources: tuple[SourceProgress, ...]
    sink_description: str
    sink_output_rows: int | None
    json: str

    kind: ClassVar[EventKind] = "progress"

    @classmethod
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> "QueryProgress":
        """Accepts the progress JSON itself or the listener event wrapping it ({"progress": ...})."""
        data = _loads(value, "progress")
        if "progress" in data and isinstance(data["progress"], Mapping):
            data = data["progress"]
        with _reading("StreamingQueryProgress"):
            sink = data.get("sink") or {}
            return cls(
                **_identity(data),
                name=data.get("name"),
                timestamp=iso_to_epoch(data["timestamp"]) or 0.0,
                batch_id=int(data["batchId"]),
                batch_duration_ms=int(data.get("batchDuration") or 0),
                num_input_rows=int(data.get("numInputRows") or 0),
                input_rows_per_second=float(data.get("inputRowsPerSecond") or 0.0),
                processed_rows_per_second=float(data.get("processedRowsPerSecond") or 0.0),
                duration_ms={k: int(v) for k, v in (data.get("durationMs") or {}).items()},
                event_time={
                    k: t
                    for k, v in (data.get("eventTime") or {}).items()
                    if (t := iso_to_epoch(v)) is not None
                },
                sources=tuple(SourceProgress.from_dict(s) for s in data.get("sources") or ()),
                sink_description=str(sink.get("description") or ""),
                sink_output_rows=_int_or_none(sink.get("numOutputRows")),
            )


@dataclass(frozen=True)
class QueryStarted(_NamedQuery):
    query_id: str
    run_id: str
    name: str | None
    timestamp: float
    json: str

    kind: ClassVar[EventKind] = "started"

    @classmethod
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> "QueryStarted":
        data = _loads(value, "started")
        with _reading("QueryStartedEvent"):
            return cls(**_identity(data), name=data.get("name"), timestamp=iso_to_epoch(data.get("timestamp")) or 0.0)


@dataclass(frozen=True)
class QueryIdle:
    query_id: str
    run_id: str
    timestamp: float
    json: str

    kind: ClassVar[EventKind] = "idle"

    @classmethod
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> "QueryIdle":
        data = _loads(value, "idle")
        with _reading("QueryIdleEvent"):
            return cls(**_identity(data), timestamp=iso_to_epoch(data.get("timestamp")) or 0.0)


@dataclass(frozen=True)
class QueryTerminated:
    """Spark's termination event has no timestamp: `timestamp` is when the monitor received it."""

    query_id: str
    run_id: str
    exception: str | None
    error_class: str | None
    timestamp: float
    json: str

    kind: ClassVar[EventKind] = "terminated"

    @property
    def message(self) -> str | None:
        return exception_summary(self.exception)

    @classmethod
    def from_json(cls, value: str | bytes | Mapping[str, Any], received_at: float) -> "QueryTerminated":
        data = _loads(value, "terminated")
        with _reading("QueryTerminatedEvent"):
            return cls(
                **_identity(data),
                exception=data.get("exception"),
                error_class=data.get("errorClassOnException"),
                timestamp=received_at,
            )


MonitorEvent = Union[QueryStarted, QueryProgress, QueryIdle, QueryTerminated]


def parse_event(kind: EventKind, text: str | bytes, received_at: float) -> MonitorEvent:
    """The record for one listener event, from the JSON the JVM gave for it."""
    if kind == "progress":
        return QueryProgress.from_json(text)
    if kind == "started":
        return QueryStarted.from_json(text)
    if kind == "idle":
        return QueryIdle.from_json(text)
    if kind == "terminated":
        return QueryTerminated.from_json(text, received_at)
    raise ProgressEventError(f"unknown listener event kind `{kind}`: expected one of {EVENT_KINDS}")


_TRACEBACK = "Traceback (most recent call last):"


def exception_summary(text: str | None) -> str | None:
    """The line of a query's exception an on-call engineer needs first.

    A foreachBatch (or Python data source) failure arrives as Spark's error around a Python
    traceback, followed by a Java stack and the query plan; the useful line is the exception
    line of the last Python traceback (the first unindented line after its frames). Otherwise
    it is the first line of the message.
    """
    if not text:
        return None
    if _TRACEBACK in text:
        frames = text.rsplit(_TRACEBACK, 1)[1].splitlines()[1:]
        line = next((f for f in frames if f.strip() and not f[0].isspace()), None)
        if line is not None:
            return line.strip()[:MAX_MESSAGE_CHARS]
    lines = [line.strip() for line in text.split("\n\tat ", 1)[0].splitlines() if line.strip()]
    return (lines[0] if lines else text)[:MAX_MESSAGE_CHARS]


def _identity(data: Mapping[str, Any]) -> dict[str, Any]:
    """The fields every listener event carries: which query, which run, the event as received."""
    return {"query_id": str(data["id"]), "run_id": str(data["runId"]), "json": orjson.dumps(data).decode()}


@contextmanager
def _reading(what: str) -> Iterator[None]:
    """A field Spark's JSON lacks or mistypes becomes one error naming the event."""
    try:
        yield
    except (KeyError, TypeError, ValueError) as error:
        raise ProgressEventError(f"not a {what} JSON: missing or bad {error}") from error


def _loads(value: str | bytes | Mapping[str, Any], what: str) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    try:
        data = orjson.loads(value)
    except orjson.JSONDecodeError as error:
        raise ProgressEventError(f"{what} event is not valid JSON: {error}") from error
    if not isinstance(data, Mapping):
        raise ProgressEventError(f"{what} event JSON must be an object, got {type(data).__name__}")
    return data


def _int_or_none(value: Any) -> int | None:
    return None if value is None else int(value)
