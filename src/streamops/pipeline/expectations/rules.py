"""The rules a run checks, as values: what `--expectations FILE` and the Python API both make.

Spark-free, so a rules file can be read and shown without a cluster; whether an expression
parses is Spark's judgement, made once before the run starts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, get_args

Action = Literal["warn", "drop", "fail"]
ACTIONS: tuple[Action, ...] = get_args(Action)
Outcome = Literal["passed", "failed", "not_applicable"]


@dataclass(frozen=True)
class Expectation:
    """One rule: `expect` (a Spark SQL boolean over the table's columns; a row passes when it is
    true) or `unique` (columns whose values may occur once per batch; later duplicates fail)."""

    name: str
    action: Action = "warn"
    expect: str | None = None
    unique: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExpectationSet:
    """Rules per table: `default` for every silver table, `tables` by silver table (event type)
    or CDC table name, `bronze` for bronze's events table."""

    default: tuple[Expectation, ...] = ()
    tables: dict[str, tuple[Expectation, ...]] = field(default_factory=dict)
    bronze: tuple[Expectation, ...] = ()

    def for_table(self, table: str) -> tuple[Expectation, ...]:
        """The rules of a silver or CDC table: the defaults, then its own (its own win by name)."""
        own = self.tables.get(table, ())
        names = {rule.name for rule in own}
        return tuple(rule for rule in self.default if rule.name not in names) + own

    def __bool__(self) -> bool:
        return bool(self.default or self.tables or self.bronze)


NO_EXPECTATIONS = ExpectationSet()
