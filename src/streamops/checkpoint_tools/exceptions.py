"""Errors of checkpoint_tools' own operations; errors reading a checkpoint live in the core
(`streamops.core.exceptions`), next to the readers that raise them."""

from __future__ import annotations

from streamops.core.exceptions import StreamopsError


class CheckpointToolsError(StreamopsError):
    """Base of every error this package raises."""


class RewindError(CheckpointToolsError):
    """A rewind cannot be planned or applied safely."""
