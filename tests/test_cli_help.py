"""Every command and subcommand shows an example in its help, and the README lists every command."""

from __future__ import annotations

import argparse
from pathlib import Path

from streamops.cli import build_parser

README = Path(__file__).resolve().parent.parent / "README.md"


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield path + (name,), sub
                yield from commands(sub, path + (name,))


def test_every_command_has_an_example_in_its_help():
    found = list(commands(build_parser()))
    assert len(found) >= 11
    missing = [" ".join(p) for p, sub in found if "example" not in sub.format_help().lower()]
    assert not missing, f"commands without an example in --help: {missing}"


def test_the_readme_documents_every_top_level_command():
    readme = README.read_text()
    top = {p[0] for p, _ in commands(build_parser()) if len(p) == 1}
    assert {c for c in top if f"streamops {c}" not in readme} == set()
