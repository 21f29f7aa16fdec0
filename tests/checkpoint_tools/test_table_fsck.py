"""`streamops lake fsck` on real Delta tables: a dry run lists each damaged file and exits 1;
`--yes` moves truncated files aside, drops every damaged file from the log in one FSCK commit
that records them, and the table reads again; tables with deletion vectors or column mapping are
repaired correctly; a table delta-rs cannot write is refused with nothing changed."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from delta_by_hand import HandTable
from deltalake import DeltaTable, write_deltalake

from streamops.checkpoint_tools.table_fsck import FSCK_METADATA_KEY, fsck_table
from streamops.cli import main
from streamops.core.delta_format.log import DeltaLog
from streamops.core.lake_layout import LakeLayout


def run(capsys, *argv: object) -> tuple[int, str, str]:
    code = main(["lake", "fsck", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def data_file(table: Path, version: int) -> Path:
    """The file version `version` added (one per version here)."""
    [add] = DeltaLog(table).commit(version).adds
    return table / add.path


def three_versions(table: Path) -> None:
    for version in range(3):
        write_deltalake(table, pa.table({"id": list(range(version * 5, version * 5 + 5))}), mode="append")


@pytest.fixture
def damaged(tmp_path) -> tuple[Path, Path, Path, bytes]:
    """Versions 0..2 of 5 rows each; version 0's file deleted, version 1's truncated to 20 bytes.
    Returns (table, missing file, truncated file, the truncated file's bytes)."""
    table = tmp_path / "events"
    three_versions(table)
    missing, cut = data_file(table, 0), data_file(table, 1)
    missing.unlink()
    cut.write_bytes(cut.read_bytes()[:20])
    return table, missing, cut, cut.read_bytes()


def test_a_dry_run_lists_each_damaged_file_and_exits_1(capsys, damaged):
    table, missing, cut, _ = damaged
    code, out, err = run(capsys, table)
    assert code == 1, err
    size = DeltaLog(table).commit(1).adds[0].size
    assert out.splitlines() == [
        f"`{missing}` (added in version 0) is missing",
        f"`{cut}` (added in version 1) is truncated: 20 of {size:,} bytes",
        f"{table}: 2 damaged file(s) (10 rows); run again with --yes to drop them from its log",
    ]
    assert DeltaTable(str(table)).version() == 2 and cut.exists()


def test_yes_drops_them_records_them_and_the_table_reads_again(capsys, damaged):
    table, missing, cut, cut_bytes = damaged
    code, out, err = run(capsys, table, "--yes", "--json")
    assert code == 0, err
    [report] = json.loads(out)["tables"]
    moved_to = table / "_damaged" / cut.name
    assert report["fsck_version"] == 3 and report["refused"] is None
    assert report["dropped_rows"] == 10 and len(report["dropped"]) == 2
    assert [(d["damage"], d["version"], d["moved_to"]) for d in report["damaged"]] == [
        ("missing", 0, None),
        ("truncated", 1, str(moved_to)),
    ]
    assert moved_to.read_bytes() == cut_bytes and not cut.exists()

    dt = DeltaTable(str(table))
    assert sorted(dt.to_pyarrow_table()["id"].to_pylist()) == list(range(10, 15))
    [fsck] = dt.history(1)
    assert fsck["operation"] == "FSCK"
    record = fsck[FSCK_METADATA_KEY]
    assert record["rows"] == 10 and record["bytes"] == sum(d["expected_size"] for d in report["damaged"])
    assert [(d["path"], d["damage"], d["rows"]) for d in record["dropped"]] == [
        (missing.name, "missing", 5),
        (cut.name, "truncated", 5),
    ]

    code, out, _ = run(capsys, table)
    assert (code, out) == (0, f"{table}: clean\n")


def test_the_text_of_a_repair_names_the_commit(capsys, damaged):
    table, *_ = damaged
    code, out, _ = run(capsys, table, "--yes")
    assert code == 0
    assert out.splitlines()[-1] == (
        f"{table}: dropped 2 file(s) (10 rows) from its log in version 3 (FSCK, recorded under "
        f"`{FSCK_METADATA_KEY}`); truncated file(s) moved to {table / '_damaged'}"
    )


def test_lake_checks_every_table(capsys, tmp_path):
    lake = LakeLayout.at(tmp_path / "lake")
    for table in (lake.bronze_events, lake.silver("match_end"), lake.query_progress):
        three_versions(Path(table))
    data_file(Path(lake.silver("match_end")), 2).unlink()
    code, out, err = run(capsys, "--lake", lake.root, "--json")
    assert code == 1, err
    reports = {Path(t["table"]).name: t for t in json.loads(out)["tables"]}
    assert set(reports) == {"events", "match_end", "query_progress"}
    assert [d["version"] for d in reports["match_end"]["damaged"]] == [2]
    assert reports["events"]["damaged"] == [] and reports["query_progress"]["damaged"] == []


def test_no_table_is_one_line_and_exit_2(capsys):
    code, _, err = run(capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--lake" in err


def test_deletion_vectors_are_removed_with_their_file(tmp_path):
    table = HandTable(tmp_path / "dv", {"id": "long"})
    first = table.data_file("a.parquet", pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    second = table.data_file("b.parquet", pa.table({"id": pa.array([4, 5, 6], pa.int64())}))
    table.commit("WRITE", {"add": first}, {"add": second})
    table.delete_rows([first, second], table.deletion_vector_file([[0], [0]]))
    (table.root / "a.parquet").unlink()
    result = fsck_table(table.root, repair=True)
    [dropped] = result.dropped
    assert (dropped.version, dropped.rows) == (2, 2)  # named by its newest add: the DELETE that gave it its vector
    dt = DeltaTable(str(table.root))
    assert sorted(pa.table(dt.scan())["id"].to_pylist()) == [5, 6]
    remove = [json.loads(line) for line in (table.log / f"{result.fsck_version:020d}.json").read_text().splitlines()]
    assert [a["remove"]["deletionVector"]["cardinality"] for a in remove if "remove" in a] == [1]


def test_column_mapped_tables_are_repaired(tmp_path):
    root = tmp_path / "mapped"
    write_deltalake(
        root,
        pa.table({"id": [1, 2], "part": ["a", "b"]}),
        partition_by=["part"],
        configuration={"delta.columnMapping.mode": "name"},
    )
    write_deltalake(root, pa.table({"id": [3, 4], "part": ["a", "b"]}), mode="append")
    first = DeltaLog(root).commit(0).adds[0]
    (root / first.path).unlink()
    result = fsck_table(root, repair=True)
    assert [d.path for d in result.dropped] == [first.path]
    rows = pa.table(DeltaTable(str(root)).scan()).to_pylist()
    assert len(rows) == 3 and {r["part"] for r in rows} == {"a", "b"}
    actions = [json.loads(line) for line in (root / "_delta_log" / f"{result.fsck_version:020d}.json").open()]
    [remove] = [a["remove"] for a in actions if "remove" in a]
    assert remove["partitionValues"] == dict(first.partition_values)  # keyed by the physical column name


def test_a_table_delta_rs_cannot_write_is_refused_and_left_as_it_was(capsys, tmp_path):
    table = HandTable(tmp_path / "odd", {"id": "long"})
    protocol = table.log / f"{0:020d}.json"
    protocol.write_text(protocol.read_text().replace('"writerFeatures": [', '"writerFeatures": ["someFutureFeature", '))
    add = table.data_file("a.parquet", pa.table({"id": pa.array([1, 2, 3], pa.int64())}))
    table.commit("WRITE", {"add": add})
    cut = table.root / "a.parquet"
    cut.write_bytes(cut.read_bytes()[:20])
    code, out, err = run(capsys, table.root, "--yes")
    assert code == 2, err
    assert out.splitlines()[-1].startswith(f"{table.root}: not repaired: delta-rs cannot repair `{table.root}`: ")
    assert out.splitlines()[-1].endswith("nothing was changed: restore the file(s)")
    assert cut.stat().st_size == 20 and not [p for p in (table.root / "_damaged").rglob("*") if p.is_file()]
    assert DeltaTable(str(table.root)).version() == table.version
