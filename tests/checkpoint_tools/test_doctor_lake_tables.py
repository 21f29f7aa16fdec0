"""`streamops checkpoint doctor --lake` also checks the lake's tables: a data file the log lists
that the store lacks or holds truncated is `table_files_damaged`, named with its version, its
rows and the `lake fsck` commands; an error while a stream still has to read it, a warning once
every stream has (every checkpoint is healthy then, and the table is still broken). Lakes the
pipeline wrote (`built_lake`), real checkpoints of both connectors (`delta_world`), and a lake
delta-rs writes with a Kafka checkpoint from the fixtures (no Spark)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
from checkpoint_worlds import append_versions
from deltalake import write_deltalake

from streamops.checkpoint_tools.table_checks import diagnose_lake_tables
from streamops.cli import main
from streamops.core.delta_format.log import AddFile, DeltaLog
from streamops.core.lake_layout import LakeLayout

FIXTURES = Path(__file__).parent / "fixtures"


def doctor(capsys, lake: LakeLayout, *flags: str) -> tuple[int, str]:
    code = main(["checkpoint", "doctor", "--lake", str(lake.root), *flags])
    out, err = capsys.readouterr()
    assert err == "", err
    return code, out


def doctor_json(capsys, lake: LakeLayout) -> tuple[int, dict]:
    code, out = doctor(capsys, lake, "--json")
    report = json.loads(out)
    assert report["exit_code"] == code
    return code, report


def table_findings(report: dict) -> dict[str, list[dict]]:
    return {t["table"]: t["findings"] for t in report["tables"] if t["findings"]}


def added(table, version: int) -> tuple[Path, AddFile]:
    """The first file `version` added, and its add."""
    add = DeltaLog(table).commit(version).adds[0]
    return Path(table) / add.path, add


def first_added(table) -> tuple[int, Path, AddFile]:
    """The oldest version that added a file, that file and its add."""
    version = next(v for v in range(DeltaLog(table).latest_version() + 1) if DeltaLog(table).commit(v).adds)
    return (version, *added(table, version))


def severities(report: dict) -> set[tuple[str, str, str]]:
    return {(c["stream"], f["code"], f["severity"]) for c in report["checkpoints"] for f in c["findings"]}


def truncate(path: Path, size: int = 20) -> None:
    path.write_bytes(path.read_bytes()[:size])


def fsck_commands(lake: LakeLayout, table) -> tuple[str, str]:
    return f"streamops lake fsck --lake {lake.root}", f"streamops lake fsck {table} --lake {lake.root} --yes"


def delta_rs_lake(root: Path) -> LakeLayout:
    """bronze/events (versions 0..2, 5 rows each) and silver/x written by delta-rs, and a Kafka
    stream's checkpoint (it reads none of the tables)."""
    lake = LakeLayout.at(root / "lake")
    for version in range(3):
        write_deltalake(
            str(lake.bronze_events), pa.table({"id": list(range(version * 5, version * 5 + 5))}), mode="append"
        )
    write_deltalake(str(lake.silver("x")), pa.table({"id": [1, 2]}))
    shutil.copytree(FIXTURES / "kafka_spark35", str(lake.checkpoint("kafka_in")))
    return lake


def test_files_no_stream_reads_are_a_warning_naming_each_file_its_rows_and_fsck(capsys, tmp_path):
    lake = delta_rs_lake(tmp_path)
    code, report = doctor_json(capsys, lake)
    assert code == 0 and table_findings(report) == {}
    assert [t["table"] for t in report["tables"]] == [str(lake.bronze_events), str(lake.silver("x"))]

    bronze = lake.bronze_events
    deleted, deleted_add = added(bronze, 1)
    cut, cut_add = added(bronze, 2)
    deleted.unlink()
    truncate(cut)
    code, out = doctor(capsys, lake)
    assert code == 1
    [line] = [line for line in out.splitlines() if "table_files_damaged" in line]
    assert line.startswith(f"  WARN  table_files_damaged: `{bronze}` lists 2 data file(s) (10 rows) ")
    assert f"`{deleted}` (added in version 1) is missing (5 rows)" in line
    assert f"`{cut}` (added in version 2) is truncated: 20 of {cut_add.size:,} bytes (5 rows)" in line
    assert "no stream of the lake still has to read" in line
    listing, repair = fsck_commands(lake, bronze)
    assert f"`{listing}`" in out and f"`{repair}`" in out
    assert out.splitlines()[-1] == "1 checkpoint(s) and 2 table(s): 0 error(s), 1 warning(s), 0 info; " + (
        "1 with checks not run (see `not checked`)"
    )

    code, report = doctor_json(capsys, lake)
    assert code == 1 and report["checkpoints"][0]["findings"] == []
    [finding] = table_findings(report)[str(bronze)]
    assert (finding["code"], finding["severity"], finding["stream"]) == ("table_files_damaged", "warning", None)
    evidence = finding["evidence"]
    assert evidence["versions"] == [1, 2] and evidence["rows"] == 10 and evidence["streams"] == []
    assert [(f["path"], f["version"], f["damage"], f["rows"], f["needed_by"]) for f in evidence["files"]] == [
        (deleted_add.path, 1, "missing", 5, []),
        (cut_add.path, 2, "truncated", 5, []),
    ]
    assert (evidence["fsck_command"], evidence["repair_command"]) == (listing, repair)

    assert main([*listing.split()[1:], "--json"]) == 1
    [fsck] = [t for t in json.loads(capsys.readouterr().out)["tables"] if t["damaged"]]
    assert [d["path"] for d in fsck["damaged"]] == [f["path"] for f in evidence["files"]]


def test_a_table_that_cannot_be_read_is_a_check_that_failed(tmp_path):
    lake = delta_rs_lake(tmp_path)
    (Path(lake.silver("x")) / "_delta_log" / "00000000000000000000.json").write_text("{broken")
    tables = {str(t.table): t for t in diagnose_lake_tables(lake)}
    assert tables[str(lake.bronze_events)].findings == ()
    [finding] = tables[str(lake.silver("x"))].findings
    assert (finding.code, finding.severity, finding.evidence["check"]) == (
        "check_failed",
        "warning",
        "table_files_damaged",
    )


def test_a_file_a_stream_still_has_to_read_is_an_error_one_it_read_a_warning(capsys, delta_world):
    lake, bronze, stream = delta_world.lake, delta_world.source, delta_world.stream
    code, report = doctor_json(capsys, lake)
    assert code == 0 and table_findings(report) == {}, table_findings(report)

    read, _ = added(bronze, 4)  # the stream read versions 1..4
    read.unlink()
    append_versions(bronze, 1000, 2)
    unread, _ = added(bronze, 5)
    truncate(unread)
    sink_version, sink_file, _ = first_added(delta_world.sinks[0])
    sink_file.unlink()

    code, report = doctor_json(capsys, lake)
    assert code == 2
    found = table_findings(report)
    assert set(found) == {str(bronze), str(delta_world.sinks[0])}
    error, warning = found[str(bronze)]
    assert (error["severity"], error["evidence"]["versions"], error["evidence"]["streams"]) == ("error", [5], [stream])
    assert [f["needed_by"] for f in error["evidence"]["files"]] == [[stream]]
    assert f"`{unread}` (added in version 5) is truncated: 20 of " in error["message"]
    assert f"which {stream} still has to read" in error["message"]
    assert "startingVersion=6" in error["fix"] and fsck_commands(lake, bronze)[1] in error["fix"]
    assert (warning["severity"], warning["evidence"]["versions"]) == ("warning", [4])
    assert f"`{read}` (added in version 4) is missing (5 rows)" in warning["message"]
    [sink_warning] = found[str(delta_world.sinks[0])]
    assert (
        sink_warning["severity"] == "warning"
        and f"`{sink_file}` (added in version {sink_version}) is missing" in (sink_warning["message"])
    )
    [checkpoint] = report["checkpoints"]
    assert "source_files_damaged" in {f["code"] for f in checkpoint["findings"]}

    code, out = doctor(capsys, lake)
    assert code == 2
    assert [line.split(":")[0] for line in out.splitlines() if "table_files_damaged" in line] == [
        "  ERROR table_files_damaged",
        "  WARN  table_files_damaged",
        "  WARN  table_files_damaged",
    ]
    assert f"table {bronze}: error" in out.splitlines()


def test_a_bronze_file_every_silver_stream_read_leaves_the_checkpoints_healthy_and_is_reported(
    capsys, built_lake, tmp_path
):
    lake = LakeLayout.at(shutil.copytree(Path(built_lake.lake.root), tmp_path / "lake"))
    _, healthy = doctor_json(capsys, lake)
    assert table_findings(healthy) == {}
    assert [t["table"] for t in healthy["tables"]] == [str(t) for t in lake.table_dirs()]
    assert len(healthy["tables"]) > 3

    bronze = lake.bronze_events
    version, lost, add = first_added(bronze)  # every silver stream read it (as a commit or in its snapshot)
    lost.unlink()
    code, report = doctor_json(capsys, lake)
    assert severities(report) == severities(healthy)
    rank = {"info": 0, "warning": 1, "error": 2}
    assert code == max([1] + [rank[severity] for _, _, severity in severities(report)])
    [finding] = table_findings(report)[str(bronze)]
    assert finding["severity"] == "warning"
    assert f"`{lost}` (added in version {version}) is missing ({add.num_records:,} rows)" in finding["message"]
    assert fsck_commands(lake, bronze)[0] in finding["fix"] and finding["evidence"]["streams"] == []

    assert main([*fsck_commands(lake, bronze)[0].split()[1:], "--json"]) == 1
    [fsck] = [t for t in json.loads(capsys.readouterr().out)["tables"] if t["damaged"]]
    assert (fsck["table"], fsck["streams_to_restart"]) == (str(bronze), [])
    assert [d["path"] for d in fsck["damaged"]] == [add.path]
