"""The ingest modes by name: what `streamops run --cdc NAME` reads (without `--cdc`, events)."""

from __future__ import annotations

from typing import Callable

from streamops.pipeline.bronze.ingest_mode import IngestMode
from streamops.pipeline.cdc.cdc_settings import CdcFormat, CdcSettings
from streamops.pipeline.cdc.debezium_mode import DebeziumChanges

CHANGE_MODES: dict[CdcFormat, Callable[[CdcSettings], IngestMode]] = {"debezium": DebeziumChanges}
"""Each change format (`CdcSettings.format`, `--cdc`) and the mode that reads it."""


def change_mode(settings: CdcSettings) -> IngestMode:
    """The mode that reads the changes `settings` describe."""
    return CHANGE_MODES[settings.format](settings)
