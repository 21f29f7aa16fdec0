"""Where bronze's lines come from: one `LineInput` per kind of source (landing files:
bronze/landing_input.py; Kafka topics: bronze/kafka_input.py).

Whatever the source, a line is one row of `value` (its bytes), `source_file` and `source_mtime`
(what orders a batch's lines: the landing file and its modification time, or
`kafka://topic/partition/offset` and the record's timestamp), and the record's Kafka coordinates
and key (null for a file's line). The classifiers carry the coordinates through unchanged, so
every bronze and quarantine row names the record it came from, and a silver row traces back to
it through bronze. Last come the line's whole length in bytes (`line_bytes`) and, for a file's
line, its byte offset in the file (`line_offset`): `value` holds at most `max_line_bytes + 1`
bytes, and a longer line is judged `too_large` by its whole length and named by its offset.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

LINE_OFFSET = "line_offset"
LINE_BYTES = "line_bytes"

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from streamops.core.checkpoint_format.kafka_positions import LostRange
    from streamops.core.delta_format.commit_metadata import BatchCommitInfo
    from streamops.core.storage.location import Location
    from streamops.monitor.kafka_groups import KafkaGroupCommits


class LineInput(Protocol):
    """One source of bronze's lines: everything the run needs to know about it, so that no part
    of the run asks which kind of source it has."""

    @property
    def locations(self) -> tuple[Location, ...]:
        """The stores the input is read from: Spark needs their connectors, and their outages
        explain a failed stream."""
        ...

    def spark_packages(self) -> list[str]:
        """The Maven coordinates Spark needs to read the input."""
        ...

    def describe(self) -> str:
        """Where the lines come from, for messages."""
        ...

    def prepare(self, checkpoint: Location, stream: str) -> None:
        """Before each start of `stream`: make the input readable, or stop with one line saying why
        the start would lose lines."""
        ...

    def lines(self, spark: SparkSession, max_line_bytes: int) -> DataFrame:
        """The input as a stream of lines (the module docstring's columns), each `value` cut
        after `max_line_bytes + 1` bytes."""
        ...

    def lost_in_batch(self, df: DataFrame, commit: BatchCommitInfo) -> list[LostRange]:
        """What the batch was planned to read and the source no longer held (recorded, not hidden)."""
        ...

    def group_commits(self, stream: str) -> KafkaGroupCommits | None:
        """Where the monitor publishes `stream`'s position for the source's own tools, if anywhere."""
        ...
