"""What `streamops run --cdc debezium` was asked for: the input format, declared keys, history."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeVar, get_args

from streamops.core.lake_layout import is_valid_event_type
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

    def columns(text: str) -> tuple[str, ...] | None:
        names = tuple(c.strip() for c in text.split(","))
        return names if all(names) else None

    return _per_table(values, "--cdc-keys", "TABLE=COL[,COL] (e.g. public.orders=order_id,line)", "key", columns)


def parse_cdc_sequences(values: Iterable[str]) -> dict[str, str]:
    """`TABLE=COL` flags -> {table: column}; a malformed one is a one-line error."""

    def column(text: str) -> str | None:
        return text.strip() if text.strip() and "," not in text else None

    return _per_table(values, "--cdc-sequence", "TABLE=COL (e.g. public.orders=updated_at)", "column", column)


Parsed = TypeVar("Parsed")


def _per_table(
    values: Iterable[str], flag: str, form: str, what: str, parse: Callable[[str], Parsed | None]
) -> dict[str, Parsed]:
    """`TABLE=...` flags, once per table, each right side read by `parse` (None: malformed)."""
    found: dict[str, Parsed] = {}
    for value in values:
        table, sep, rest = value.partition("=")
        table = table.strip()
        parsed = parse(rest) if sep and is_valid_event_type(table) else None
        if parsed is None:
            raise PipelineConfigError(f"{flag} takes {form}, got `{value}`")
        if table in found:
            raise PipelineConfigError(f"{flag} names table `{table}` twice: give its {what} once")
        found[table] = parsed
    return found
