"""What every streamops batch commit records in Delta's commitInfo, so a commit can be tied
back to the stream, query and micro-batch that made it (and the source range it read).

The writer builds it, checkpoint_tools and the monitor read it: the key names live only here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

PREFIX = "streamops."
STREAM = PREFIX + "stream"
QUERY_ID = PREFIX + "queryId"
BATCH_ID = PREFIX + "batchId"
SOURCE_START = PREFIX + "sourceStartOffset"
SOURCE_END = PREFIX + "sourceEndOffset"
STREAMING_OPERATION = "STREAMING UPDATE"
USER_METADATA = "userMetadata"


@dataclass(frozen=True)
class BatchCommitInfo:
    """The identity of one micro-batch commit. Offsets are kept as the JSON text Spark logged."""

    stream: str
    batch_id: int
    query_id: str | None = None
    source_start: str | None = None
    source_end: str | None = None

    def to_custom_metadata(self) -> dict[str, Any]:
        """Keys for delta-rs `CommitProperties.custom_metadata`.

        `operationParameters` mirrors what Spark's Delta sink records for STREAMING UPDATE
        (outputMode, queryId, epochId); delta-rs fixes `operation` to WRITE, so the streaming
        operation name is recorded as `streamops.operation` instead.
        """
        metadata: dict[str, Any] = {
            STREAM: self.stream,
            BATCH_ID: self.batch_id,
            PREFIX + "operation": STREAMING_OPERATION,
            "operationParameters": {
                "outputMode": "Append",
                "queryId": self.query_id or "",
                "epochId": str(self.batch_id),
            },
        }
        if self.query_id:
            metadata[QUERY_ID] = self.query_id
        if self.source_start is not None:
            metadata[SOURCE_START] = self.source_start
        if self.source_end is not None:
            metadata[SOURCE_END] = self.source_end
        return metadata

    def to_user_metadata(self) -> str:
        """The same keys as one JSON text, for delta-spark's `userMetadata` write option (it
        has no custom commitInfo keys): `commitInfo.userMetadata` holds them."""
        keys = {k: v for k, v in self.to_custom_metadata().items() if k.startswith(PREFIX)}
        return json.dumps(keys, sort_keys=True)

    @classmethod
    def from_commit_info(cls, commit_info: Mapping[str, Any]) -> BatchCommitInfo | None:
        """Read it back from a commitInfo action, written by delta-rs (its own keys) or by
        delta-spark (`userMetadata`); None when the commit was not a streamops batch."""
        if STREAM not in commit_info:
            commit_info = _user_metadata(commit_info)
        if STREAM not in commit_info or BATCH_ID not in commit_info:
            return None
        return cls(
            stream=str(commit_info[STREAM]),
            batch_id=int(commit_info[BATCH_ID]),
            query_id=commit_info.get(QUERY_ID),
            source_start=_as_text(commit_info.get(SOURCE_START)),
            source_end=_as_text(commit_info.get(SOURCE_END)),
        )


def txn_holds_batch(txn_version: int | None, batch_id: int) -> bool:
    """Whether a table whose `txn` for a stream is at `txn_version` (None: no txn for it) already
    holds the stream's batch `batch_id`. A stream's batch ids only grow, so a txn at or past the
    batch id means the batch (and every older one) is in the table: a replay commits nothing."""
    return txn_version is not None and txn_version >= batch_id


def _user_metadata(commit_info: Mapping[str, Any]) -> Mapping[str, Any]:
    text = commit_info.get(USER_METADATA)
    if not isinstance(text, str) or PREFIX not in text:
        return {}
    try:
        parsed = json.loads(text)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _as_text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True)
