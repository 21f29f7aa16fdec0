"""The lake layout's path rules: a name from a record or a URL becomes a directory only when it
cannot leave the directory it belongs in, and hidden backup directories are not streams."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from streamops.core.lake_layout import (
    MANAGEMENT_STREAM,
    InvalidNameError,
    LakeLayout,
    group_of,
    is_valid_event_type,
    silver_stream,
)

GOOD_NAMES = ["a", "match_start", "item.purchase", "v2-beta", "A9", "x" * 128, "a.b.c", "a-", "a_"]
BAD_NAMES = [
    "",
    "..",
    "a..b",
    "../etc",
    "a/b",
    "/etc/passwd",
    "a\\b",
    ".hidden",
    "_private",
    "-rf",
    " a",
    "a b",
    "a\n",
    "a\x00b",
    "x" * 129,
    "é",
    "%2e%2e",
    "a%2Fb",
]


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_a_safe_name_is_one_directory_directly_under_its_parent(lake, name):
    assert is_valid_event_type(name)
    assert lake.silver(name).parent == lake.silver_root and lake.silver(name).name == name
    assert lake.checkpoint(name).parent == lake.checkpoints_root and lake.checkpoint(name).name == name


@pytest.mark.parametrize("name", BAD_NAMES)
def test_a_name_that_could_leave_its_directory_or_hide_is_refused(lake, name):
    assert not is_valid_event_type(name)
    with pytest.raises(InvalidNameError, match="is not a valid event type: use letters"):
        lake.silver(name)
    with pytest.raises(InvalidNameError, match="is not a valid stream name"):
        lake.checkpoint(name)


@pytest.mark.parametrize("value", [None, 42, b"bytes", ["a"]])
def test_a_name_that_is_not_text_is_refused(lake, value):
    assert not is_valid_event_type(value)
    with pytest.raises(InvalidNameError):
        lake.silver(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["a\nb", "a\rb\x00", "../x"])
def test_the_error_is_one_line_naming_what_was_refused(lake, name):
    with pytest.raises(InvalidNameError) as error:
        lake.silver(name)
    message = str(error.value)
    assert message.isprintable() and message.startswith("`" + repr(name)[1:-1] + "` is not a valid event type")


def test_the_root_is_absolute_and_resolved(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    assert LakeLayout.at("link").root.local_path == (tmp_path / "real").resolve()
    monkeypatch.setenv("HOME", str(tmp_path))
    assert LakeLayout.at("~/real").root.local_path == (tmp_path / "real").resolve()


def test_hidden_and_non_directory_checkpoints_are_not_streams(lake):
    assert lake.checkpoint_dirs() == [], "no _checkpoints directory yet"
    for name in ("silver_g0001", "bronze", ".bronze.backup-20260101T000000Z", "management"):
        Path(lake.checkpoints_root / name).mkdir(parents=True)
    Path(lake.checkpoints_root / "notes.txt").write_text("not a checkpoint")
    assert [p.name for p in lake.checkpoint_dirs()] == ["bronze", "management", "silver_g0001"]


def test_only_directories_holding_a_delta_log_are_tables(lake):
    def table(path: Path) -> None:
        write_deltalake(str(path), pa.table({"x": [1]}))

    table(lake.bronze_events)
    table(lake.silver("login"))
    table(lake.schema_registry)
    Path(lake.silver_root / "not_a_table").mkdir()
    Path(lake.silver_root / "stray.parquet").write_text("")
    Path(lake.system_root / "half_written").mkdir()
    assert lake.table_dirs() == [lake.bronze_events, lake.silver("login"), lake.schema_registry]


def test_a_stream_name_maps_to_its_group_and_source_table(lake):
    assert silver_stream("g0001") == "silver_g0001" and group_of("silver_g0001") == "g0001"
    assert group_of("bronze") == "" and group_of("silverware") == ""
    assert lake.stream_source_table("silver_g0001") == lake.bronze_events
    assert lake.stream_source_table(MANAGEMENT_STREAM) == lake.schema_registry
    assert lake.stream_source_table("bronze") is None
