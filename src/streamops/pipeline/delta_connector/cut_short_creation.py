"""A table whose creation a kill cut short: a `_delta_log` that holds no version.

delta-spark creates `_delta_log` (and its `_staged_commits` folder) before it writes commit 0.
A SIGKILL between the two leaves a folder that delta-rs rightly finds no table in, while
delta-spark's `createIfNotExists` takes it for a table and then cannot find one
(DELTA_TABLE_NOT_FOUND), on every restart. Nothing in a log without a version belongs to a
table, so the native connector removes it and creates the table again.
"""

from __future__ import annotations

import shutil

from streamops.core.storage.location import Location, LocationLike


def holds_a_version(name: str) -> bool:
    """A commit, checkpoint, checksum or staged commit: every such file is named by its version."""
    return name.rsplit("/", 1)[-1].split(".", 1)[0].isdigit()


def clear_cut_short_creation(table: LocationLike) -> bool:
    """Remove `table`'s `_delta_log` if it holds no version; whether there was one to remove."""
    log = Location.of(table) / "_delta_log"
    entries = list(log.walk())
    if any(holds_a_version(entry.name) for entry in entries):
        return False
    if log.is_local:
        if not log.local_path.is_dir():
            return False
        shutil.rmtree(log.local_path)
        return True
    if not entries:
        return False
    for entry in entries:
        (log / entry.name).delete()
    return True
