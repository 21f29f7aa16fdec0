"""What each package offers a user, imported only when asked for.

`from streamops.monitor import StreamMonitor` should work, but `import streamops.monitor` (which
`streamops status` does on a laptop without PySpark) must not load the listener. Each package's
`__init__` lists its public names and the module that defines each; the module is imported on
first access (PEP 562), so a name whose optional dependencies are missing fails alone, with
the extra to install (`streamops.core.extras`).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    package: str, exports: Mapping[str, str]
) -> tuple[list[str], Callable[[str], Any], Callable[[], list[str]]]:
    """`__all__`, `__getattr__` and `__dir__` for `package`, whose public `exports` map each
    name to the module (relative to `package`) that defines it."""
    names = sorted(exports)

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module `{package}` has no attribute `{name}`")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return names, __getattr__, __dir__
