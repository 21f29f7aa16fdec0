"""MkDocs hook: the CLI and metrics references, generated at build time from the code.

A page holds a marker (`<!-- streamops:cli -->`, `<!-- streamops:metrics -->`) and the build
replaces it with the reference made from the argparse parsers (`streamops.cli.build_parser`)
or the metric catalog (`streamops.monitor.metric_catalog.CATALOG`), so a flag or a metric
cannot exist without its documentation. `tests/test_docs.py` builds the site and checks it.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator

CLI_MARKER = "<!-- streamops:cli -->"
METRICS_MARKER = "<!-- streamops:metrics -->"


def on_page_markdown(markdown: str, **_: object) -> str:
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if METRICS_MARKER in markdown:
        markdown = markdown.replace(METRICS_MARKER, metrics_reference())
    return markdown


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and subcommand with its parser, depth first, in the order `--help` lists them."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def options(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    """The parser's own arguments and flags (not `--help`, not its subcommands)."""
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        yield action


def cli_reference() -> str:
    from streamops.cli import build_parser

    root = build_parser()
    parts = ["```text", root.format_usage().strip(), "```", ""]
    for path, parser in commands(root):
        parts += [f"{'#' * min(len(path) + 1, 4)} `streamops {' '.join(path)}`", ""]
        parts += [(parser.description or "").strip(), ""]
        flags = [_option_row(action) for action in options(parser)]
        if flags:
            parts += ["| argument | meaning |", "|---|---|", *flags, ""]
        if parser.epilog:
            parts += ["```text", parser.epilog.strip(), "```", ""]
    return "\n".join(parts)


def _option_row(action: argparse.Action) -> str:
    name = ", ".join(action.option_strings) or action.metavar or action.dest
    if action.option_strings and action.nargs != 0:
        name += f" {action.metavar or action.dest.upper()}"
    meaning = (action.help or "").replace("|", "\\|")
    if action.choices and not isinstance(action.choices, dict):
        meaning += f" (one of: {', '.join(map(str, action.choices))})"
    if action.required and action.option_strings:
        meaning += " **required**"
    return f"| `{name}` | {meaning} |"


def metrics_reference() -> str:
    from streamops.monitor.metric_catalog import CATALOG

    rows = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for spec in CATALOG:
        name = exposed_name(spec)
        labels = ", ".join(f"`{label}`" for label in spec.labels)
        extra = ""
        if spec.states:
            extra = f" States: {', '.join(f'`{state}`' for state in spec.states)}."
        if spec.info_keys:
            extra = f" Keys: {', '.join(f'`{key}`' for key in spec.info_keys)}."
        rows.append(f"| `{name}` | {spec.kind} | {labels} | {spec.help.replace('|', '/')}.{extra} |")
    return "\n".join(rows)


def exposed_name(spec) -> str:
    """The name a scrape shows: prometheus_client adds `_info` to an info metric."""
    return spec.name + ("_info" if spec.kind == "info" else "")
