"""The one error base class users see; the CLI turns any of these into a one-line message."""

from __future__ import annotations


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
