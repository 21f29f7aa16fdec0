"""`streamops run`'s arguments that are checked before Spark starts, and the input and mode they name."""

from __future__ import annotations

import re

import pytest

from streamops.cli import build_parser
from streamops.pipeline.bronze.events_mode import EVENTS
from streamops.pipeline.bronze.kafka_input import KafkaInput
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.cdc.cdc_settings import CDC_FORMATS, CdcSettings
from streamops.pipeline.cdc.debezium_mode import DebeziumChanges
from streamops.pipeline.exceptions import PipelineConfigError
from streamops.pipeline.run.ingest_modes import CHANGE_MODES
from streamops.pipeline.silver.silver_stream import POLL_SECONDS

RUN = ["run", "--lake", "lake", "--landing", "landing"]


@pytest.mark.parametrize("value", ["0", "-1", "soon", "nan"])
def test_a_silver_poll_that_is_not_seconds_above_zero_is_refused_in_one_line(value, capsys):
    with pytest.raises(SystemExit) as stopped:
        build_parser().parse_args([*RUN, "--silver-poll", value])
    assert stopped.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"streamops run: error: argument --silver-poll: {value!r} is not a number of seconds above 0"
    )


def test_the_silver_poll_defaults_to_a_second_and_takes_fractions():
    assert build_parser().parse_args(RUN).silver_poll == POLL_SECONDS == 1.0
    assert build_parser().parse_args([*RUN, "--silver-poll", "2.5"]).silver_poll == 2.5


def run_options(*flags: str):
    """The RunOptions `streamops run` would start with these flags (Spark not started)."""
    from streamops.cli.run import _ingest_mode, _line_input

    args = build_parser().parse_args(["run", "--lake", "lake", *flags])
    return _line_input(args), _ingest_mode(args)


def test_the_flags_name_one_input_and_one_mode():
    landing, events = run_options("--landing", "landing", "--max-files-per-trigger", "7")
    assert landing == LandingInput("landing", max_files_per_trigger=7) and events == EVENTS
    kafka, changes = run_options(
        "--kafka-bootstrap", "b:9092", "--topics", "a,b", "--kafka-consumer-group", "g", "--cdc", "debezium"
    )
    assert kafka == KafkaInput("b:9092", topics=("a", "b"), consumer_group="g")
    assert changes == DebeziumChanges(CdcSettings())
    assert set(CHANGE_MODES) == set(CDC_FORMATS)


@pytest.mark.parametrize(
    ("flags", "error"),
    [
        ((), "give the pipeline one input: --landing DIR, or --kafka-bootstrap with --topics"),
        (
            ("--landing", "l", "--kafka-bootstrap", "b:9092", "--topics", "t"),
            "give --landing or --kafka-bootstrap, not both",
        ),
        (
            ("--landing", "l", "--kafka-consumer-group", "g"),
            "--kafka-consumer-group needs bronze to read Kafka (--kafka-bootstrap)",
        ),
        (("--landing", "l", "--cdc-history"), "--cdc-keys, --cdc-sequence and --cdc-history need --cdc debezium"),
    ],
)
def test_flags_that_name_no_input_or_two_are_refused_in_one_line(flags, error):
    with pytest.raises(PipelineConfigError, match="^" + re.escape(error) + "$"):
        run_options(*flags)
