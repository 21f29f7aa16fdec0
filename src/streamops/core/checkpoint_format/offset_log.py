"""The offset log (`offsets/<batch>`) and commit log (`commits/<batch>`) of a checkpoint.

An offsets file is Spark's write-ahead record of a planned batch:

    v1
    {"batchWatermarkMs":0,"batchTimestampMs":1795324021807,"conf":{...}}
    {"sourceVersion":1,"reservoirId":"...","reservoirVersion":0,"index":4,"isStartingVersion":true}
    -

one line per source, in the order the query's sources were defined (`-`: that source had no
offset yet). Spark 4.x can write `v2` instead (`spark.sql.streaming.offsetLog.formatVersion=2`,
for source evolution): the metadata line gains `sourceMetadataInfo` and each source line is keyed
by the source's id or name, `0:{"logOffset":2}`. Both read into the same `OffsetBatch`, sources
in id order with their ids kept. Only end offsets are stored; a batch's start is the previous
batch's end. A commits file (`v1`, or `v2`/`v3` with the state stores' `stateUniqueIds` and the
sink's metadata) marks the batch as done.

Source offsets are classified by shape so every source reads the same way: Delta (ours and
native Delta share one shape), Spark's file source, Kafka, rate and plain numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from streamops.core.checkpoint_format.metadata_log import LogFile, LogProblem, read_versioned
from streamops.core.delta_format.source_offsets import DeltaSourceOffset
from streamops.core.exceptions import MalformedLogFileError
from streamops.core.storage.location import Location, LocationLike

SourceKind = Literal["delta", "file", "kafka", "rate_micro_batch", "number", "unknown", "none"]
OFFSET_LOG_VERSIONS = (1, 2)
COMMIT_LOG_VERSIONS = (1, 2, 3)
KEYED_OFFSET_LOG_VERSION = 2
NO_OFFSET = "-"


@dataclass(frozen=True)
class SourceOffset:
    """One source's end offset as written, with its shape recognised."""

    kind: SourceKind
    raw: str | None
    value: Any = None

    @property
    def delta(self) -> DeltaSourceOffset | None:
        return DeltaSourceOffset.from_json(self.value) if self.kind == "delta" else None

    @property
    def file_log_offset(self) -> int | None:
        return int(self.value["logOffset"]) if self.kind == "file" else None

    def to_json(self) -> Any:
        return self.value if self.kind != "unknown" else self.raw


NONE_OFFSET = SourceOffset("none", None, None)


def classify_offset(raw: str) -> SourceOffset:
    """Recognise a source offset line; anything unrecognised is kept verbatim as `unknown`."""
    text = raw.strip()
    if text == NO_OFFSET or not text:
        return NONE_OFFSET
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return SourceOffset("unknown", text, None)
    if DeltaSourceOffset.is_delta_offset(value):
        return SourceOffset("delta", text, value)
    if isinstance(value, dict) and set(value) == {"logOffset"}:
        return SourceOffset("file", text, value)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return SourceOffset("number", text, value)
    if isinstance(value, dict) and "offset" in value and "timestamp" in value:
        return SourceOffset("rate_micro_batch", text, value)
    if _is_kafka(value):
        return SourceOffset("kafka", text, value)
    return SourceOffset("unknown", text, value)


def _is_kafka(value: Any) -> bool:
    """Kafka's offset: {"topic": {"partition": offset, ...}, ...}."""
    return (
        isinstance(value, dict)
        and bool(value)
        and all(
            isinstance(parts, dict)
            and parts
            and all(k.lstrip("-").isdigit() and isinstance(v, int) for k, v in parts.items())
            for parts in value.values()
        )
    )


def offset_position(offset: SourceOffset) -> tuple | None:
    """A value that only grows while one writer advances the source (None: not comparable)."""
    if offset.kind == "delta":
        return offset.delta.position  # type: ignore[union-attr]
    if offset.kind == "file":
        return (offset.file_log_offset,)
    if offset.kind == "number":
        return (offset.value,)
    if offset.kind == "rate_micro_batch":
        return (offset.value["offset"],)
    return None


def kafka_regressions(before: SourceOffset, after: SourceOffset) -> dict[str, tuple[int, int]]:
    """Kafka partitions whose offset went backwards between two batches: {"topic/p": (old, new)}."""
    if before.kind != "kafka" or after.kind != "kafka":
        return {}
    moved = {}
    for topic, parts in after.value.items():
        for partition, new in parts.items():
            old = before.value.get(topic, {}).get(partition)
            if isinstance(old, int) and new < old:
                moved[f"{topic}/{partition}"] = (old, new)
    return moved


@dataclass(frozen=True)
class OffsetSeqMetadata:
    batch_watermark_ms: int
    batch_timestamp_ms: int
    conf: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class OffsetBatch:
    """The planned batch `batch_id`: when, with which conf, up to which offset per source."""

    batch_id: int
    log_version: int
    metadata: OffsetSeqMetadata | None
    sources: tuple[SourceOffset, ...]
    file: LogFile
    version_problem: LogProblem | None = None
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommitBatch:
    batch_id: int
    log_version: int
    next_batch_watermark_ms: int | None
    file: LogFile
    extra: Mapping[str, Any] = field(default_factory=dict)
    version_problem: LogProblem | None = None

    @property
    def state_unique_ids(self) -> Mapping[str, list[list[str]]]:
        """Per stateful operator id, per partition, the ids of the state files this batch wrote
        (checkpoint format v2, commit log v2+): the only state files a restart may load."""
        return self.extra.get("stateUniqueIds") or {}


def parse_offsets(log_file: LogFile) -> OffsetBatch:
    """Parse one offsets file; raises `MalformedLogFileError` when Spark could not read it either."""
    text, version_problem = read_versioned(log_file.path, OFFSET_LOG_VERSIONS)
    try:
        metadata, keyed = _parse_offset_body(log_file, list(text.lines), text.version == KEYED_OFFSET_LOG_VERSION)
    except MalformedLogFileError as error:
        if version_problem is None:
            raise
        raise MalformedLogFileError(
            f"`{log_file.path}` is in log version v{text.version}, whose layout these tools do not "
            f"know (they read v{', v'.join(map(str, OFFSET_LOG_VERSIONS))})",
            "unknown_version",
        ) from error
    return OffsetBatch(
        log_file.batch_id,
        text.version,
        metadata,
        tuple(offset for _, offset in keyed),
        log_file,
        version_problem,
        tuple(source_id for source_id, _ in keyed),
    )


def _parse_offset_body(
    log_file: LogFile, lines: list[str], keyed: bool
) -> tuple[OffsetSeqMetadata, list[tuple[str, SourceOffset]]]:
    if not lines or not lines[0].strip():
        raise MalformedLogFileError(
            f"`{log_file.path}` has a version line but no batch metadata (the file is truncated)",
            "truncated",
        )
    metadata = _parse_metadata(log_file, lines[0], is_last=len(lines) == 1)
    source_lines = lines[1:]
    if not source_lines:
        raise MalformedLogFileError(f"`{log_file.path}` records no source offsets (the file is truncated)", "truncated")
    sources = []
    for number, line in enumerate(source_lines, start=3):
        source_id, text = _split_source_key(log_file, number, line) if keyed else (str(number - 3), line)
        offset = classify_offset(text)
        if offset.kind == "unknown" and offset.value is None and number == len(lines) + 1:
            raise MalformedLogFileError(
                f"`{log_file.path}` line {number} is cut short: {line[:60]!r} (the file is truncated)",
                "truncated",
            )
        sources.append((source_id, offset))
    if keyed:
        sources.sort(key=lambda pair: (0, int(pair[0]), "") if pair[0].isdigit() else (1, 0, pair[0]))
    return metadata, sources


def _split_source_key(log_file: LogFile, number: int, line: str) -> tuple[str, str]:
    """A v2 source line, `<source id or name>:<offset JSON or ->`."""
    source_id, colon, text = line.partition(":")
    if not colon or not source_id or any(c in source_id for c in '{"[ '):
        raise MalformedLogFileError(
            f"`{log_file.path}` line {number} is not `<source>:<offset>` as offset log v2 writes it: {line[:60]!r}",
            "corrupt",
        )
    return source_id, text


def _parse_metadata(log_file: LogFile, line: str, is_last: bool) -> OffsetSeqMetadata:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as error:
        raise MalformedLogFileError(
            f"`{log_file.path}` batch metadata is not JSON" + (" (the file is truncated)" if is_last else f": {error}"),
            "truncated" if is_last else "corrupt",
        ) from error
    if not isinstance(value, dict):
        raise MalformedLogFileError(f"`{log_file.path}` batch metadata is not a JSON object")
    return OffsetSeqMetadata(
        batch_watermark_ms=int(value.get("batchWatermarkMs", 0)),
        batch_timestamp_ms=int(value.get("batchTimestampMs", 0)),
        conf={str(k): str(v) for k, v in (value.get("conf") or {}).items()},
    )


def read_batch_offsets(checkpoint: LocationLike, batch_id: int) -> OffsetBatch | None:
    """The planned offsets of one batch, or None when the file is missing or unreadable."""
    path = Location.of(checkpoint) / "offsets" / str(batch_id)
    try:
        stat = path.stat()
        if stat is None:
            return None
        return parse_offsets(LogFile(batch_id, path, False, stat.size, stat.mtime_ms))
    except (FileNotFoundError, MalformedLogFileError):
        return None


def parse_commit(log_file: LogFile) -> CommitBatch:
    text, version_problem = read_versioned(log_file.path, COMMIT_LOG_VERSIONS)
    body = next((line for line in text.lines if line.strip()), None)
    if body is None:
        raise MalformedLogFileError(
            f"`{log_file.path}` has a version line but no commit metadata (the file is truncated)",
            "truncated",
        )
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError as error:
        raise MalformedLogFileError(
            f"`{log_file.path}` commit metadata is not JSON (the file is truncated or corrupt)",
            "truncated",
        ) from error
    if not isinstance(value, dict):
        raise MalformedLogFileError(f"`{log_file.path}` commit metadata is not a JSON object")
    watermark = value.get("nextBatchWatermarkMs")
    extra = {k: v for k, v in value.items() if k != "nextBatchWatermarkMs"}
    return CommitBatch(
        log_file.batch_id,
        text.version,
        int(watermark) if watermark is not None else None,
        log_file,
        extra,
        version_problem,
    )
