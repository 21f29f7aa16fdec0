"""The committed files under dashboards/generated are exactly what the code generates."""

from __future__ import annotations

import json

import pytest

from streamops.cli import main
from streamops.dashboards.build import GENERATED_DIR, REBUILD_COMMAND, build_files


def files_under(root) -> dict[str, str]:
    return {
        path.relative_to(root).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_committed_files_match_a_fresh_build(built_dir):
    """`built_dir` is a fresh `streamops dashboards build` into a temporary directory."""
    fresh, committed = files_under(built_dir), files_under(GENERATED_DIR)
    missing = sorted(set(fresh) - set(committed))
    stale = sorted(set(committed) - set(fresh))
    assert not missing, f"dashboards/generated lacks {missing}; run `{REBUILD_COMMAND}`"
    assert not stale, f"dashboards/generated has files the code no longer makes: {stale}; delete them"
    for path, text in fresh.items():
        assert committed[path] == text, (
            f"dashboards/generated/{path} differs from what the code generates; run `{REBUILD_COMMAND}`"
        )


def test_build_is_deterministic(built_files):
    assert build_files() == built_files


def test_cli_build_writes_every_file(tmp_path, built_files, capsys):
    out = tmp_path / "grafana"
    assert main(["dashboards", "build", "--out", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["files"]) == sorted(str(out / path) for path in built_files)
    for path, text in built_files.items():
        assert (out / path).read_text(encoding="utf-8") == text


def test_cli_build_into_a_file_is_a_one_line_error(tmp_path, capsys):
    not_a_dir = tmp_path / "taken"
    not_a_dir.write_text("x")
    assert main(["dashboards", "build", "--out", str(not_a_dir)]) != 0
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "is a file" in err and "Traceback" not in err


@pytest.mark.parametrize("argv", [["dashboards", "--help"], ["dashboards", "build", "--help"]])
def test_help_has_an_example(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    help_text = capsys.readouterr().out
    assert "example:" in help_text and "streamops dashboards build --out" in help_text
