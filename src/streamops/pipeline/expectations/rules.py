"""The rules a run checks, as values: what `--expectations FILE` and the Python API both make.

Spark-free, so a rules file can be read and shown without a cluster; whether an expression
parses is Spark's judgement, made once before the run starts (rule_checks.py). What can be
judged without Spark is judged when a value is built, so a rule built in Python is held to the
same shape as one read from a file."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, get_args

from streamops.core.lake_layout import is_valid_event_type
from streamops.pipeline.exceptions import PipelineConfigError

Action = Literal["warn", "drop", "fail"]
ACTIONS: tuple[Action, ...] = get_args(Action)
Outcome = Literal["passed", "failed", "not_applicable"]

RULE_NAME_PATTERN = re.compile(r"[A-Za-z0-9_](?:[A-Za-z0-9_ .:\-]{0,126}[A-Za-z0-9_.\-])?")
"""A rule's name: letters, digits, '_', '.', ':', '-' and inner spaces (DLT's names have them),
at most 128; no comma, so the list of rules a quarantined row failed reads back unambiguously."""


class ExpectationError(PipelineConfigError):
    """A rule or a set of rules is not well formed. `problem` says what is wrong without saying
    where, so a rules file's reader can name the file, the table and the rule before it."""

    def __init__(self, problem: str, rule: str | None = None) -> None:
        super().__init__(f"expectation `{rule}`: {problem}" if rule is not None else problem)
        self.problem = problem


@dataclass(frozen=True)
class Expectation:
    """One rule: `expect` (a Spark SQL boolean over the table's columns; a row passes when it is
    true) or `unique` (columns whose values may occur once per batch; later duplicates fail)."""

    name: str
    action: Action = "warn"
    expect: str | None = None
    unique: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not RULE_NAME_PATTERN.fullmatch(self.name):
            raise ExpectationError(
                f"`{self.name}` is not a valid rule name: use letters, digits, '_', '.', ':', '-' and "
                "inner spaces (max 128)"
            )
        if isinstance(self.unique, str) or not isinstance(self.unique, Sequence):
            raise ExpectationError(f"`unique` takes a list of column names, got {self.unique!r}", self.name)
        object.__setattr__(self, "unique", tuple(self.unique))
        problem = _shape_problem(self)
        if problem is not None:
            raise ExpectationError(problem, self.name)


def _shape_problem(rule: Expectation) -> str | None:
    if rule.action not in ACTIONS:
        return f"action `{rule.action}` is not one of {', '.join(ACTIONS)}"
    if (rule.expect is None) == (not rule.unique):
        return "give exactly one of `expect` (a SQL condition) or `unique` (a list of columns)"
    if rule.expect is not None and (not isinstance(rule.expect, str) or not rule.expect.strip()):
        return f"`expect` takes a Spark SQL condition as a string, got {rule.expect!r}"
    if not all(isinstance(column, str) and column for column in rule.unique):
        return f"`unique` takes a list of column names, got {list(rule.unique)!r}"
    if len(set(rule.unique)) != len(rule.unique):
        return f"`unique` names a column twice: {list(rule.unique)!r}"
    return None


@dataclass(frozen=True)
class ExpectationSet:
    """Rules per table: `default` for every silver table, `tables` by silver table (event type)
    or CDC table name, `bronze` for bronze's events table."""

    default: tuple[Expectation, ...] = ()
    tables: dict[str, tuple[Expectation, ...]] = field(default_factory=dict)
    bronze: tuple[Expectation, ...] = ()

    def __post_init__(self) -> None:
        for table in self.tables:
            if not is_valid_event_type(table):
                raise ExpectationError(
                    f"`{table}` is not a valid table name: give a silver table (event type) or CDC table "
                    "name (letters, digits, '_', '.', '-', max 128)"
                )
        object.__setattr__(self, "default", _rules_of(self.default, "default rules"))
        object.__setattr__(self, "bronze", _rules_of(self.bronze, "bronze rules"))
        tables = {table: _rules_of(rules, f"table `{table}`") for table, rules in self.tables.items()}
        object.__setattr__(self, "tables", tables)

    def for_table(self, table: str) -> tuple[Expectation, ...]:
        """The rules of a silver or CDC table: the defaults, then its own (its own win by name)."""
        own = self.tables.get(table, ())
        names = {rule.name for rule in own}
        return tuple(rule for rule in self.default if rule.name not in names) + own

    def sections(self) -> Iterator[tuple[str, tuple[Expectation, ...]]]:
        """Each group of rules with the words a message names it by ("default rules", "table
        `purchase`", "bronze rules"), for checks that report where a rule sits."""
        yield "default rules", self.default
        for table, rules in self.tables.items():
            yield f"table `{table}`", rules
        yield "bronze rules", self.bronze

    def __bool__(self) -> bool:
        return bool(self.default or self.tables or self.bronze)


def _rules_of(rules: Sequence[Expectation], where: str) -> tuple[Expectation, ...]:
    if isinstance(rules, (str, Mapping)) or not isinstance(rules, Sequence):
        raise ExpectationError(f"{where}: give a list of rules, got {type(rules).__name__}")
    seen: set[str] = set()
    for rule in rules:
        if not isinstance(rule, Expectation):
            raise ExpectationError(f"{where}: {rule!r} is not an Expectation")
        if rule.name in seen:
            raise ExpectationError(f"{where}: two rules are named `{rule.name}`; give each its own name")
        seen.add(rule.name)
    return tuple(rules)


NO_EXPECTATIONS = ExpectationSet()
