"""Object-store fixtures: the servers (one each per session), the session's real lake uploaded
to each, and `store_env` to point the code under test at one store with given credentials."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from store_servers import (
    AzuriteServer,
    S3Server,
    Store,
    azure_store,
    azurite_server,
    moto_server,
    s3_store,
)

from streamops.core.storage.object_store_files import forget_stores

CLOUD_VARIABLE_PREFIXES = ("AWS_", "AZURE_", "AZURITE_", "GOOGLE_")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory) -> Iterator[S3Server]:
    with moto_server(tmp_path_factory.mktemp("moto")) as server:
        yield server


@pytest.fixture(scope="session")
def azurite(tmp_path_factory) -> Iterator[AzuriteServer]:
    with azurite_server(tmp_path_factory.mktemp("azurite")) as server:
        yield server


@pytest.fixture
def store_env(monkeypatch) -> Callable[[dict[str, str]], None]:
    """Replace every cloud variable with `env` (and no ~/.aws or instance metadata to fall back on)."""

    def use(env: dict[str, str]) -> None:
        for name in list(os.environ):
            if name.startswith(CLOUD_VARIABLE_PREFIXES):
                monkeypatch.delenv(name)
        monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
        monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        forget_stores()

    yield use
    forget_stores()


@pytest.fixture(params=["s3", "azure"])
def store(request, store_env) -> Store:
    """Each test that takes it runs on moto's S3 and on Azurite, with that store's credentials."""
    if request.param == "s3":
        chosen = s3_store(request.getfixturevalue("s3_server"))
    else:
        chosen = azure_store(request.getfixturevalue("azurite"))
    store_env(chosen.env)
    return chosen


@pytest.fixture(scope="session")
def uploaded_lakes(built_lake, s3_server, azurite) -> dict[str, str]:
    """The session's real lake, uploaded once to each store: {store name: lake URI}."""
    local = Path(built_lake.lake.root)
    return {
        "s3": s3_store(s3_server).upload(local, "fleet"),
        "azure": azure_store(azurite).upload(local, "fleet"),
    }
