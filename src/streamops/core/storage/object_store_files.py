"""The object-store backend: S3, Azure Blob/ADLS Gen2 and GCS through obstore (Rust's
object_store, the crate delta-rs uses), one store per bucket or container.

Object stores have no directories and no rename: a "directory" is a key prefix, listing one
level is a delimiter LIST (object_store follows the continuation tokens, 1,000 keys a page),
a write is one PUT (all or nothing), and "write if absent" is a conditional PUT.
Failures become the one-line errors of `errors.py`, classified by obstore's exception types
and, for the generic ones, by our own checks: does the endpoint accept connections, does the
bucket or container list at all.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, NoReturn, TypeVar
from urllib.parse import urlparse

import obstore
from obstore.exceptions import (
    AlreadyExistsError,
    BaseError,
    NotSupportedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
)

from streamops.core.storage.entries import DirListing, Entry
from streamops.core.storage.errors import (
    AccessDeniedError,
    ConditionalWriteUnsupportedError,
    ContainerNotFoundError,
    CredentialsRejectedError,
    EndpointUnreachableError,
    StorageError,
)
from streamops.core.storage.store_options import (
    CONNECT_TIMEOUT,
    MAX_RETRIES,
    REQUEST_TIMEOUT,
    RETRY_TIMEOUT_SECONDS,
    StoreOptions,
    store_options,
)
from streamops.core.storage.store_root import StoreRoot

PROBE_TIMEOUT_SECONDS = 3.0
T = TypeVar("T")

_stores: dict[StoreRoot, ObjectStoreFiles] = {}
_stores_lock = threading.Lock()


def files_for(root: StoreRoot) -> ObjectStoreFiles:
    """The (cached) backend of one bucket or container, built from the environment once."""
    with _stores_lock:
        files = _stores.get(root)
        if files is None:
            files = _stores[root] = ObjectStoreFiles(store_options(root))
        return files


def forget_stores() -> None:
    """Drop cached stores, so a changed environment (credentials, endpoint) is read again."""
    with _stores_lock:
        _stores.clear()


class ObjectStoreFiles:
    def __init__(self, options: StoreOptions) -> None:
        self.options = options
        self.root = options.root
        self.store = _build_store(options)

    # -- reads ------------------------------------------------------------------------------

    def read(self, key: str) -> bytes:
        return self._call("read", key, lambda: bytes(obstore.get(self.store, key).bytes()))

    def stat(self, key: str) -> Entry | None:
        try:
            meta = self._call("read", key, lambda: obstore.head(self.store, key))
        except FileNotFoundError:
            return None
        return _entry(meta, key.rsplit("/", 1)[-1])

    def list_dir(self, key: str) -> DirListing:
        """One level below `key`: every page of a delimiter LIST."""
        prefix = _dir_prefix(key)
        result = self._call("list", key, lambda: obstore.list_with_delimiter(self.store, prefix or None))
        files = tuple(_entry(meta, meta["path"][len(prefix) :]) for meta in result["objects"])
        dirs = tuple(p[len(prefix) :].rstrip("/") for p in result["common_prefixes"])
        return DirListing(tuple(f for f in files if f.name), dirs)

    def walk(self, key: str) -> Iterator[Entry]:
        """Every object below `key`, without the empty "directory marker" objects (`dir/`)
        that S3A, consoles and Arrow's clients create: object_store names `dir/` like `dir`,
        so a marker is an empty object whose name is also the directory of another object."""
        prefix = _dir_prefix(key)
        stream = self._call("list", key, lambda: obstore.list(self.store, prefix or None, chunk_size=1000))
        entries = [
            _entry(meta, meta["path"][len(prefix) :]) for chunk in self._iterate("list", key, stream) for meta in chunk
        ]
        dirs = {name.rsplit("/", 1)[0] for name in (e.name for e in entries) if "/" in name}
        dirs |= {d.rsplit("/", i)[0] for d in list(dirs) for i in range(1, d.count("/") + 1)}
        for entry in entries:
            if entry.name and not (entry.size == 0 and entry.name in dirs):
                yield entry

    def is_dir(self, key: str) -> bool:
        return not self.list_dir(key).is_empty

    def is_file(self, key: str) -> bool:
        return self.stat(key) is not None

    # -- writes -----------------------------------------------------------------------------

    def write(self, key: str, data: bytes) -> None:
        self._call("write", key, lambda: obstore.put(self.store, key, data))

    def create(self, key: str, data: bytes) -> None:
        """PUT only if absent: FileExistsError when it exists, ConditionalWriteUnsupportedError
        when the store cannot make that promise."""
        try:
            self._call("write", key, lambda: obstore.put(self.store, key, data, mode="create"))
        except (AlreadyExistsError, PreconditionError) as error:
            raise FileExistsError(f"`{self.uri(key)}` already exists") from error
        except (NotSupportedError, NotImplementedError) as error:
            raise ConditionalWriteUnsupportedError(
                f"`{self.root.prefix}` does not support conditional writes (write-if-absent)"
            ) from error

    def delete(self, key: str) -> None:
        try:
            self._call("delete", key, lambda: obstore.delete(self.store, key))
        except FileNotFoundError:
            pass

    def copy_tree(self, source: str, target: str) -> None:
        """Server-side copies of every object below `source` to the same names below `target`."""
        source_prefix, target_prefix = _dir_prefix(source), _dir_prefix(target)
        for entry in list(self.walk(source)):
            self._call(
                "write",
                target_prefix + entry.name,
                lambda name=entry.name: obstore.copy(self.store, source_prefix + name, target_prefix + name),
            )

    # -- errors -----------------------------------------------------------------------------

    def uri(self, key: str) -> str:
        return f"{self.root.prefix}/{key}".rstrip("/")

    def _call(self, action: str, key: str, operation: Callable[[], T]) -> T:
        try:
            return operation()
        except (FileNotFoundError, AlreadyExistsError, PreconditionError, NotSupportedError):
            raise
        except (BaseError, OSError) as error:
            self._fail(action, key, error)

    def _iterate(self, action: str, key: str, stream: Any) -> Iterator[Any]:
        while True:
            try:
                chunk = next(stream)
            except StopIteration:
                return
            except (BaseError, OSError) as error:
                self._fail(action, key, error)
            yield chunk

    def _fail(self, action: str, key: str, error: Exception) -> NoReturn:
        where = self.uri(key)
        if isinstance(error, PermissionDeniedError):
            raise AccessDeniedError(
                f"access denied: the store refused to {action} `{where}` with {self._credentials_named()} "
                f"(wrong or expired credentials, or no permission to {action} there): "
                f"check the credentials and that they may {action} it"
            ) from error
        if isinstance(error, UnauthenticatedError):
            raise CredentialsRejectedError(
                f"the store rejected the credentials ({self._credentials_named()}) to {action} `{where}`: "
                "check or renew them"
            ) from error
        endpoint = self.endpoint_address()
        if endpoint is not None and not _accepts_connections(*endpoint):
            raise EndpointUnreachableError(
                f"cannot {action} `{where}`: nothing answers at {endpoint[0]}:{endpoint[1]} "
                f"({self._endpoint_setting()}): check the endpoint and the network"
            ) from error
        refused = self._refusal(key)
        if refused is not None:
            self._fail(action, key, refused)
        if not self._container_lists():
            raise ContainerNotFoundError(
                f"cannot {action} `{where}`: the {self._container_word()} `{self.root.container}` "
                f"does not exist at {self._endpoint_text()}: check the name in the path"
            ) from error
        first_line = (str(error).strip().splitlines() or [type(error).__name__])[0][:300]
        raise StorageError(f"cannot {action} `{where}`: {first_line}") from error

    def _refusal(self, key: str) -> BaseError | None:
        """The typed error of a HEAD on `key` when the store refuses the credentials: LIST
        errors come back untyped, single-object requests carry the status as a type."""
        try:
            obstore.head(self.store, key or "_")
        except (PermissionDeniedError, UnauthenticatedError) as refused:
            return refused
        except (BaseError, OSError):
            return None
        return None

    def _container_lists(self) -> bool:
        try:
            obstore.list_with_delimiter(self.store, None)
        except (BaseError, OSError):
            return False
        return True

    def endpoint_address(self) -> tuple[str, int] | None:
        """(host, port) the store talks to."""
        endpoint = self.options.endpoint
        if endpoint:
            parsed = urlparse(endpoint)
            if not parsed.hostname:
                return None
            return parsed.hostname, parsed.port or (80 if parsed.scheme == "http" else 443)
        if self.root.kind == "s3":
            region = self.options.config.get("aws_region", "us-east-1")
            return f"s3.{region}.amazonaws.com", 443
        if self.root.kind == "azure":
            return f"{self.options.config['azure_storage_account_name']}.blob.core.windows.net", 443
        return "storage.googleapis.com", 443

    def _endpoint_text(self) -> str:
        address = self.endpoint_address()
        return f"{address[0]}:{address[1]}" if address else "the endpoint"

    def _endpoint_setting(self) -> str:
        if self.root.kind == "s3":
            return "AWS_ENDPOINT_URL" if self.options.endpoint else "the region's endpoint (AWS_REGION)"
        if self.root.kind == "azure":
            if self.options.config.get("azure_storage_use_emulator"):
                return "AZURITE_BLOB_STORAGE_URL"
            return "AZURE_STORAGE_ENDPOINT" if self.options.endpoint else "the account's endpoint"
        return "the GCS endpoint"

    def _container_word(self) -> str:
        return "container" if self.root.kind == "azure" else "bucket"

    def _credentials_named(self) -> str:
        config = self.options.config
        if self.root.kind == "s3":
            if "aws_access_key_id" in config:
                return "the key in AWS_ACCESS_KEY_ID"
            return "credentials of the AWS profile chain" if self.options.credential_provider else "AWS credentials"
        if self.root.kind == "azure":
            return f"account `{config.get('azure_storage_account_name')}`"
        return "Google credentials"


def _build_store(options: StoreOptions) -> Any:
    from obstore.store import AzureStore, GCSStore, S3Store

    client = {"connect_timeout": CONNECT_TIMEOUT, "timeout": REQUEST_TIMEOUT, "allow_http": options.allow_http}
    retry = {"max_retries": MAX_RETRIES, "retry_timeout": timedelta(seconds=RETRY_TIMEOUT_SECONDS)}
    config = dict(options.config)
    if options.root.kind == "s3":
        return S3Store(
            options.root.container,
            config=config,
            client_options=client,
            retry_config=retry,
            credential_provider=options.credential_provider,
        )
    if options.root.kind == "azure":
        return AzureStore(options.root.container, config=config, client_options=client, retry_config=retry)
    return GCSStore(options.root.container, config=config, client_options=client, retry_config=retry)


def _accepts_connections(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SECONDS):
            return True
    except OSError:
        return False


def _dir_prefix(key: str) -> str:
    return f"{key.strip('/')}/" if key.strip("/") else ""


def _entry(meta: Any, name: str) -> Entry:
    return Entry(name, int(meta["size"]), int(meta["last_modified"].timestamp() * 1000))
