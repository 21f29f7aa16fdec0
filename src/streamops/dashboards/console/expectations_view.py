"""Data-quality expectations: which rules fail on which table, since when, and the rows they refused.

Read from `_system/expectations`, which the pipeline writes with each batch's identity, so a
replayed batch is never counted twice; judged by `streamops.monitor.expectation_status`, as
`streamops status` judges them: a rule fails while it failed rows in its table's last batches.
For a chosen table, the newest rows its `drop` rules sent to the quarantine (reason
`expectation`, the rules each failed in its detail), with the raw payload a fixed rule can
replay. A failing `warn` rule kept its rows; a `fail` rule stopped its group, whose stream shows
as failed on the Fleet page.
"""

from __future__ import annotations

import streamlit as st

from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import display, lake_reads
from streamops.dashboards.console.display import show_table
from streamops.dashboards.console.page_shell import code_span, open_lake, page_path
from streamops.monitor.expectation_status import LOOKBACK, RECENT_BATCHES

# A page script's constants carry comments, not docstrings: Streamlit would draw a string literal.
EXAMPLE_ROWS = 20  # newest quarantined rows of the chosen table shown
RULE_COLUMNS = [
    "table",
    "expectation",
    "action",
    "state",
    "failing_since",
    "failed",
    "passed",
    "batches_failing",
    "total_failed",
    "total_passed",
    "last_committed_at",
    "stream",
]
LOOKBACK_HOURS = round(LOOKBACK.total_seconds() / 3600)  # how far back the counts are read
EXAMPLE_COLUMNS = ["ingest_time", "batch_id", "detail", "raw_text"]


def render(lake: LakeLayout) -> None:
    st.title("Expectations")
    root = str(lake.root)
    rules = lake_reads.expectation_rules(root)
    if rules is None:
        st.info(
            "No expectation counts yet: `streamops run --expectations FILE` checks every batch against "
            "data-quality rules and counts them in `_system/expectations` (docs: Expectations)."
        )
        return
    failing = rules[rules["failing"]]
    st.caption(
        f"{len(rules)} rules on {rules['table'].nunique()} tables; {len(failing)} failing, on "
        f"{failing['table'].nunique()} tables. Failed and passed rows are over each table's last "
        f"{RECENT_BATCHES} batches; a rule fails while one of them failed rows, since the first failing "
        f"batch after {RECENT_BATCHES} it passed whole, within the last {LOOKBACK_HOURS} hours read."
    )
    if len(failing):
        names = ", ".join(code_span(t) for t in sorted(failing["table"].unique()))
        st.warning(f"Rules fail on {names}: the table below lists each rule, failing ones first.")
    else:
        st.success("No rule fails in its table's last batches.")
    shown = rules.assign(
        state=rules["failing"].map({True: "failing", False: "passing"}),
        batches_failing=[f"{f} of {n}" for f, n in zip(rules["failing_batches"], rules["recent_batches"])],
    )
    show_table(
        shown,
        hide_index=True,
        key="expectation_rules",
        column_order=RULE_COLUMNS,
        column_config={
            "expectation": st.column_config.TextColumn("rule"),
            "failing_since": st.column_config.DatetimeColumn(
                "failing since (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC"
            ),
            "last_committed_at": st.column_config.DatetimeColumn(
                "last batch (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC"
            ),
            "failed": st.column_config.NumberColumn("failed rows", format="localized"),
            "passed": st.column_config.NumberColumn("passed rows", format="localized"),
            "total_failed": st.column_config.NumberColumn(f"failed, {LOOKBACK_HOURS} h", format="localized"),
            "total_passed": st.column_config.NumberColumn(f"passed, {LOOKBACK_HOURS} h", format="localized"),
        },
    )
    tables = list(dict.fromkeys(rules["table"]))
    table = st.selectbox("Table", tables, key="table", bind="query-params")
    mine = rules[rules["table"] == table]
    for rule in mine[mine["failing"]].itertuples():
        st.markdown(
            f"{code_span(rule.expectation)} ({rule.action}) fails since batch {rule.failing_since_batch_id}, "
            f"{display.utc_time(rule.failing_since)}: {display.count(rule.failed, 'rows')} failed and "
            f"{display.count(rule.passed, 'rows')} passed in the table's last {rule.recent_batches} batches."
        )
    stream = mine["stream"].iloc[-1]
    if st.button(f"Open stream `{stream}`", key="open_stream"):
        st.switch_page(page_path("stream_view.py"), query_params={"stream": stream})
    _examples(root, table)


def _examples(root: str, table: str) -> None:
    st.subheader("Rows its drop rules removed")
    examples = lake_reads.expectation_examples(root, table, EXAMPLE_ROWS)
    if examples is None or examples.empty:
        st.caption(
            f"No row of {code_span(table)} is in the quarantine with reason `{lake_reads.EXPECTATION_REASON}`: "
            "its rules warn, or no drop rule failed."
        )
        return
    st.caption(
        f"The newest {len(examples)} in the quarantine (reason `{lake_reads.EXPECTATION_REASON}`); the detail "
        "names every rule the row failed. All of them are on the Quarantine page."
    )
    show_table(
        examples.assign(raw_text=examples["raw_text"].map(display.preview)),
        hide_index=True,
        key="expectation_examples",
        column_order=EXAMPLE_COLUMNS,
        column_config={
            "ingest_time": st.column_config.DatetimeColumn(
                "ingested (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC", width=150
            ),
            "batch_id": st.column_config.NumberColumn("batch", format="%d", width=55),
            "detail": st.column_config.TextColumn("rules failed", width=160),
            "raw_text": st.column_config.TextColumn("raw payload", width=360),
        },
    )
    if st.button("Open the quarantine", key="open_quarantine"):
        st.switch_page(page_path("quarantine_view.py"), query_params={"reason": lake_reads.EXPECTATION_REASON})


if __name__ == "__main__":
    render(open_lake())
