"""Subcommands of this package (filled in by its issue)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add this package's subcommands to the `streamops` root parser."""
