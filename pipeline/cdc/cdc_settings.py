"""What `streamops run --cdc debezium` was asked for: the input format, declared keys, history."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, get_args

from streamops.lake_layout import is_valid_event_type
from streamops.pipeline.exceptions import PipelineConfigError

CdcFormat = Literal["debezium"]
CDC_FORMATS: tuple[str, ...] = get_args(CdcFormat)
DELETED_KEYS_RETENTION_SECONDS = 7 * 24 * 3600.0
"""How long a deleted key's marker is kept (in source time: the newest change a batch applies
minus this): a change of that key older than its delete arriving later than this would bring
the row back. Kafka's default retention is 7 days: a change cannot arrive later than that."""


@dataclass(frozen=True)
class CdcSettings:
    """`keys`: table -> key columns from `--cdc-keys` (a table not named there is keyed by its
    Kafka record key's fields); `sequences`: table -> the column `--cdc-sequence` orders its
    changes by (else the source position); `history`: also keep each table's SCD type 2 history."""

    format: CdcFormat = "debezium"
    keys: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    sequences: Mapping[str, str] = field(default_factory=dict)
    history: bool = False
    deleted_keys_retention_seconds: float = DELETED_KEYS_RETENTION_SECONDS


def parse_cdc_keys(values: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """`TABLE=COL[,COL]` flags -> {table: columns}; a malformed one is a one-line error."""
    keys: dict[str, tuple[str, ...]] = {}
    for value in values:
        table, sep, columns = value.partition("=")
        names = tuple(c.strip() for c in columns.split(","))
        if not sep or not is_valid_event_type(table.strip()) or not all(names):
            raise PipelineConfigError(
                f"--cdc-keys takes TABLE=COL[,COL] (e.g. public.orders=order_id,line), got `{value}`"
            )
        if table.strip() in keys:
            raise PipelineConfigError(f"--cdc-keys names table `{table.strip()}` twice: give its key once")
        keys[table.strip()] = names
    return keys


def parse_cdc_sequences(values: Iterable[str]) -> dict[str, str]:
    """`TABLE=COL` flags -> {table: column}; a malformed one is a one-line error."""
    sequences: dict[str, str] = {}
    for value in values:
        table, sep, column = (part.strip() for part in value.partition("="))
        if not sep or not is_valid_event_type(table) or not column or "," in column:
            raise PipelineConfigError(f"--cdc-sequence takes TABLE=COL (e.g. public.orders=updated_at), got `{value}`")
        if table in sequences:
            raise PipelineConfigError(f"--cdc-sequence names table `{table}` twice: give its column once")
        sequences[table] = column
    return sequences
