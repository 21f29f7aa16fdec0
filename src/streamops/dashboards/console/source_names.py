"""What a stream's source reads, named the way its reader knows it: `bronze/events`, topic
`events`, the landing folder, never the connector's class.

Spark names a source only by its `description` (the source's `toString`): native Delta says
`DeltaSource[file:/.../bronze/events]` and Kafka `KafkaV2[Subscribe[events]]`, but a Python data
source (the embedded Delta connector is one) says only its class. So a Delta source is named, in
order, by the path its description holds, by the lake table whose id its offsets name as
`reservoirId` (the way `checkpoint correlate` finds it), and by the table the lake layout says
the stream reads; a Kafka source by its subscription, else by the topics its offsets name; a file
source by its folder. Pure functions: the lookups are passed in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from streamops.core.checkpoint_format.offset_log import classify_offset
from streamops.core.storage.location import Location

BRACKETED = re.compile(r"^(?P<name>[A-Za-z][\w$]*)\[(?P<inner>.*?)\]?$", re.DOTALL)
CLASS_NAME = re.compile(r"^(?:[A-Za-z_$][\w$]*\.)+[A-Za-z_$][\w$]*(?:@[0-9a-fA-F]+)?$")
"""A dotted Java or Python class name, as a source without a `toString` of its own describes itself."""
KAFKA_STRATEGY = re.compile(r"^(?P<strategy>Subscribe|SubscribePattern|Assign)\[(?P<what>.*)\]$", re.DOTALL)
KAFKA_PARTITION = re.compile(r"^(?P<topic>.+)-\d+$")
RATE_OPTION = re.compile(r"(?P<key>rowsPerSecond|rowsPerBatch)=(?P<value>\d+)")
PATH_KINDS = frozenset({"file", "cloud_files"})


def is_class_name(text: str) -> bool:
    """True for `org.apache...PythonMicroBatchStreamWithAdmissionControl` and the like."""
    return bool(CLASS_NAME.match(text.strip()))


def source_name(
    description: str,
    kind: str,
    offsets: Sequence[str | None],
    lake_root: Location,
    table_with_id: Callable[[str], Location | None] = lambda _: None,
    layout_table: Location | None = None,
) -> str:
    """What one source reads. `offsets` are its offsets as the progress holds them (end, start,
    latest; any may be None); `table_with_id` finds the lake's table with a Delta table id;
    `layout_table` is the table the lake layout says the stream reads, if any."""
    bracketed = BRACKETED.match(description.strip())
    inner = bracketed.group("inner").strip() if bracketed else None
    if kind == "delta":
        return _delta_name(inner, offsets, lake_root, table_with_id, layout_table)
    if kind == "kafka":
        return _kafka_name(inner, offsets)
    if kind in PATH_KINDS and inner:
        return place_name(inner, lake_root)
    if kind in ("rate", "rate_micro_batch"):
        option = RATE_OPTION.search(inner or "")
        if option is None:
            return "generated rows"
        per = "rows/s" if option.group("key") == "rowsPerSecond" else "rows a batch"
        return f"generated rows, {int(option.group('value')):,} {per}"
    if kind == "memory":
        return "rows added in memory"
    if kind == "python":
        return "a Python data source"
    if inner and not is_class_name(inner):
        return inner
    if description.strip() and not is_class_name(description):
        return description.strip()
    return "a source Spark does not name"


def place_name(path: str, lake_root: Location) -> str:
    """A table or folder as its reader knows it: below the lake, relative to it (`bronze/events`);
    elsewhere, the local path or the URI."""
    try:
        location = Location.of(path)
    except Exception:  # noqa: BLE001 - a description that is not a path is shown as written
        return path
    relative = location.relative_to(lake_root)
    return relative if relative else str(location)


def _delta_name(
    inner: str | None,
    offsets: Sequence[str | None],
    lake_root: Location,
    table_with_id: Callable[[str], Location | None],
    layout_table: Location | None,
) -> str:
    if inner and not is_class_name(inner):
        return place_name(inner, lake_root)
    table_id = _reservoir_id(offsets)
    table = table_with_id(table_id) if table_id else None
    if table is None:
        table = layout_table
    if table is not None:
        return place_name(str(table), lake_root)
    return f"Delta table {table_id}" if table_id else "a Delta table"


def _reservoir_id(offsets: Sequence[str | None]) -> str | None:
    for raw in offsets:
        if raw:
            offset = classify_offset(raw)
            if offset.delta is not None and offset.delta.reservoir_id:
                return offset.delta.reservoir_id
    return None


def _kafka_name(inner: str | None, offsets: Sequence[str | None]) -> str:
    strategy = KAFKA_STRATEGY.match(inner or "")
    if strategy is not None:
        what = strategy.group("what").strip()
        if strategy.group("strategy") == "SubscribePattern":
            return f"topics matching {what}"
        names = [n.strip() for n in what.split(",") if n.strip()]
        if strategy.group("strategy") == "Assign":
            names = [m.group("topic") if (m := KAFKA_PARTITION.match(n)) else n for n in names]
        return _topics(names)
    topics: list[str] = []
    for raw in offsets:
        if raw:
            offset = classify_offset(raw)
            if offset.kind == "kafka":
                topics.extend(offset.value)
    return _topics(topics) if topics else "Kafka topics"


def _topics(names: Sequence[str]) -> str:
    unique = list(dict.fromkeys(names))
    return f"topic {unique[0]}" if len(unique) == 1 else "topics " + ", ".join(unique)
