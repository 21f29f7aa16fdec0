"""One small generated run shared by the generator tests."""

from __future__ import annotations

import pytest
from landing_oracle import GeneratedRun, read_lines

from streamops.pipeline.generator.run import generate
from streamops.pipeline.generator.settings import GeneratorSettings


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> GeneratedRun:
    out = tmp_path_factory.mktemp("landing")
    manifest = generate(
        GeneratorSettings(
            out=out,
            events=6_000,
            event_types=25,
            titles=40,
            drift=0.4,
            bad=0.02,
            seed=11,
            events_per_file=1_000,
        )
    )
    return GeneratedRun(out, manifest, read_lines(out, manifest))
