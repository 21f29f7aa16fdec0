"""Temporary files a killed Spark driver leaves in a checkpoint's offset and commit logs.

Spark writes each offset and commit file under a temporary name beside it (`.<batch>.<uuid>.tmp`,
and Hadoop's checksum `..<batch>.<uuid>.tmp.crc`), then renames it into place. A driver killed
between the two leaves the temporary file behind, and Spark 4.2 then refuses to start the query
at batch 0 (STATE_STORE_CHECKPOINT_LOCATION_NOT_EMPTY, "offsets should be empty on batch 0")
although no batch was ever planned. Such a file never holds a batch (its rename never came), so
removing it while the query is not running loses nothing.
"""

from __future__ import annotations

import re

from streamops.core.storage.location import Location

LOG_DIRS = ("offsets", "commits")
TEMPORARY_NAME = re.compile(r"^\.\.?\d+\.[0-9a-fA-F-]{36}\.tmp(\.crc)?$")


def remove_abandoned_writes(checkpoint: Location) -> list[Location]:
    """Remove the temporary files of interrupted log writes; call only while no query runs on it."""
    removed: list[Location] = []
    for log in LOG_DIRS:
        directory = checkpoint / log
        if not directory.is_dir():
            continue
        for entry in directory.iterdir():
            if TEMPORARY_NAME.match(entry.name):
                entry.delete()
                removed.append(entry)
    return removed
