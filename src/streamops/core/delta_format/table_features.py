"""Which Delta tables streamops' own readers can read: the table's protocol decides.

A Delta reader must refuse a table whose protocol asks for more than it implements (PROTOCOL.md,
"Table Features"): reader version 1 needs nothing, version 2 adds column mapping, version 3 lists
what it needs in `readerFeatures`, and any later version is unknown. A refusal names one
feature, the first this reader lacks, so the message stays one line.

The protocol is read from the log itself, not through delta-rs: delta-rs refuses to open a table
whose features it lacks (an error that names no feature in a form a program may rely on), and
"which feature?" is exactly the question to answer. The latest protocol action is in the newest
commit that has one, or else in the checkpoint those commits start from.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Protocol

import pyarrow.parquet as pq

from streamops.core.delta_format.log import DeltaLog
from streamops.core.exceptions import TableUnreadableError
from streamops.core.lake_layout import DELTA_LOG_DIR
from streamops.core.storage.arrow_filesystem import arrow_filesystem

READABLE_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",  # streamops.core.delta_format.column_mapping
        "deletionVectors",  # streamops.core.delta_format.deletion_vectors
        "timestampNtz",  # Arrow's timestamp without time zone, Spark's TIMESTAMP_NTZ
        "typeWidening",  # older files hold narrower types: read, then cast to the table's
        "typeWidening-preview",
        "v2Checkpoint",  # snapshots come from delta-rs, which reads v2 checkpoints and sidecars
        "vacuumProtocolCheck",  # a rule for VACUUM, nothing for a reader to do
    }
)
FEATURES_READER_VERSION = 3


class ReaderProtocol(Protocol):
    """What delta-rs's `ProtocolVersions` says about reading."""

    min_reader_version: int
    reader_features: list[str] | None


def unreadable_reader_feature(
    protocol: ReaderProtocol, readable: Iterable[str] = READABLE_READER_FEATURES
) -> str | None:
    """The first thing `protocol` requires that a reader of `readable` features lacks, or None."""
    if protocol.min_reader_version > FEATURES_READER_VERSION:
        return f"reader version {protocol.min_reader_version}"
    if protocol.min_reader_version < FEATURES_READER_VERSION:
        return None
    known = frozenset(readable)
    return next((f for f in sorted(protocol.reader_features or ()) if f not in known), None)


@dataclass(frozen=True)
class TableProtocol:
    min_reader_version: int
    reader_features: list[str] | None

    @classmethod
    def from_action(cls, action: Mapping[str, Any]) -> TableProtocol:
        features = action.get("readerFeatures")
        return cls(int(action.get("minReaderVersion") or 1), None if features is None else list(features))


def read_protocol(log: DeltaLog) -> TableProtocol:
    """The table's current protocol, from its newest commits or the checkpoint before them."""
    commits: list[int] = []
    checkpoints: dict[int, list[str]] = {}
    for name in log.log_file_names():
        stem = name.split(".", 1)[0]
        if not stem.isdigit():
            continue
        if ".checkpoint." in name:
            checkpoints.setdefault(int(stem), []).append(name)
        elif name == f"{stem}.json":
            commits.append(int(stem))
    latest = max(commits, default=max(checkpoints, default=-1))
    base = max((v for v in checkpoints if v <= latest), default=-1)
    for version in range(latest, base, -1):
        action = log.commit(version).protocol
        if action is not None:
            return TableProtocol.from_action(action)
    for name in sorted(checkpoints.get(base, ())):
        action = _checkpoint_protocol(log, name)
        if action is not None:
            return TableProtocol.from_action(action)
    raise TableUnreadableError(
        f"the Delta log of `{log.table}` holds no protocol action: restore the table (or its log) from a backup"
    )


def _checkpoint_protocol(log: DeltaLog, name: str) -> Mapping[str, Any] | None:
    """The protocol in one checkpoint file (classic or v2, Parquet or JSON), if it holds it."""
    location = log.table / DELTA_LOG_DIR / name
    if name.endswith(".json"):
        actions = (json.loads(line) for line in location.read_bytes().splitlines() if line.strip())
        return next((a["protocol"] for a in actions if "protocol" in a), None)
    column = pq.read_table(name, columns=["protocol"], filesystem=arrow_filesystem(location.parent)).column(0)
    return next((value for value in column.to_pylist() if value is not None), None)
