"""The local-disk backend: plain OS calls, with rename for atomic writes.

Keys are absolute paths. Kept on `os` rather than obstore's LocalStore because a doctor pass
lists thousands of small directories, and `os.scandir` answers with the sizes and times in
one call.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator

from streamops.core.storage.entries import DirListing, Entry


def _temp_for(key: str) -> str:
    head, name = os.path.split(key)
    return os.path.join(head, f".{name}.{uuid.uuid4().hex}.streamops.tmp")


def read(key: str) -> bytes:
    with open(key, "rb") as handle:
        return handle.read()


def write(key: str, data: bytes) -> None:
    """Write through a hidden temporary and rename it into place: readers see all or nothing."""
    os.makedirs(os.path.dirname(key), exist_ok=True)
    temp = _temp_for(key)
    with open(temp, "wb") as handle:
        handle.write(data)
    os.replace(temp, key)


def create(key: str, data: bytes) -> None:
    """Write only if `key` does not exist (FileExistsError otherwise), atomically (link)."""
    os.makedirs(os.path.dirname(key), exist_ok=True)
    temp = _temp_for(key)
    with open(temp, "wb") as handle:
        handle.write(data)
    try:
        os.link(temp, key)
    finally:
        os.unlink(temp)


def delete(key: str) -> None:
    try:
        os.unlink(key)
    except FileNotFoundError:
        pass


def stat(key: str) -> Entry | None:
    try:
        result = os.stat(key)
    except FileNotFoundError:
        return None
    return Entry(os.path.basename(key), result.st_size, int(result.st_mtime * 1000))


def is_dir(key: str) -> bool:
    return os.path.isdir(key)


def is_file(key: str) -> bool:
    return os.path.isfile(key)


def list_dir(key: str) -> DirListing:
    """One level of `key`; a missing directory lists as empty."""
    try:
        entries = list(os.scandir(key))
    except (FileNotFoundError, NotADirectoryError):
        return DirListing()
    files: list[Entry] = []
    dirs: list[str] = []
    for entry in entries:
        if entry.is_dir():
            dirs.append(entry.name)
        elif entry.is_file():
            result = entry.stat()
            files.append(Entry(entry.name, result.st_size, int(result.st_mtime * 1000)))
    return DirListing(tuple(files), tuple(dirs))


def walk(key: str) -> Iterator[Entry]:
    """Every file below `key`, named by its path relative to `key` (`/`-separated)."""
    for directory, _, names in os.walk(key):
        for name in names:
            path = os.path.join(directory, name)
            result = os.stat(path)
            yield Entry(os.path.relpath(path, key).replace(os.sep, "/"), result.st_size, int(result.st_mtime * 1000))


def copy_tree(source: str, target: str) -> None:
    shutil.copytree(source, target, symlinks=True)


def free_bytes(key: str) -> int:
    """Free bytes on the device that holds `key`, or would once it is created (its nearest
    existing parent answers)."""
    current = key
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    return shutil.disk_usage(current).free
