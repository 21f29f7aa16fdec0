"""Real object-store servers on 127.0.0.1 for the tests: moto's standalone S3 server (from PyPI,
with IAM authentication on) and Azure's storage emulator Azurite (npm). Each runs as a child
process on a free port, is waited for by condition, and is stopped by the fixture that started it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pa_fs
from ports import free_port
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
"""Azurite's well-known development account (documented by Microsoft, not a secret)."""
UNAUTHENTICATED_SETUP_REQUESTS = 3
"""moto answers this many requests without checking credentials: the IAM calls that create the
admin user, its key and its policy. Every later request must be signed with a real key."""
REGION = "us-east-1"
S3_BUCKET = "lake-bucket"
AZURE_CONTAINER = "lakes"


@dataclass(frozen=True)
class AccessKey:
    key_id: str
    secret: str


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    log: Path
    admin: AccessKey
    reader: AccessKey
    """May list and read, not write or delete."""

    def env(self, key: AccessKey | None = None) -> dict[str, str]:
        key = key or self.admin
        return {
            "AWS_ACCESS_KEY_ID": key.key_id,
            "AWS_SECRET_ACCESS_KEY": key.secret,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ALLOW_HTTP": "true",
            "AWS_REGION": REGION,
        }

    def filesystem(self) -> pa_fs.S3FileSystem:
        """Arrow's S3 client, used to upload test data without the code under test."""
        return pa_fs.S3FileSystem(
            access_key=self.admin.key_id,
            secret_key=self.admin.secret,
            region=REGION,
            endpoint_override=self.endpoint.removeprefix("http://"),
            scheme="http",
        )

    def requests(self) -> list[str]:
        """The request lines the server has logged so far ("GET /bucket?list-type=2&... HTTP/1.1")."""
        lines = self.log.read_text(errors="replace").splitlines()
        return [line.split('"')[1] for line in lines if line.count('"') >= 2 and " HTTP/" in line]


@dataclass(frozen=True)
class AzuriteServer:
    blob_url: str

    def env(self, key: str = AZURITE_KEY) -> dict[str, str]:
        return {
            "AZURE_STORAGE_ACCOUNT_NAME": AZURITE_ACCOUNT,
            "AZURE_STORAGE_ACCOUNT_KEY": key,
            "AZURE_STORAGE_USE_EMULATOR": "true",
            "AZURITE_BLOB_STORAGE_URL": self.blob_url,
        }

    def filesystem(self) -> pa_fs.AzureFileSystem:
        authority = self.blob_url.removeprefix("http://")
        return pa_fs.AzureFileSystem(
            account_name=AZURITE_ACCOUNT,
            account_key=AZURITE_KEY,
            blob_storage_authority=authority,
            blob_storage_scheme="http",
            dfs_storage_authority=authority,
            dfs_storage_scheme="http",
        )


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


@contextmanager
def _process(command: list[str], port: int, log: Path, env: dict[str, str] | None = None) -> Iterator[None]:
    with open(log, "wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT, env={**os.environ, **(env or {})})
    try:
        wait_until(
            lambda: _accepts(port) or process.poll() is not None, timeout=60, what=f"{command[0]} on port {port}"
        )
        assert process.poll() is None, f"{' '.join(command)} exited: {log.read_text(errors='replace')[-2000:]}"
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def moto_server(workdir: Path) -> Iterator[S3Server]:
    import boto3

    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    log = workdir / "moto.log"
    command = [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)]
    with _process(command, port, log, {"INITIAL_NO_AUTH_ACTION_COUNT": str(UNAUTHENTICATED_SETUP_REQUESTS)}):
        setup = {"endpoint_url": endpoint, "region_name": REGION}
        iam = boto3.client("iam", aws_access_key_id="setup", aws_secret_access_key="setup", **setup)
        iam.create_user(UserName="admin")
        admin = _key(iam.create_access_key(UserName="admin"))
        iam.put_user_policy(UserName="admin", PolicyName="all", PolicyDocument=_policy(["*"]))
        iam = boto3.client("iam", aws_access_key_id=admin.key_id, aws_secret_access_key=admin.secret, **setup)
        iam.create_user(UserName="reader")
        reader = _key(iam.create_access_key(UserName="reader"))
        iam.put_user_policy(
            UserName="reader", PolicyName="read", PolicyDocument=_policy(["s3:GetObject", "s3:ListBucket"])
        )
        s3 = boto3.client("s3", aws_access_key_id=admin.key_id, aws_secret_access_key=admin.secret, **setup)
        s3.create_bucket(Bucket=S3_BUCKET)
        yield S3Server(endpoint, log, admin, reader)


def _key(response: dict) -> AccessKey:
    return AccessKey(response["AccessKey"]["AccessKeyId"], response["AccessKey"]["SecretAccessKey"])


def _policy(actions: list[str]) -> str:
    return json.dumps({"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": actions, "Resource": "*"}]})


def azurite_command() -> str:
    """Azurite's blob server as `.ci/run` installs it (npm, into .tools/), or from $AZURITE_BLOB."""
    command = os.environ.get("AZURITE_BLOB") or str(ROOT / ".tools" / "node_modules" / ".bin" / "azurite-blob")
    assert Path(command).is_file(), (
        f"Azurite is not installed at {command}: run `npm install --prefix .tools azurite` (as .ci/run does)"
    )
    return command


@contextmanager
def azurite_server(workdir: Path) -> Iterator[AzuriteServer]:
    port = free_port()
    data = workdir / "azurite"
    data.mkdir()
    command = [
        azurite_command(),
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--location",
        str(data),
        "--skipApiVersionCheck",
        "--loose",
        "--silent",
    ]
    with _process(command, port, workdir / "azurite.log"):
        server = AzuriteServer(f"http://127.0.0.1:{port}")
        server.filesystem().create_dir(AZURE_CONTAINER)
        yield server


@dataclass(frozen=True)
class Store:
    """One store as the tests use it: where prefixes live, its environment, and an uploader."""

    name: str
    env: dict[str, str]
    filesystem: pa_fs.FileSystem
    bucket: str
    uri_prefix: str

    def upload(self, local: Path, prefix: str | None = None) -> str:
        """Copy a local directory under a fresh prefix with Arrow's client (not the code under
        test); returns its URI."""
        prefix = prefix or uuid.uuid4().hex[:12]
        pa_fs.copy_files(
            str(local),
            f"{self.bucket}/{prefix}",
            source_filesystem=pa_fs.LocalFileSystem(),
            destination_filesystem=self.filesystem,
        )
        return f"{self.uri_prefix}/{prefix}"

    def download(self, uri: str, local: Path) -> Path:
        key = uri.removeprefix(self.uri_prefix + "/")
        pa_fs.copy_files(
            f"{self.bucket}/{key}",
            str(local),
            source_filesystem=self.filesystem,
            destination_filesystem=pa_fs.LocalFileSystem(),
        )
        return local


def s3_store(server: S3Server) -> Store:
    return Store("s3", server.env(), server.filesystem(), S3_BUCKET, f"s3://{S3_BUCKET}")


def azure_store(server: AzuriteServer) -> Store:
    uri = f"abfss://{AZURE_CONTAINER}@{AZURITE_ACCOUNT}.dfs.core.windows.net"
    return Store("azure", server.env(), server.filesystem(), AZURE_CONTAINER, uri)
