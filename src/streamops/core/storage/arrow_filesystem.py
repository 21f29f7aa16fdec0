"""A native Arrow filesystem for a location, configured from the same store options.

Arrow's own C++ filesystems (local, S3, Azure, GCS) read Parquet without holding any Python
object, which is what keeps a Delta scan's teardown from needing the interpreter
(`streamops.core.delta_format.read` explains the abort this avoids). Each is rooted at the location, so the
relative file paths delta-rs hands pyarrow resolve inside the table.
"""

from __future__ import annotations

import os
from typing import Mapping
from urllib.parse import urlparse

import pyarrow.fs as pa_fs

from streamops.core.storage.location import Location
from streamops.core.storage.store_options import StoreOptions


def arrow_filesystem(location: Location) -> pa_fs.FileSystem:
    """`SubTreeFileSystem` rooted at `location` over Arrow's native filesystem of its store."""
    if location.is_local:
        return pa_fs.SubTreeFileSystem(location.key, pa_fs.LocalFileSystem())
    options = location.store_options_for_clients()
    base = f"{location.root.container}/{location.key}".rstrip("/")
    return pa_fs.SubTreeFileSystem(base, _store_filesystem(options))


def _store_filesystem(options: StoreOptions) -> pa_fs.FileSystem:
    config = options.delta_storage_options()
    if options.root.kind == "s3":
        return _s3(config, options.endpoint, options.allow_http)
    if options.root.kind == "azure":
        return _azure(config, options.endpoint)
    return pa_fs.GcsFileSystem(**_gcs(config))


def _s3(config: Mapping[str, str], endpoint: str | None, allow_http: bool) -> pa_fs.S3FileSystem:
    arguments: dict = {"region": config.get("aws_region", "us-east-1")}
    if "aws_access_key_id" in config:
        arguments.update(
            access_key=config["aws_access_key_id"],
            secret_key=config["aws_secret_access_key"],
            session_token=config.get("aws_session_token"),
        )
    elif config.get("aws_skip_signature") == "true":
        arguments["anonymous"] = True
    if endpoint:
        parsed = urlparse(endpoint)
        arguments["endpoint_override"] = parsed.netloc + parsed.path.rstrip("/")
        arguments["scheme"] = parsed.scheme if allow_http or parsed.scheme == "https" else "https"
    return pa_fs.S3FileSystem(**arguments)


def _azure(config: Mapping[str, str], endpoint: str | None) -> pa_fs.AzureFileSystem:
    arguments: dict = {"account_name": config["azure_storage_account_name"]}
    key = os.environ.get("AZURE_STORAGE_ACCOUNT_KEY") or os.environ.get("AZURE_STORAGE_ACCESS_KEY")
    sas = os.environ.get("AZURE_STORAGE_SAS_TOKEN") or os.environ.get("AZURE_STORAGE_SAS_KEY")
    if key:
        arguments["account_key"] = key
    elif sas:
        arguments["sas_token"] = sas
    client_id, secret = os.environ.get("AZURE_CLIENT_ID"), os.environ.get("AZURE_CLIENT_SECRET")
    if not key and not sas and client_id and secret:
        arguments.update(client_id=client_id, client_secret=secret, tenant_id=os.environ.get("AZURE_TENANT_ID"))
    if endpoint:
        parsed = urlparse(endpoint)
        arguments.update(
            blob_storage_authority=parsed.netloc,
            blob_storage_scheme=parsed.scheme,
            dfs_storage_authority=parsed.netloc,
            dfs_storage_scheme=parsed.scheme,
        )
    return pa_fs.AzureFileSystem(**arguments)


def _gcs(config: Mapping[str, str]) -> dict:
    if config.get("google_skip_signature") == "true":
        return {"anonymous": True}
    return {}
