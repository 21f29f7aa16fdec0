"""Errors the pipeline raises for conditions a user can fix."""

from __future__ import annotations

from streamops.core.exceptions import StreamopsError


class JavaNotFoundError(StreamopsError):
    """Spark needs a JVM and none is installed."""


class PipelineConfigError(StreamopsError):
    """A pipeline setting or input path is wrong."""


class IncompatibleSchemaError(StreamopsError):
    """An event type changed a field's type in a way that cannot be cast (on_incompatible=fail_group).

    `stream` is the silver stream it stops, so the supervisor can hold that stream alone.
    """

    def __init__(self, message: str, stream: str) -> None:
        super().__init__(message)
        self.stream = stream


class ExpectationFailedError(IncompatibleSchemaError):
    """Rows of a batch failed a data-quality rule whose action is `fail`: the batch wrote nothing
    and its group stops the way on_incompatible=fail_group stops it, the other groups go on."""


class SparkEndedError(StreamopsError):
    """Spark's JVM exited before the run stopped it: its streams stopped wherever they were, and
    each resumes from its checkpoint when the run starts again. Exit code 1, as a failed stream's."""

    exit_code = 1


class DemoError(StreamopsError):
    """A part of `streamops demo` (the console, the load) could not start or stopped with an error."""


class LakeTableError(StreamopsError):
    """A lake table cannot be read or written for a reason no record causes (storage full,
    permissions, a damaged log): the stream stops and is retried, nothing is quarantined."""


class StorageFullError(LakeTableError):
    """The device under a local lake ran out of space while a batch was being written. Nothing
    of the batch was committed (its files are deleted); it is replayed once space is freed."""
