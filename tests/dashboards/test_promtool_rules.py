"""The generated Prometheus rules pass `promtool check rules` and their unit tests, and the unit
tests catch a broken rule."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from streamops.dashboards.alert_rules import build_alert_rules
from streamops.dashboards.build import PROMETHEUS_CONFIG, PROMETHEUS_RULE_TESTS, PROMETHEUS_RULES, render
from streamops.dashboards.prometheus_rules import rules_document
from streamops.dashboards.rule_tests import CASES

PROMTOOL = shutil.which("promtool")


def promtool(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is missing: `apt-get install -y prometheus` (.ci/run installs it)"
    return subprocess.run([PROMTOOL, *map(str, args)], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_check_rules(built_dir):
    result = promtool("check", "rules", built_dir / PROMETHEUS_RULES)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"SUCCESS: {len(build_alert_rules())} rules found" in result.stdout


def test_check_config(built_dir):
    result = promtool("check", "config", built_dir / PROMETHEUS_CONFIG)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_rule_has_a_case_with_faulty_and_healthy_series():
    assert {case.alert for case in CASES} == {rule.name for rule in build_alert_rules()}
    for case in CASES:
        fired = {tuple(sorted(f.labels.items())) for _, firings in case.evaluations for f in firings}
        assert fired, f"{case.alert}: no evaluation expects it to fire"
        subjects = {
            (key, value)
            for series in case.input_series
            for key, value in series.labels
            if key in ("stream", "event_type")
        }
        healthy = subjects - {pair for labels in fired for pair in labels}
        assert healthy, f"{case.alert}: no healthy series that must stay quiet"


def test_unit_tests_pass(built_dir):
    result = promtool("test", "rules", built_dir / PROMETHEUS_RULE_TESTS)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


@pytest.mark.parametrize("rule_name", [rule.name for rule in build_alert_rules()])
def test_unit_tests_fail_when_the_rule_never_fires(tmp_path, built_dir, rule_name):
    """Each alert's cases would notice the rule going silent (so they are not vacuous)."""
    document = rules_document(build_alert_rules())
    for rule in document["groups"][0]["rules"]:
        if rule["alert"] == rule_name:
            rule["expr"] = f"({rule['expr']}) and on () vector(0) > 1"
    rules_path = tmp_path / PROMETHEUS_RULES
    rules_path.parent.mkdir(parents=True)
    rules_path.write_text(render(PROMETHEUS_RULES, document))
    tests_path = tmp_path / PROMETHEUS_RULE_TESTS
    tests_path.write_text((built_dir / PROMETHEUS_RULE_TESTS).read_text())
    result = promtool("test", "rules", tests_path)
    assert result.returncode != 0
    assert f"alertname: {rule_name}" in result.stdout + result.stderr


def test_unit_tests_fail_when_a_healthy_stream_fires(tmp_path, built_dir):
    """Lowering the backlog threshold below the healthy stream's backlog must break the test."""
    document = yaml.safe_load((built_dir / PROMETHEUS_RULES).read_text())
    rule = next(r for r in document["groups"][0]["rules"] if r["alert"] == "BacklogSecondsHigh")
    rule["expr"] = rule["expr"].rsplit(">", 1)[0] + "> 1"
    (tmp_path / "prometheus").mkdir()
    (tmp_path / PROMETHEUS_RULES).write_text(render(PROMETHEUS_RULES, document))
    (tmp_path / PROMETHEUS_RULE_TESTS).write_text((built_dir / PROMETHEUS_RULE_TESTS).read_text())
    result = promtool("test", "rules", tmp_path / PROMETHEUS_RULE_TESTS)
    assert result.returncode != 0
    assert 'stream="fast"' in result.stdout + result.stderr
