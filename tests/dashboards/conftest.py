"""Shared fixtures: the generated documents, built once, and a directory holding their files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamops.dashboards.build import build_documents, build_files, write_files


@pytest.fixture(scope="session")
def documents() -> dict[str, Any]:
    return build_documents()


@pytest.fixture(scope="session")
def built_files() -> dict[str, str]:
    return build_files()


@pytest.fixture(scope="session")
def built_dir(tmp_path_factory, built_files) -> Path:
    out = tmp_path_factory.mktemp("dashboards-build")
    write_files(out, built_files)
    return out
