"""Quarantine browser: every record the pipeline could not use, by reason, with its raw text.

Counts come first (which reasons, which streams and event types), then one reason's records a
page at a time; selecting a record shows its whole text, so the engineer can hand the producer
the exact line that was refused.
"""

from __future__ import annotations

import streamlit as st

from streamops.core.lake_layout import LakeLayout
from streamops.dashboards.console import charts, display, lake_reads
from streamops.dashboards.console.display import show_table
from streamops.dashboards.console.fleet_table import page_count, page_of
from streamops.dashboards.console.page_shell import open_lake, plain

PAGE_SIZE = 50
FULL_TEXT_CHARS = 20_000
WHAT_TO_DO = {
    "incompatible_type": "A field changed to a type the silver table cannot hold: see the Schemas view "
    "(schema alerts) and fix the producer.",
    "malformed_json": "The producer wrote a line that is not JSON: fix its serializer.",
    "not_an_object": "The line is JSON but not an object (array or scalar): fix the producer.",
    "missing_event_type": "The event has no `event_type`: fix the producer.",
    "invalid_event_type": "`event_type` is not a safe table name (letters, digits, `_`, `.`, `-`).",
    "empty_line": "Blank lines in the landing files: usually harmless, fix the writer if they grow.",
    "invalid_utf8": "The line is not valid UTF-8: fix the producer's encoding.",
    "too_large": "The line is over the record limit (`--max-record-bytes`, 1 MiB by default): split the event, drop the oversized attribute, or raise the limit.",
    "too_deep": "The event nests deeper than 32 levels: flatten it at the producer.",
    "number_out_of_range": "A number does not fit a 64-bit integer or a double: send it as a string.",
    "duplicate_key": "An object repeats a key: fix the producer's serializer.",
    "unusable_key": "A key cannot be a column name (empty, or only dots): rename the field at the producer.",
    "tombstone": "A Kafka record without a value (a delete marker): harmless on a compacted topic.",
    "unprocessable": "The pipeline could not process the record: the detail says why.",
    "cdc_not_a_change": "Not a Debezium row change: check what writes to the CDC topic.",
    "cdc_missing_key": "No key for its table: declare it with --cdc-keys.",
    "cdc_missing_position": "No source position to order the change by: check the connector's settings.",
    "cdc_missing_sequence": "No usable value of the table's --cdc-sequence column.",
    "expectation": "A `drop` data-quality rule refused the row; the detail names every rule it failed. The "
    "Expectations view shows each table's failing rules: fix the producer, or the rule, then replay the payload.",
}
# The records table's columns; stream, reason and file of the chosen record are written below it.
RECORD_COLUMNS = ["ingest_time", "batch_id", "event_type", "detail", "raw_text"]


def render(lake: LakeLayout) -> None:
    st.title("Quarantine")
    root = str(lake.root)
    counts = lake_reads.quarantine_counts(root)
    if counts is None or counts.empty:
        st.success("Nothing quarantined: every record reached bronze and silver.")
        return
    by_reason = counts.groupby("reason", as_index=False)["rows"].sum().sort_values("rows", ascending=False)
    st.caption(f"{int(by_reason['rows'].sum()):,} quarantined records in {len(by_reason)} reasons")
    left, right = st.columns([2, 3])
    left.altair_chart(charts.bars(by_reason, "reason", "rows", "Records by reason"), width="stretch")
    show_table(counts, where=right, hide_index=True, key="quarantine_counts")
    reason = st.selectbox("Reason", by_reason["reason"].tolist(), key="reason", bind="query-params")
    if reason in WHAT_TO_DO:
        st.caption(WHAT_TO_DO[reason])
    records = lake_reads.quarantine_rows(root, reason)
    if records is None or records.empty:
        st.info(f"No `{reason}` record any more.")
        return
    pages = page_count(len(records), PAGE_SIZE)
    page = st.number_input(f"Page (of {pages}, {PAGE_SIZE} records each)", 1, pages, 1, key="quarantine_page")
    window = page_of(records, int(page), PAGE_SIZE).reset_index(drop=True)
    preview = window.drop(columns=["raw_text"]).assign(raw_text=window["raw_text"].map(display.preview))
    selection = show_table(
        preview,
        hide_index=True,
        on_select="rerun",
        selection_mode="single-row",
        key="quarantine_records",
        column_order=RECORD_COLUMNS,
        column_config={
            "ingest_time": st.column_config.DatetimeColumn(
                "ingested (UTC)", format=display.GRID_TIME_FORMAT, timezone="UTC", width=150
            ),
            "batch_id": st.column_config.NumberColumn("batch", format="%d", width=55),
            "event_type": st.column_config.TextColumn("event type", width=110),
            "detail": st.column_config.TextColumn("detail", width=160),
            "raw_text": st.column_config.TextColumn("raw text", width=260),
        },
    )
    chosen = selection.selection.rows if selection is not None else []
    record = window.iloc[chosen[0] if chosen else 0]
    st.caption(
        f"{'Selected' if chosen else 'Newest'} record: stream `{display.text(record['stream'])}`, batch "
        f"{display.text(record['batch_id'])}, from `{display.text(record['source_file'])}`, ingested "
        f"{display.utc_time(record['ingest_time'])} — {plain(display.text(record['detail'] or reason))}"
    )
    text = record["raw_text"] if isinstance(record["raw_text"], str) else ""
    if len(text) > FULL_TEXT_CHARS:
        st.caption(f"first {FULL_TEXT_CHARS:,} of {len(text):,} characters")
    st.code(text[:FULL_TEXT_CHARS] or "(empty)", language=None, wrap_lines=True)


if __name__ == "__main__":
    render(open_lake())
