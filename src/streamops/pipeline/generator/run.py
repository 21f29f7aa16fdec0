"""One generator run: lines from the event stream into landing files, then the manifest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from streamops.pipeline.generator.event_stream import EventStream
from streamops.pipeline.generator.landing_writer import (
    MANIFEST_NAME,
    Pacer,
    data_file_name,
    prepare_landing_dir,
    write_atomically,
)
from streamops.pipeline.generator.manifest import WrittenFile, build_manifest, manifest_json
from streamops.pipeline.generator.settings import GeneratorSettings
from streamops.pipeline.generator.violations import RULES_FILE_NAME, rules_yaml


@dataclass(frozen=True)
class Progress:
    """Reported after each file: enough to print a progress line and spot a falling-behind run."""

    file: WrittenFile
    lines_done: int
    lines_total: int
    elapsed_seconds: float
    behind_seconds: float


def generate(settings: GeneratorSettings, on_file: Callable[[Progress], None] | None = None) -> dict[str, Any]:
    """Write the run's files to `settings.target` (files under `settings.out` by default) and
    return its manifest (also `_manifest.json` in `settings.out`, written last; with violations,
    their rules file first)."""
    prepare_landing_dir(settings.out)
    writer = settings.target.open(settings.out)
    stream = EventStream(settings)
    pacer = Pacer(settings.rate)
    files: list[WrittenFile] = []
    done = 0
    while done < settings.events:
        behind = pacer.wait_for(done)
        name = data_file_name(len(files) + 1)
        lines = stream.lines(settings.lines_per_file, name)
        size = writer.write(name, lines)
        files.append(WrittenFile(name, len(lines), size, done))
        done += len(lines)
        if on_file is not None:
            on_file(Progress(files[-1], done, settings.events, pacer.elapsed(), behind))
    manifest = build_manifest(settings, stream, files)
    if settings.violations:
        write_atomically(settings.out / RULES_FILE_NAME, rules_yaml().encode())
    write_atomically(settings.out / MANIFEST_NAME, manifest_json(manifest).encode())
    return manifest
