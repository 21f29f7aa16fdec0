"""Listener events as frozen records with snake_case fields, built once from Spark's JSON.

Spark's own Python conversion (`StreamingQueryProgress.fromJObject`) makes dozens of Py4J
round-trips per event, a large cost on a small driver; the monitor instead asks the JVM for the
event's JSON (one round-trip) and builds these records from it. The same constructors read
recorded JSON, so status rules, backlog and the exporter are tested without a JVM.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any, ClassVar, Iterator, Literal, Mapping, Sequence, Union

import orjson

from streamops.monitor.exceptions import ProgressEventError

EventKind = Literal["started", "progress", "idle", "terminated"]
WATERMARK = "watermark"
EVENT_KINDS: tuple[EventKind, ...] = ("started", "progress", "idle", "terminated")
MAX_MESSAGE_CHARS = 500


def iso_to_epoch(value: str | None) -> float | None:
    """Spark's ISO-8601 UTC timestamps ("2024-05-01T10:00:00.123Z") as Unix seconds."""
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def _json_text(value: Any) -> str | None:
    """Offsets and metric maps are arbitrary JSON per source; keep them as compact JSON text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _count(value: Any) -> int:
    """A count a newer Spark or a connector may omit or mistype: 0 rather than losing the event."""
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def _rate(value: Any) -> float:
    try:
        return float(value or 0.0)
    except (TypeError, ValueError):
        return 0.0


@dataclass(frozen=True)
class SourceProgress:
    """One source of a progress event. `metrics` is the source's own metrics map as JSON text
    (Kafka's offsets behind latest, Delta's and Auto Loader's outstanding files and bytes, or
    whatever a connector reports), read by `streamops.monitor.source_lag`."""

    description: str
    start_offset: str | None
    end_offset: str | None
    latest_offset: str | None
    num_input_rows: int
    input_rows_per_second: float
    processed_rows_per_second: float
    metrics: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SourceProgress:
        return cls(
            description=str(data.get("description") or ""),
            start_offset=_json_text(data.get("startOffset")),
            end_offset=_json_text(data.get("endOffset")),
            latest_offset=_json_text(data.get("latestOffset")),
            num_input_rows=_count(data.get("numInputRows")),
            input_rows_per_second=_rate(data.get("inputRowsPerSecond")),
            processed_rows_per_second=_rate(data.get("processedRowsPerSecond")),
            metrics=_json_text(data.get("metrics") or None),
        )

    def metric_values(self) -> dict[str, float]:
        """The numeric entries of the metrics map (Spark writes them as strings: "4.0")."""
        if not self.metrics:
            return {}
        try:
            data = orjson.loads(self.metrics)
        except orjson.JSONDecodeError:
            return {}
        values: dict[str, float] = {}
        for key, value in data.items() if isinstance(data, dict) else ():
            if isinstance(value, bool):
                continue
            try:
                number = float(value)
            except (TypeError, ValueError):
                continue
            if math.isfinite(number):
                values[str(key)] = number
        return values

    def to_row(self) -> dict[str, Any]:
        """The progress log's struct for one source: these fields, under these names."""
        return asdict(self)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> SourceProgress:
        """Read back what `to_row` wrote: `streamops status` measures backlog from logged sources."""
        return cls(**{name: row.get(name) for name in SOURCE_FIELDS})


SOURCE_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(SourceProgress))


DEFAULT_OPERATOR_NAME = "stateOperator"
"""What an operator is called when Spark names none (before Spark 3.1)."""


@dataclass(frozen=True)
class StateOperatorProgress:
    """One stateful operator of a batch (`stateOperators[]`): an aggregation, a deduplication, a
    stream-stream join or a (transform|flatMap)WithState. Counts cover every state store
    instance of the operator; `custom_metrics` are the state store provider's own (RocksDB's
    commit latencies and file sizes, for instance), kept whole."""

    operator_name: str
    num_rows_total: int
    num_rows_updated: int
    num_rows_removed: int
    memory_used_bytes: int
    num_rows_dropped_by_watermark: int
    commit_time_ms: int
    custom_metrics: Mapping[str, int]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StateOperatorProgress:
        custom = data.get("customMetrics")
        return cls(
            operator_name=str(data.get("operatorName") or DEFAULT_OPERATOR_NAME),
            num_rows_total=_count(data.get("numRowsTotal")),
            num_rows_updated=_count(data.get("numRowsUpdated")),
            num_rows_removed=_count(data.get("numRowsRemoved")),
            memory_used_bytes=_count(data.get("memoryUsedBytes")),
            num_rows_dropped_by_watermark=_count(data.get("numRowsDroppedByWatermark")),
            commit_time_ms=_count(data.get("commitTimeMs")),
            custom_metrics={
                str(k): v for k, v in (custom.items() if isinstance(custom, Mapping) else ()) if _is_int(v)
            },
        )


def operator_labels(operators: Sequence[StateOperatorProgress]) -> list[str]:
    """The `operator` label of each stateful operator: its name, plus its position in the plan
    when the query has several (`stateStoreSave_0`, `symmetricHashJoin_1`), so two operators of
    the same kind stay apart and the label set stays as small as the plan."""
    if len(operators) == 1:
        return [operators[0].operator_name]
    return [f"{op.operator_name}_{index}" for index, op in enumerate(operators)]


def observed_value(value: Any) -> float | None:
    """An observed metric's value as a gauge: numbers, and booleans as 1 and 0; None for what a
    gauge cannot hold (null, strings, dates and timestamps, which Spark writes as strings, structs,
    arrays, maps). NaN and the infinities are None too: JSON has no such numbers and Spark writes
    them as strings ("NaN", "Infinity"), which cannot be told from a string column's value."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        number = float(value)
        return number if math.isfinite(number) else None
    return None


def _observed_metrics(value: Any) -> dict[str, dict[str, Any]]:
    """`observedMetrics`: each named observation's row of metrics, as Spark wrote it (a row
    that is not a JSON object is skipped)."""
    return {str(name): dict(row) for name, row in _mapping(value).items() if isinstance(row, Mapping)}


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
    """One StreamingQueryProgress. Rates Spark omits (NaN) read as 0.

    `observed_metrics` are the batch's named observations (`df.observe(name, ...)` in the
    query's code), each a map of metric name to its value as Spark wrote it: numbers, booleans,
    strings, nulls or nested objects."""

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
    state_operators: tuple[StateOperatorProgress, ...] = ()
    observed_metrics: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    kind: ClassVar[EventKind] = "progress"

    def observed_values(self) -> dict[str, dict[str, float]]:
        """The observed metrics a gauge can hold (`observed_value`), by observation and metric
        name; an observation with none of them is left out."""
        values: dict[str, dict[str, float]] = {}
        for observation, metrics in self.observed_metrics.items():
            numbers = {
                str(metric): number
                for metric, value in metrics.items()
                if (number := observed_value(value)) is not None
            }
            if numbers:
                values[observation] = numbers
        return values

    @property
    def has_watermark(self) -> bool:
        """The query defines a watermark (Spark reports `eventTime.watermark` only then)."""
        return WATERMARK in self.event_time

    @property
    def watermark(self) -> float | None:
        """The batch's watermark (Unix seconds); None before Spark has set one (it reports the
        epoch until the first batch with event times has run) or without a watermark."""
        value = self.event_time.get(WATERMARK)
        return value if value else None

    @classmethod
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> QueryProgress:
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
                batch_duration_ms=_count(data.get("batchDuration")),
                num_input_rows=_count(data.get("numInputRows")),
                input_rows_per_second=_rate(data.get("inputRowsPerSecond")),
                processed_rows_per_second=_rate(data.get("processedRowsPerSecond")),
                duration_ms={k: int(v) for k, v in _mapping(data.get("durationMs")).items() if _is_int(v)},
                event_time={
                    k: t for k, v in _mapping(data.get("eventTime")).items() if (t := _epoch_or_none(v)) is not None
                },
                sources=tuple(SourceProgress.from_dict(s) for s in _objects(data.get("sources"))),
                sink_description=str(sink.get("description") or ""),
                sink_output_rows=_int_or_none(sink.get("numOutputRows")),
                state_operators=tuple(
                    StateOperatorProgress.from_dict(op) for op in _objects(data.get("stateOperators"))
                ),
                observed_metrics=_observed_metrics(data.get("observedMetrics")),
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
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> QueryStarted:
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
    def from_json(cls, value: str | bytes | Mapping[str, Any]) -> QueryIdle:
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
    def from_json(cls, value: str | bytes | Mapping[str, Any], received_at: float) -> QueryTerminated:
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


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _objects(value: Any) -> list[Mapping[str, Any]]:
    """The JSON objects of a list field; anything else in it is skipped, not fatal."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _epoch_or_none(value: Any) -> float | None:
    try:
        return iso_to_epoch(value) if isinstance(value, str) else None
    except ValueError:
        return None
