"""Which Delta tables streamops' own readers can read: the table's protocol decides.

A Delta reader must refuse a table whose protocol asks for more than it implements (PROTOCOL.md,
"Table Features"): reader version 1 needs nothing, version 2 adds column mapping, version 3 lists
what it needs in `readerFeatures`, and any later version is unknown. A refusal names one
feature, the first this reader lacks, so the message stays one line.
"""

from __future__ import annotations

from typing import Iterable, Protocol

READABLE_READER_FEATURES: frozenset[str] = frozenset(
    {
        "columnMapping",  # streamops.column_mapping
        "deletionVectors",  # streamops.deletion_vectors
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
