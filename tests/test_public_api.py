"""Every public name of every package resolves where every extra is installed (the dev venv).

Each package's `__init__` maps its names to modules imported on first use
(`streamops.core.public_names`), so a name whose module moved or was renamed would fail only
when a user asks for it; this resolves them all, without Spark. tests/test_packaging.py runs
the same resolution on a wheel installed without extras.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import typing
from collections.abc import Iterator
from pathlib import Path

import pytest
from public_names import resolve_all

PUBLIC_PACKAGES = (
    "streamops",
    "streamops.checkpoint_tools",
    "streamops.monitor",
    "streamops.pipeline",
    "streamops.dashboards",
)


@pytest.fixture(scope="module")
def report() -> dict:
    return resolve_all()


def test_every_public_name_of_every_package_resolves(report):
    assert set(PUBLIC_PACKAGES) <= {p for p, outcome in report["packages"].items() if outcome == "ok"}
    assert {p: o for p, o in report["packages"].items() if o not in ("ok", "no __all__")} == {}
    failed = {name: outcome for name, outcome in report["names"].items() if outcome["outcome"] != "ok"}
    assert failed == {}


def test_each_class_and_function_is_exported_by_a_package_that_holds_its_module(report):
    strays = {
        name: outcome["defined_in"]
        for name, outcome in report["names"].items()
        if outcome.get("defined_in") and not outcome["defined_in"].startswith(name.split(":")[0] + ".")
    }
    assert strays == {}


def test_a_package_lists_its_public_names_for_dir_and_star_imports():
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        assert set(module.__all__) <= set(dir(module)), package
        assert len(module.__all__) == len(set(module.__all__)), package


def test_the_checkpoint_tools_export_the_records_their_tools_return():
    """What a tool returns, and the records inside it, can be named in a caller's type hints."""
    import streamops.checkpoint_tools as tools

    found: set[type] = set()
    pending = [
        hint
        for name in tools.__all__
        if inspect.isfunction(function := getattr(tools, name))
        for hint in _classes_in(typing.get_type_hints(function).get("return"))
    ]
    while pending:
        record = pending.pop()
        if record in found or not record.__module__.startswith(tools.__name__ + "."):
            continue
        found.add(record)
        if dataclasses.is_dataclass(record):
            pending.extend(c for hint in typing.get_type_hints(record).values() for c in _classes_in(hint))
    assert {"Diagnosis", "Correlation", "RewindPlan", "TableVacuum", "FsckResult"} <= {r.__name__ for r in found}
    assert sorted(r.__name__ for r in found if r.__name__ not in tools.__all__) == []


def _classes_in(hint: object) -> Iterator[type]:
    """The classes a type hint names (`list[Diagnosis]` -> Diagnosis)."""
    if inspect.isclass(hint):
        yield hint
    for argument in typing.get_args(hint):
        yield from _classes_in(argument)


def test_the_manual_lists_every_public_name():
    page = (Path(__file__).resolve().parent.parent / "docs" / "index.md").read_text()
    api = page.split("## Public API", 1)[1].split("\n## ", 1)[0]
    missing = [
        f"{package}.{name}"
        for package in PUBLIC_PACKAGES
        for name in importlib.import_module(package).__all__
        if not re.search(rf"\b{re.escape(name)}\b", api)
    ]
    assert missing == [], f"docs/index.md's Public API section lacks {missing}"
