"""Real checkpoints built once per session by real Spark queries; each test copies one."""

from __future__ import annotations

import pytest
from checkpoint_worlds import (
    SOURCE_FORMATS,
    World,
    build_delta_world,
    build_file_world,
    build_rate_world,
)


@pytest.fixture(scope="session", params=tuple(SOURCE_FORMATS))
def delta_world_template(spark, tmp_path_factory, request) -> World:
    """One Delta world per connector: every test of a Delta checkpoint runs on the streamops
    source's checkpoints and on delta-spark's own."""
    return build_delta_world(spark, tmp_path_factory.mktemp(f"delta_world_{request.param}"), request.param)


@pytest.fixture(scope="session")
def file_world_template(spark, tmp_path_factory) -> World:
    return build_file_world(spark, tmp_path_factory.mktemp("file_world"))


@pytest.fixture(scope="session")
def rate_world_template(spark, tmp_path_factory) -> World:
    return build_rate_world(spark, tmp_path_factory.mktemp("rate_world"))


@pytest.fixture
def delta_world(delta_world_template, tmp_path) -> World:
    return delta_world_template.copy_to(tmp_path / "delta")


@pytest.fixture
def file_world(file_world_template, tmp_path) -> World:
    return file_world_template.copy_to(tmp_path / "file")


@pytest.fixture
def rate_world(rate_world_template, tmp_path) -> World:
    return rate_world_template.copy_to(tmp_path / "rate")
