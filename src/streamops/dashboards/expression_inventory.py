"""Every query the generated files contain, read back out of them.

Reading the built documents (not the Python that produced them) means a check over this list
covers exactly what a Grafana or Prometheus would run: panel targets, template-variable
queries, Grafana alert queries and Prometheus alert expressions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Mapping

from streamops.dashboards.build import ALERTING_PROVISIONING, DASHBOARD_FILES, PROMETHEUS_RULES
from streamops.dashboards.grafana_alerts import EXPRESSION_DATASOURCE

QueryKind = Literal["panel", "variable", "grafana_alert", "prometheus_alert"]

_LABEL_VALUES = re.compile(r"^label_values\((?P<selector>.+),\s*(?P<label>\w+)\)$")
_METRIC = re.compile(r"\bstreamops_[a-zA-Z0-9_]+")
_VARIABLE = re.compile(r"\$(\w+)|\$\{(\w+)\}")


@dataclass(frozen=True)
class UsedQuery:
    file: str
    where: str
    kind: QueryKind
    text: str

    def label_values(self) -> tuple[str, str]:
        """(series selector, label) of a `label_values(...)` variable query."""
        match = _LABEL_VALUES.match(self.text)
        if match is None:
            raise ValueError(f"{self.file}: {self.where}: not a label_values() query: {self.text}")
        return match["selector"], match["label"]

    def metric_names(self) -> set[str]:
        """The `streamops_*` series names the query reads."""
        return set(_METRIC.findall(self.text))


def _panels(panels: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for panel in panels:
        yield panel
        yield from _panels(panel.get("panels") or [])


def dashboard_queries(file: str, dashboard: Mapping[str, Any]) -> Iterator[UsedQuery]:
    for variable in (dashboard.get("templating") or {}).get("list") or []:
        if variable.get("type") == "query":
            yield UsedQuery(file, f"variable {variable['name']}", "variable", variable["query"])
    for panel in _panels(dashboard.get("panels") or []):
        for target in panel.get("targets") or []:
            where = f"panel {panel['title']!r} query {target['refId']}"
            yield UsedQuery(file, where, "panel", target["expr"])


def used_queries(documents: Mapping[str, Any]) -> list[UsedQuery]:
    """Every query in the built documents (as returned by `build.build_documents`)."""
    found: list[UsedQuery] = []
    for file in DASHBOARD_FILES:
        found.extend(dashboard_queries(file, documents[file]))
    for group in documents[ALERTING_PROVISIONING]["groups"]:
        for rule in group["rules"]:
            for query in rule["data"]:
                if query["datasourceUid"] != EXPRESSION_DATASOURCE:
                    where = f"rule {rule['title']} query {query['refId']}"
                    found.append(UsedQuery(ALERTING_PROVISIONING, where, "grafana_alert", query["model"]["expr"]))
    for group in documents[PROMETHEUS_RULES]["groups"]:
        for rule in group["rules"]:
            found.append(UsedQuery(PROMETHEUS_RULES, f"rule {rule['alert']}", "prometheus_alert", rule["expr"]))
    return found


def interpolate(text: str, values: Mapping[str, str]) -> str:
    """Replace Grafana variables as Grafana would for the given values; unknown ones raise."""

    def value_of(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name not in values:
            raise KeyError(f"no value for Grafana variable `${name}` in: {text}")
        return values[name]

    return _VARIABLE.sub(value_of, text)
