"""Errors of the dashboards package; the CLI prints them as one line."""

from __future__ import annotations

from streamops.core.exceptions import StreamopsError


class OutputDirectoryError(StreamopsError):
    """The generated files cannot be written where the user asked."""


class ConsoleError(StreamopsError):
    """The ops console cannot start or cannot read what it was pointed at."""
