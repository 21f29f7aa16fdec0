"""Schema view: how one event type's schema evolved, what changed, and what was refused.

From the schema registry: every variation in arrival order with its schema version and change,
a field-by-field diff between two versions (or two variations), the prototype message of a
variation, and the schema alerts (incompatible changes: the rows went to quarantine).
"""

from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from streamops.core.lake_layout import LakeLayout, is_valid_event_type
from streamops.dashboards.console import display, lake_reads
from streamops.dashboards.console.display import show_table
from streamops.dashboards.console.page_shell import open_lake
from streamops.dashboards.console.schema_diff import diff_schemas, flatten_schema

HISTORY_COLUMNS = [
    "seen_order",
    "schema_version",
    "variation_hash",
    "change_kind",
    "changes",
    "first_seen",
    "first_bronze_version",
    "batch_id",
]
ALERT_COLUMNS = [
    "detected_at",
    "event_type",
    "field",
    "old_type",
    "new_type",
    "rows_affected",
    "action",
    "stream",
    "batch_id",
    "variation_hash",
    "first_bronze_version",
]


def describe_changes(changed_fields: str | None) -> str:
    """The registry's `changed_fields` JSON as `player.level: long -> string; ...`."""
    changes = json.loads(changed_fields) if changed_fields else []
    return "; ".join(f"{c['path']}: {c.get('old_type') or '(new)'} -> {c.get('new_type')}" for c in changes)


def variation_label(row: pd.Series) -> str:
    return f"v{row['schema_version']} · {row['variation_hash']} · {row['change_kind']}"


def render(lake: LakeLayout) -> None:
    st.title("Schemas")
    root = str(lake.root)
    registry = lake_reads.schema_registry(root)
    event_types = lake_reads.registry_event_types(registry)
    if registry is None or not event_types:
        st.info("The schema registry is empty: no event has reached bronze yet.")
        return
    alerts = lake_reads.schema_alerts(root)
    _alert_summary(alerts)
    event_type = st.selectbox(f"Event type ({len(event_types)})", event_types, key="event_type", bind="query-params")
    if not is_valid_event_type(event_type):
        st.error(f"`{event_type}` is not a valid event type")
        return
    history = registry[registry["event_type"] == event_type].reset_index(drop=True)
    a, b, c = st.columns(3)
    a.metric("Variations", len(history), border=True)
    b.metric("Schema version", int(history["schema_version"].max()), border=True)
    type_alerts = alerts[alerts["event_type"] == event_type] if alerts is not None else pd.DataFrame()
    c.metric("Schema alerts", len(type_alerts), border=True)
    st.subheader("Registry history")
    shown = history.assign(changes=history["changed_fields"].map(describe_changes))
    show_table(shown[HISTORY_COLUMNS], hide_index=True, key="registry_history")
    _diff(history)
    _prototype(history)
    if len(type_alerts):
        st.subheader("Schema alerts of this event type")
        show_table(type_alerts[[c for c in ALERT_COLUMNS if c != "event_type"]], hide_index=True, key="type_alerts")


def _alert_summary(alerts: pd.DataFrame | None) -> None:
    if alerts is None or alerts.empty:
        return
    types = alerts["event_type"].nunique()
    st.warning(
        f"**{len(alerts)} incompatible schema change{'s' if len(alerts) > 1 else ''}** in {types} event "
        f"type{'s' if types > 1 else ''}: the values their tables cannot hold are kept in the rows' "
        "`_rescued_data` (action `rescued`), or their rows are in quarantine (action `quarantined`, reason "
        "`incompatible_type`), or their group stopped (action `group_failed`). Fix the producer, or widen "
        "the column on purpose with `streamops lake promote`.",
        icon=":material/warning:",
    )
    with st.expander("All schema alerts"):
        show_table(alerts[ALERT_COLUMNS], hide_index=True, key="all_alerts")


def _diff(history: pd.DataFrame) -> None:
    st.subheader("Compare")
    versions = sorted(history["schema_version"].unique())
    bases = ["schema versions", "variations"] if len(versions) > 1 else ["variations"]
    basis = st.radio("Compare", bases, horizontal=True, key="diff_basis", label_visibility="collapsed")
    if basis == "schema versions":
        latest_per_version = history.sort_values("seen_order").drop_duplicates("schema_version", keep="last")
        schemas = dict(zip(latest_per_version["schema_version"], latest_per_version["schema_json"]))
        left, right = st.columns(2)
        old = left.selectbox("From version", versions, index=len(versions) - 2, key="diff_from_version")
        new = right.selectbox("To version", versions, index=len(versions) - 1, key="diff_to_version")
        old_schema, new_schema, what = schemas[old], schemas[new], f"superset schema v{old} -> v{new}"
    else:
        labels = [variation_label(row) for _, row in history.iterrows()]
        left, right = st.columns(2)
        old_index = left.selectbox(
            "From variation",
            range(len(labels)),
            format_func=labels.__getitem__,
            index=max(0, len(labels) - 2),
            key="diff_from_variation",
        )
        new_index = right.selectbox(
            "To variation",
            range(len(labels)),
            format_func=labels.__getitem__,
            index=len(labels) - 1,
            key="diff_to_variation",
        )
        old_schema = history.loc[old_index, "variation_schema_json"]
        new_schema = history.loc[new_index, "variation_schema_json"]
        what = f"variation {history.loc[old_index, 'variation_hash']} -> {history.loc[new_index, 'variation_hash']}"
    changes = diff_schemas(old_schema, new_schema)
    if not changes:
        st.info(f"No field differs ({what}).")
    else:
        st.caption(f"{len(changes)} field change{'s' if len(changes) > 1 else ''}: {what}")
        show_table(pd.DataFrame([c.to_json() for c in changes]), hide_index=True, key="schema_diff")
    with st.expander("Superset schema of the newest version, flattened"):
        latest = history.sort_values("seen_order").iloc[-1]["schema_json"]
        show_table(
            pd.DataFrame(sorted(flatten_schema(latest).items()), columns=["path", "type"]),
            hide_index=True,
            key="schema_fields",
        )


def _prototype(history: pd.DataFrame) -> None:
    st.subheader("Prototype message")
    labels = [variation_label(row) for _, row in history.iterrows()]
    index = st.selectbox(
        "Variation",
        range(len(labels)),
        format_func=labels.__getitem__,
        index=len(labels) - 1,
        key="prototype_variation",
    )
    row = history.loc[index]
    st.caption(
        f"The first message seen with variation {row['variation_hash']} (first seen {display.utc_time(row['first_seen'])})"
    )
    st.code(json.dumps(json.loads(row["prototype"]), indent=2), language="json")


if __name__ == "__main__":
    render(open_lake())
