"""`streamops generate` as users and scripts call it."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from streamops.cli import main
from streamops.pipeline.generator.landing_writer import MANIFEST_NAME


def test_json_prints_the_manifest_written_next_to_the_files(tmp_path, capsys):
    out = tmp_path / "landing"
    code = main(
        [
            "generate",
            "--out",
            str(out),
            "--events",
            "2000",
            "--event-types",
            "10",
            "--drift",
            "0.5",
            "--bad",
            "0.01",
            "--seed",
            "3",
            "--json",
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out == (out / MANIFEST_NAME).read_text()
    manifest = json.loads(captured.out)
    assert manifest["seed"] == 3 and manifest["lines_total"] == 2_000
    assert manifest["parameters"]["events_per_file"] == 5_000 and len(manifest["files"]) == 1
    assert "generate: 2000/2000 lines" in captured.err


def test_human_output_summarises_drift_and_bad_records(tmp_path, capsys):
    code = main(["generate", "--out", str(tmp_path), "--events", "500", "--event-types", "5", "--drift", "1"])
    captured = capsys.readouterr()
    assert code == 0
    assert captured.out.startswith("wrote 500 lines in 1 files")
    for word in ("new_event_type", "incompatible_type", "too_large", MANIFEST_NAME):
        assert word in captured.out


def test_options_shape_the_run(tmp_path, capsys):
    code = main(
        [
            "generate",
            "--out",
            str(tmp_path),
            "--events",
            "90",
            "--event-types",
            "4",
            "--titles",
            "2",
            "--drift",
            "0",
            "--bad",
            "0",
            "--events-per-file",
            "40",
            "--start-time",
            "2030-05-01T12:00:00Z",
            "--time-span",
            "60",
            "--json",
        ]
    )
    manifest = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [f["lines"] for f in manifest["files"]] == [40, 40, 10]
    assert manifest["events_total"] == 90 and manifest["bad_total"] == 0
    assert all(not types for types in manifest["drift"].values())
    assert all(len(entry["variations"]) == 1 for entry in manifest["event_types"].values())
    events = [json.loads(line) for line in (tmp_path / "events-000003.ndjson").read_text().splitlines()]
    assert events[-1]["event_time"].startswith("2030-05-01T12:00:5")
    assert {event["title_id"] for event in events} <= {"title-0000", "title-0001"}


@pytest.mark.parametrize(
    "args, message",
    [
        (["--events", "0"], "--events must be at least 1"),
        (["--events", "10", "--drift", "1.5"], "--drift is a fraction between 0 and 1"),
        (["--events", "10", "--bad", "-0.1"], "--bad is a fraction between 0 and 1"),
        (["--events", "10", "--event-types", "2000"], "--event-types must be between 1 and"),
        (["--events", "10", "--rate", "0"], "--rate must be a positive number"),
        (["--events", "10", "--start-time", "noon"], "--start-time `noon` is not ISO-8601"),
        (["--events", "10", "--events-per-file", "0"], "--events-per-file must be at least 1"),
    ],
)
def test_bad_arguments_give_one_line_and_exit_2(tmp_path, capsys, args, message):
    code = main(["generate", "--out", str(tmp_path / "x"), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_unparseable_argument_gives_one_line_and_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--out", str(tmp_path), "--events", "many"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.count("\n") == 1 and "--events: invalid int value: 'many'" in err


def test_installed_command_runs_in_a_fresh_process(tmp_path):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "streamops",
            "generate",
            "--out",
            str(tmp_path),
            "--events",
            "300",
            "--event-types",
            "6",
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["lines_total"] == 300


def test_help_has_an_example(capsys):
    with pytest.raises(SystemExit):
        main(["generate", "--help"])
    assert "streamops generate --out landing --events" in capsys.readouterr().out


def test_generator_imports_no_spark():
    code = (
        "import sys, streamops.cli.generate, streamops.pipeline.generator.run; "
        "sys.exit(1 if any(name.split('.')[0] in ('pyspark', 'py4j') for name in sys.modules) else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code], timeout=60).returncode == 0
