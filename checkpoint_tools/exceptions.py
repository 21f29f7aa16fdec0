"""Errors of checkpoint_tools: each says what is wrong with which path and what to do."""

from __future__ import annotations

from streamops.exceptions import StreamopsError


class CheckpointToolsError(StreamopsError):
    """Base of every error this package raises."""


class CheckpointNotFoundError(CheckpointToolsError):
    """The path given as a checkpoint is missing or holds no checkpoint."""


class MalformedLogFileError(CheckpointToolsError):
    """A checkpoint log file cannot be parsed (empty, truncated or not what Spark writes).

    Readers turn it into a `LogProblem` so one bad file never hides the rest of a checkpoint;
    only callers that need every entry (`read_file_source_log`) let it reach the user.
    `kind` is one of metadata_log.ProblemKind.
    """

    def __init__(self, message: str, kind: str = "corrupt") -> None:
        super().__init__(message)
        self.kind = kind


class NotAFileSourceLogError(CheckpointToolsError):
    """`sources/<id>` belongs to a source that is not Spark's file source (rate, Kafka, ...)."""


class RewindError(CheckpointToolsError):
    """A rewind cannot be planned or applied safely."""
