"""`--expectations FILE`: a YAML or TOML rules file read into an `ExpectationSet`, or one line
saying which file, table and rule is wrong.

The form (YAML; TOML's is the same tree, `[[default]]`, `[[tables.purchase]]`, `[[bronze]]`):

    default:                       # every silver table
      - {name: has_id, expect: "event_id IS NOT NULL", action: warn}
    tables:
      purchase:                    # a silver table (event type) or CDC table
        - {name: price_nonneg, expect: "price >= 0", action: drop}
        - {name: one_order, unique: [order_id], action: warn}
    bronze:                        # bronze's events table
      - {name: has_payload, expect: "value IS NOT NULL"}

Spark-free: PyYAML and the standard library only, so the file is judged before Spark starts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from streamops.core.extras import MissingExtraError
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.expectations.rules import Expectation, ExpectationError, ExpectationSet

SECTIONS = ("default", "tables", "bronze")
RULE_KEYS = ("name", "expect", "unique", "action")
YAML_SUFFIXES = (".yaml", ".yml")
TOML_SUFFIXES = (".toml",)


def load_expectations(path: str | Path) -> ExpectationSet:
    """The rules `path` holds (YAML by `.yaml`/`.yml`, TOML by `.toml`); `PipelineConfigError`
    naming the file, the table and the rule when it cannot be read or is not well formed."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in YAML_SUFFIXES + TOML_SUFFIXES:
        raise PipelineConfigError(f"{path}: an expectations file ends in .yaml, .yml or .toml")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PipelineConfigError(f"{path}: no such expectations file") from None
    except UnicodeDecodeError:
        raise PipelineConfigError(f"{path}: not UTF-8 text; save the expectations file as UTF-8") from None
    except OSError as error:
        raise PipelineConfigError(f"{path}: cannot read the expectations file ({error.strerror})") from None
    document = _yaml_document(text, path) if suffix in YAML_SUFFIXES else _toml_document(text, path)
    return expectations_from_document(document, str(path))


def expectations_from_document(document: object, source: str) -> ExpectationSet:
    """The rules of a parsed file (`{default: [...], tables: {name: [...]}, bronze: [...]}`), e.g.
    a dict built in Python; `source` names it in errors."""
    if document is None:
        return ExpectationSet()
    if not isinstance(document, Mapping):
        raise PipelineConfigError(f"{source}: give a mapping with {_listed(SECTIONS)} at the top")
    unknown = [str(key) for key in document if key not in SECTIONS]
    if unknown:
        raise PipelineConfigError(f"{source}: unknown key `{unknown[0]}` at the top; use {_listed(SECTIONS)}")
    tables = document.get("tables") or {}
    if not isinstance(tables, Mapping):
        raise PipelineConfigError(f"{source}: `tables` maps each table name to its list of rules")
    try:
        return ExpectationSet(
            default=_rules(document.get("default"), source, "default rules"),
            tables={
                _table_name(name, source): _rules(rules, source, f"table `{name}`") for name, rules in tables.items()
            },
            bronze=_rules(document.get("bronze"), source, "bronze rules"),
        )
    except ExpectationError as error:
        raise PipelineConfigError(f"{source}: {error.problem}") from None


def _table_name(name: object, source: str) -> str:
    if not isinstance(name, str):
        raise PipelineConfigError(f"{source}: `{name}` is not a valid table name: write it as a string")
    return name


def _rules(rules: object, source: str, where: str) -> tuple[Expectation, ...]:
    if rules is None:
        return ()
    if not isinstance(rules, list):
        raise PipelineConfigError(f"{source}: {where}: give a list of rules, each with `name` and `expect` or `unique`")
    return tuple(_rule(rule, index, source, where) for index, rule in enumerate(rules, 1))


def _rule(rule: object, index: int, source: str, where: str) -> Expectation:
    if not isinstance(rule, Mapping):
        raise PipelineConfigError(f"{source}: {where}, rule {index}: give a mapping with {_listed(RULE_KEYS)}")
    name = rule.get("name")
    if name is None:
        raise PipelineConfigError(f"{source}: {where}, rule {index} has no `name`; give each rule one")
    label = f"{where}, rule `{name}`"
    unknown = [str(key) for key in rule if key not in RULE_KEYS]
    if unknown:
        raise PipelineConfigError(f"{source}: {label}: unknown key `{unknown[0]}`; use {_listed(RULE_KEYS)}")
    unique = rule.get("unique", ())
    if not isinstance(unique, (list, tuple)):
        raise PipelineConfigError(f"{source}: {label}: `unique` takes a list of column names, e.g. [order_id]")
    try:
        return Expectation(name=name, action=rule.get("action", "warn"), expect=rule.get("expect"), unique=unique)
    except ExpectationError as error:
        raise PipelineConfigError(f"{source}: {label}: {error.problem}") from None


def _yaml_document(text: str, path: Path) -> Any:
    try:
        import yaml
    except ImportError:
        raise MissingExtraError(
            f"reading {path} needs PyYAML, which is not installed: pip install 'streamops[pipeline]'"
        ) from None

    class UniqueKeyLoader(yaml.SafeLoader):
        """PyYAML keeps the last of two equal keys; a table given twice would lose rules silently."""

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if key in seen:
                    raise yaml.constructor.ConstructorError(None, None, f"`{key}` is given twice", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

    try:
        return yaml.load(text, Loader=UniqueKeyLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "cannot be parsed"
        raise PipelineConfigError(f"{path}: not valid YAML{at}: {problem}") from None


def _toml_document(text: str, path: Path) -> Any:
    if sys.version_info < (3, 11):
        raise PipelineConfigError(f"{path}: reading TOML needs Python 3.11 or newer; write the rules as YAML")
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise PipelineConfigError(f"{path}: not valid TOML: {error}") from None


def _listed(keys: tuple[str, ...]) -> str:
    return ", ".join(f"`{key}`" for key in keys)
