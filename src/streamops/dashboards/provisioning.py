"""Grafana provisioning files: the Prometheus datasource and the dashboard file provider.

A Grafana admin copies `provisioning/*` into Grafana's provisioning directory and the dashboard
JSON into `GRAFANA_DASHBOARDS_PATH`; the datasource URL is the one line to edit.
"""

from __future__ import annotations

from typing import Any

from streamops.dashboards.grafana_alerts import DATASOURCE_UID, FOLDER_TITLE, FOLDER_UID, ORG_ID
from streamops.dashboards.prometheus_rules import SCRAPE_INTERVAL

PROMETHEUS_URL = "http://127.0.0.1:9090"
DATASOURCE_NAME = "streamops Prometheus"
GRAFANA_DASHBOARDS_PATH = "/var/lib/grafana/dashboards/streamops"


def datasource_document(url: str = PROMETHEUS_URL) -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "datasources": [
            {
                "name": DATASOURCE_NAME,
                "uid": DATASOURCE_UID,
                "type": "prometheus",
                "access": "proxy",
                "orgId": ORG_ID,
                "url": url,
                "isDefault": False,
                "editable": True,
                "jsonData": {"timeInterval": SCRAPE_INTERVAL, "httpMethod": "POST"},
            }
        ],
    }


def dashboard_provider_document(path: str = GRAFANA_DASHBOARDS_PATH) -> dict[str, Any]:
    return {
        "apiVersion": 1,
        "providers": [
            {
                "name": "streamops",
                "orgId": ORG_ID,
                "folder": FOLDER_TITLE,
                "folderUid": FOLDER_UID,
                "type": "file",
                "disableDeletion": False,
                "allowUiUpdates": False,
                "updateIntervalSeconds": 60,
                "options": {"path": path, "foldersFromFilesStructure": False},
            }
        ],
    }
