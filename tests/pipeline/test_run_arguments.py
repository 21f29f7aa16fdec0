"""`streamops run`'s arguments that are checked before Spark starts."""

from __future__ import annotations

import pytest

from streamops.cli import build_parser
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
