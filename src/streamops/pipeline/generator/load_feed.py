"""Where a continuous generated load goes and the input bronze reads it back from: the two ways
`streamops demo` feeds the pipeline (landing files, or a Kafka topic).

The load runs as back-to-back generator runs ("cycles"); each finished file of a cycle is
published: renamed into landing with the cycle as a prefix (which keeps names unique and the
arrival atomic for Spark's file source), or, produced to the topic while it was written, left
where it is.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from streamops.pipeline.bronze.kafka_input import KafkaInput
from streamops.pipeline.bronze.landing_input import LandingInput
from streamops.pipeline.generator.kafka_writer import KafkaTarget, KafkaWriter
from streamops.pipeline.generator.landing_writer import LandingFiles
from streamops.pipeline.generator.line_target import LineTarget

CYCLE_FILE = re.compile(r"^c(\d{4})-")


@dataclass(frozen=True)
class LandingFeed:
    """The load lands as NDJSON files in `landing`."""

    landing: Path

    @property
    def target(self) -> LineTarget:
        """Where the generator puts its lines: files, which `publish` moves into the landing."""
        return LandingFiles()

    def prepare(self) -> None:
        self.landing.mkdir(parents=True, exist_ok=True)

    def line_input(self) -> LandingInput:
        return LandingInput(self.landing)

    def publish(self, written: Path, cycle: int) -> None:
        os.rename(written, self.landing / f"c{cycle:04d}-{written.name}")

    def next_cycle(self) -> int:
        """A load restarted on the same landing continues after the cycles already landed."""
        cycles = [int(m.group(1)) for p in self.landing.iterdir() if (m := CYCLE_FILE.match(p.name))]
        return max(cycles, default=0) + 1

    def delivered(self, files: int) -> str:
        return f"in {files} files"

    def doctor_flags(self) -> str:
        """What `streamops checkpoint doctor` needs besides the lake to check this feed's input."""
        return ""

    def notes(self) -> tuple[list[str], list[str]]:
        """Lines about the feed for a banner: where it is, and what to try on it."""
        return [], []


@dataclass(frozen=True)
class KafkaFeed:
    """The load is produced to `topic`, which bronze reads, publishing its position as `consumer_group`."""

    topic: KafkaTarget
    consumer_group: str

    @property
    def target(self) -> LineTarget:
        return self.topic

    def prepare(self) -> None:
        """Creates the topic when missing: an unreachable broker fails here, before Spark starts."""
        KafkaWriter(self.topic)

    def line_input(self) -> KafkaInput:
        return KafkaInput(self.topic.bootstrap, topics=(self.topic.topic,), consumer_group=self.consumer_group)

    def publish(self, written: Path, cycle: int) -> None:
        """The file's lines are on the topic already."""

    def next_cycle(self) -> int:
        return 1

    def delivered(self, files: int) -> str:
        return f"produced to topic `{self.topic.topic}`"

    def doctor_flags(self) -> str:
        return f" --kafka-bootstrap {self.topic.bootstrap}"

    def notes(self) -> tuple[list[str], list[str]]:
        bootstrap = self.topic.bootstrap
        return (
            [f"  kafka     {self.line_input().describe()}"],
            [f"  kafka-consumer-groups.sh --bootstrap-server {bootstrap} --describe --group {self.consumer_group}"],
        )


LoadFeed = LandingFeed | KafkaFeed
