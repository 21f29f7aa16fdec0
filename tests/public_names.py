"""Resolve every public name of every streamops package, and say what happened to each.

Imports only the standard library and streamops, so tests/test_packaging.py runs the same code
(`python -c`) in a virtualenv holding the wheel without extras, and tests/test_public_api.py
runs it in the dev venv, where every extra is installed.
"""

from __future__ import annotations

import importlib
import inspect
import json
from pathlib import Path
from typing import Any

EXTRA_OF_PACKAGE = {
    "streamops.pipeline": "pipeline",
    "streamops.monitor": "monitor",
    "streamops.dashboards": "dashboards",
    "streamops.dashboards.console": "console",
}
"""The extra a package's names may need; a name of any other package needs none."""


def extra_of(package: str) -> str | None:
    """The extra of the innermost package in `EXTRA_OF_PACKAGE` that holds `package`."""
    holders = [p for p in EXTRA_OF_PACKAGE if package == p or package.startswith(p + ".")]
    return EXTRA_OF_PACKAGE[max(holders, key=len)] if holders else None


def resolve_all() -> dict[str, Any]:
    """{"file": where `streamops` was imported from, "packages": {package: outcome},
    "names": {"package:name": outcome}}; an outcome is "ok", or the error's type and message,
    and for a name that resolved, where it is defined ("defined_in")."""
    import streamops

    root = Path(streamops.__file__).parent
    packages = sorted(
        ".".join(("streamops", *init.parent.relative_to(root).parts)) for init in root.rglob("__init__.py")
    )
    report: dict[str, Any] = {"file": streamops.__file__, "packages": {}, "names": {}}
    for package in packages:
        try:
            module = importlib.import_module(package)
        except Exception as error:  # every failure is reported: the test judges it
            report["packages"][package] = _failure(error)
            continue
        report["packages"][package] = "ok" if hasattr(module, "__all__") else "no __all__"
        for name in getattr(module, "__all__", ()):
            try:
                value = getattr(module, name)
            except Exception as error:
                report["names"][f"{package}:{name}"] = _failure(error)
                continue
            defined_in = value.__module__ if inspect.isclass(value) or inspect.isfunction(value) else None
            report["names"][f"{package}:{name}"] = {"outcome": "ok", "defined_in": defined_in}
    return report


def _failure(error: Exception) -> dict[str, str]:
    return {"outcome": type(error).__name__, "message": str(error)}


if __name__ == "__main__":
    print(json.dumps(resolve_all()))
