"""The docs site builds without a warning and documents every command, flag, metric and
doctor finding; the README stays a landing page.

The CLI and metrics references are generated from the code at build time
(docs/hooks/reference.py), so these tests check what a reader gets: the built pages.
"""

from __future__ import annotations

import argparse
import html
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from streamops.checkpoint_tools.findings import CATALOG as FINDINGS
from streamops.cli import build_parser
from streamops.monitor.metric_catalog import CATALOG as METRICS

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200


def _reference_hook():
    spec = importlib.util.spec_from_file_location("reference_hook", ROOT / "docs" / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


HOOK = _reference_hook()


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return out


def page_text(site: Path, page: str) -> str:
    """A built page's text, tags dropped and entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", (site / page / "index.html").read_text()))


def test_every_command_and_flag_is_in_the_cli_reference(site):
    text = page_text(site, "cli")
    missing = []
    for path, parser in HOOK.commands(build_parser()):
        if f"streamops {' '.join(path)}" not in text:
            missing.append(" ".join(path))
        for action in HOOK.options(parser):
            for flag in action.option_strings:
                if flag not in text:
                    missing.append(f"{' '.join(path)} {flag}")
    assert missing == []


def test_every_command_and_flag_says_what_it_is_for():
    undocumented = []
    for path, parser in HOOK.commands(build_parser()):
        if not (parser.description or "").strip():
            undocumented.append(" ".join(path))
        for action in HOOK.options(parser):
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                undocumented.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
    assert undocumented == []


def test_every_metric_is_in_the_metrics_reference(site):
    text = page_text(site, "metrics")
    assert [HOOK.exposed_name(spec) for spec in METRICS if HOOK.exposed_name(spec) not in text] == []
    assert all(spec.help.strip() for spec in METRICS)


def test_every_doctor_finding_is_explained(site):
    text = page_text(site, "checkpoint-tools")
    assert [code for code in FINDINGS if code not in text] == []
    for command in ("inspect", "correlate", "doctor", "rewind"):
        assert f"streamops checkpoint {command}" in text


def test_the_readme_is_a_landing_page_that_links_the_manual():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= README_MAX_LINES
    linked = set(re.findall(r"\]\((docs/[\w-]+\.md)", readme))
    pages = {f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")}
    assert pages <= linked, sorted(pages - linked)


def test_the_install_tables_list_every_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for page in (ROOT / "README.md", ROOT / "docs" / "index.md"):
        listed = set(re.findall(r"^\| `pip install 'streamops\[(\w+)\]'`", page.read_text(), re.MULTILINE))
        assert listed == set(extras), page.name
