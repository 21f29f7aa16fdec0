"""The console on a lake in S3 or Azure: its readers (Delta tables through delta-rs and Arrow's
native filesystems, the progress log, checkpoints) return what they return on the local copy,
and the app itself opens on the remote lake."""

from __future__ import annotations

import pandas as pd
import pytest
import streamlit as st
from streamlit.testing.v1 import AppTest

from streamops.dashboards.console import APP_PATH, LAKE_ENV, lake_reads

pytestmark = pytest.mark.services

TABLE_READERS = ("schema_registry", "schema_alerts", "event_groups", "quarantine_counts")


def test_console_readers_give_the_local_answers(store, built_lake, uploaded_lakes):
    local, remote = str(built_lake.lake.root), uploaded_lakes[store.name]
    st.cache_data.clear()
    for name in TABLE_READERS:
        here, there = getattr(lake_reads, name)(local), getattr(lake_reads, name)(remote)
        assert here is not None and not here.empty, name
        pd.testing.assert_frame_equal(there.reset_index(drop=True), here.reset_index(drop=True), obj=name)
    reason = lake_reads.quarantine_counts(local)["reason"].iloc[0]
    pd.testing.assert_frame_equal(lake_reads.quarantine_rows(remote, reason), lake_reads.quarantine_rows(local, reason))
    streams = lake_reads.checkpoint_streams(local)
    assert lake_reads.checkpoint_streams(remote) == streams
    stream = streams[0]
    pd.testing.assert_frame_equal(lake_reads.stream_history(remote, stream), lake_reads.stream_history(local, stream))
    assert [r.stream for r in lake_reads.fleet(remote)[0]] == [r.stream for r in lake_reads.fleet(local)[0]]
    findings_here = [f["code"] for f in lake_reads.diagnosis(local, stream)["findings"]]
    assert [f["code"] for f in lake_reads.diagnosis(remote, stream)["findings"]] == findings_here


def test_the_console_opens_on_a_remote_lake(store, built_lake, uploaded_lakes, monkeypatch):
    monkeypatch.setenv(LAKE_ENV, uploaded_lakes[store.name])
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(APP_PATH), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [d.value for d in at.dataframe if "last_batch_age_seconds" in d.value.columns]
    assert len(shown) == 1
    assert sorted(shown[0]["stream"]) == sorted(r.stream for r in lake_reads.fleet(str(built_lake.lake.root))[0])
