"""Pipeline subcommands: generate, run, demo. Spark is imported only inside handlers."""

from __future__ import annotations

import argparse

from pipeline.generator import command as generate_command


def register(subparsers: argparse._SubParsersAction) -> None:
    generate_command.register(subparsers)
