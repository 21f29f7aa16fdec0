"""The `streamops generate` subcommand (filled in by the generator work)."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `generate` to the `streamops` root parser."""
