"""The bronze rows a silver group's stream skips as it reads: those of event types recorded for
another group.

Every group's stream reads all of bronze and keeps its own types; with five groups, four of
every five rows crossed from the source's Python tasks into the JVM only to be filtered out
there. An assignment is permanent (pipeline/registry/event_groups.py), so a type recorded for
another group is never this group's, in the batch being planned or in a replay of it: skipping
its rows changes nothing the stream writes. Types not recorded yet are read, and the group's own
filter decides, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Mapping

from streamops.core.lake_layout import LakeLayout
from streamops.pipeline.delta_connector.delta_source import ROW_FILTER_OPTION
from streamops.pipeline.registry.event_groups import EventGroupsReader

GROUP_OPTION = "streamops.group"
EVENT_GROUPS_OPTION = "streamops.eventGroups"
TYPE_COLUMN = "event_type"

_readers: dict[str, EventGroupsReader] = {}
"""One reader per event-groups table in the planning process: it re-reads only a new version."""


def group_row_filter(lake: LakeLayout, group: str) -> dict[str, str]:
    """The source options that make the group's stream skip other groups' rows."""
    return {
        ROW_FILTER_OPTION: f"{__name__}:{other_groups_rows.__name__}",
        GROUP_OPTION: group,
        EVENT_GROUPS_OPTION: str(lake.event_groups),
    }


def other_groups_rows(options: Mapping[str, str]) -> tuple[str, list[str]]:
    """(column, values) of the rows to skip: event types recorded for any other group."""
    table = options[EVENT_GROUPS_OPTION]
    reader = _readers.setdefault(table, EventGroupsReader(Path(table)))
    group = options[GROUP_OPTION]
    return TYPE_COLUMN, sorted(t for t, g in reader.read().by_type.items() if g != group)
