"""The one error base class users see; the CLI turns any of these into a one-line message."""

from __future__ import annotations


def error_line(error: BaseException, limit: int = 200) -> str:
    """`Type: first line of its message` (at most `limit` characters of it): how one failure is
    named inside another one-line message."""
    try:
        text = str(error).strip()
    except Exception:  # noqa: BLE001 - str() of a Py4J error asks the JVM, which may be gone
        text = repr(error)
    return f"{type(error).__name__}: {text.splitlines()[0][:limit] if text else ''}"


class StreamopsError(Exception):
    """An error a user can act on: `str(error)` says what happened and what to do.

    `exit_code` lets the CLI map families of errors to distinct exit codes without parsing text.
    """

    exit_code: int = 2

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class TableNotFoundError(StreamopsError):
    """A Delta table the caller needs does not exist."""


class TableUnreadableError(StreamopsError):
    """A Delta table exists but its log cannot be read (damaged, unreadable storage)."""


class VersionNotInLogError(StreamopsError):
    """A Delta commit the caller needs was removed by log cleanup (or never existed)."""


class CheckpointError(StreamopsError):
    """A Spark checkpoint, or one of its logs, cannot be read as the caller needs."""


class CheckpointNotFoundError(CheckpointError):
    """The path given as a checkpoint is missing or holds no checkpoint."""


class MalformedLogFileError(CheckpointError):
    """A checkpoint log file cannot be parsed (empty, truncated or not what Spark writes).

    Readers turn it into a `LogProblem` so one bad file never hides the rest of a checkpoint;
    only callers that need every entry (`read_file_source_log`) let it reach the user.
    `kind` is one of metadata_log.ProblemKind.
    """

    def __init__(self, message: str, kind: str = "corrupt") -> None:
        super().__init__(message)
        self.kind = kind


class NotAFileSourceLogError(CheckpointError):
    """`sources/<id>` belongs to a source that is not Spark's file source (rate, Kafka, ...)."""
