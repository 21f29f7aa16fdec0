"""`Location`: a file or directory on the local disk or in an object store, and its I/O.

Every reader of checkpoints, Delta logs and lakes takes one (or a string or Path, through
`Location.of`), so the same code reads `/lake`, `file:///lake`, `s3://bucket/lake`,
`gs://bucket/lake`, `az://container/lake` and `abfss://container@account.dfs.core.windows.net/lake`.
It joins and names like a `PurePath` (`/`, `.name`, `.parent`), prints as the user wrote it
(a plain path for local files), and is an `os.PathLike` only when it is local.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit
from urllib.request import url2pathname

from streamops.core.storage import local_files
from streamops.core.storage.entries import DirListing, Entry
from streamops.core.storage.errors import UnsupportedLocationError
from streamops.core.storage.object_store_files import ObjectStoreFiles, files_for
from streamops.core.storage.store_options import StoreOptions
from streamops.core.storage.store_root import StoreRoot


@dataclass(frozen=True, order=True)
class Location:
    """`key` is an absolute path for local files, else the object key prefix ("" = the bucket)."""

    root: StoreRoot
    key: str

    @classmethod
    def of(cls, value: str | os.PathLike[str] | Location) -> Location:
        """Parse a path or URI (`~` expanded and made absolute for local paths)."""
        if isinstance(value, Location):
            return value
        text = os.fspath(value)
        if text[:5].lower() == "file:":
            return cls.local(url2pathname(urlsplit(text).path))
        if "://" not in text:
            return cls.local(text)
        parts = urlsplit(text)
        root = StoreRoot.parse(parts.scheme, parts.netloc, text)
        return cls(root, _clean_key(parts.path, text))

    @classmethod
    def local(cls, path: str | os.PathLike[str]) -> Location:
        return cls(StoreRoot.local(), str(Path(path).expanduser().resolve()))

    # -- naming ------------------------------------------------------------------------------

    def __str__(self) -> str:
        if self.root.is_local:
            return self.key
        return f"{self.root.prefix}/{self.key}" if self.key else self.root.prefix

    def __repr__(self) -> str:
        return f"Location({str(self)!r})"

    def __fspath__(self) -> str:
        if not self.root.is_local:
            raise TypeError(f"`{self}` is not on the local file system")
        return self.key

    def __truediv__(self, name: str) -> Location:
        if self.root.is_local:
            return Location(self.root, os.path.join(self.key, name))
        return Location(self.root, _clean_key(posixpath.join(self.key, name), name))

    @property
    def name(self) -> str:
        return posixpath.basename(self.key.rstrip("/")) if not self.root.is_local else os.path.basename(self.key)

    @property
    def parent(self) -> Location:
        if self.root.is_local:
            return Location(self.root, os.path.dirname(self.key))
        return Location(self.root, posixpath.dirname(self.key))

    def with_name(self, name: str) -> Location:
        return self.parent / name

    @property
    def is_local(self) -> bool:
        return self.root.is_local

    @property
    def local_path(self) -> Path:
        """The path on this machine; only for local locations."""
        if not self.root.is_local:
            raise UnsupportedLocationError(f"`{self}` is not on the local file system")
        return Path(self.key)

    def relative_to(self, other: Location) -> str | None:
        """This location's path below `other` (`/`-separated), or None when it is not below it."""
        if self.root != other.root:
            return None
        base = other.key.rstrip("/")
        if self.key == base:
            return ""
        separator = os.sep if self.root.is_local else "/"
        if base and not self.key.startswith(base + separator):
            return None
        return self.key[len(base) + 1 if base else 0 :].replace(os.sep, "/")

    def same_store(self, other: Location) -> bool:
        return self.root == other.root

    # -- the store ---------------------------------------------------------------------------

    @property
    def atomic_rename(self) -> bool:
        """True where a file can be replaced atomically by renaming (local disks)."""
        return self.root.is_local

    def storage_options(self) -> dict[str, str] | None:
        """delta-rs `storage_options` for a table here (None for local tables)."""
        return None if self.root.is_local else self._files().options.delta_storage_options()

    def store_options_for_clients(self) -> StoreOptions:
        """The options other clients of this store (Arrow's filesystems) are configured from."""
        return self._files().options

    def _files(self) -> ObjectStoreFiles:
        return files_for(self.root)

    # -- I/O ---------------------------------------------------------------------------------

    def read_bytes(self) -> bytes:
        """The file's bytes; FileNotFoundError when it does not exist."""
        return local_files.read(self.key) if self.root.is_local else self._files().read(self.key)

    def write_bytes(self, data: bytes) -> None:
        """Replace the file whole: a reader sees the old or the new bytes, never a mix."""
        local_files.write(self.key, data) if self.root.is_local else self._files().write(self.key, data)

    def create(self, data: bytes) -> None:
        """Write only if absent (FileExistsError otherwise); ConditionalWriteUnsupportedError
        where the store cannot promise that."""
        local_files.create(self.key, data) if self.root.is_local else self._files().create(self.key, data)

    def delete(self) -> None:
        """Remove the file; a missing file is not an error."""
        local_files.delete(self.key) if self.root.is_local else self._files().delete(self.key)

    def stat(self) -> Entry | None:
        return local_files.stat(self.key) if self.root.is_local else self._files().stat(self.key)

    def exists(self) -> bool:
        """A file, or a directory (a non-empty prefix on object stores)."""
        if self.root.is_local:
            return os.path.exists(self.key)
        return self.is_file() or self.is_dir()

    def is_file(self) -> bool:
        return local_files.is_file(self.key) if self.root.is_local else self._files().is_file(self.key)

    def is_dir(self) -> bool:
        return local_files.is_dir(self.key) if self.root.is_local else self._files().is_dir(self.key)

    def list_dir(self) -> DirListing:
        """One level: files with size and time, and subdirectory names (one paginated LIST)."""
        return local_files.list_dir(self.key) if self.root.is_local else self._files().list_dir(self.key)

    def iterdir(self) -> Iterator[Location]:
        listing = self.list_dir()
        for name in (*listing.dirs, *(f.name for f in listing.files)):
            yield self / name

    def subdirs(self) -> list[Location]:
        return [self / name for name in sorted(self.list_dir().dirs)]

    def walk(self) -> Iterator[Entry]:
        """Every file below, named relative to this location."""
        return local_files.walk(self.key) if self.root.is_local else self._files().walk(self.key)

    def copy_tree(self, target: Location) -> None:
        """Copy every file below this location to `target` (same store: server-side copies)."""
        if not self.same_store(target):
            raise UnsupportedLocationError(f"cannot copy `{self}` to `{target}`: they are on different stores")
        if self.root.is_local:
            local_files.copy_tree(self.key, target.key)
        else:
            self._files().copy_tree(self.key, target.key)


LocationLike = str | os.PathLike[str] | Location
"""What every reader accepts: a local path, a URI, or a parsed location."""


def _clean_key(path: str, original: str) -> str:
    parts = [part for part in path.split("/") if part and part != "."]
    if ".." in parts:
        raise UnsupportedLocationError(f"`{original}`: `..` is not allowed in an object-store path")
    return "/".join(parts)
