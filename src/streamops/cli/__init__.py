"""The command line: the top layer, above every package it drives.

One module per command group (`checkpoint`, `lake`, `run`, ...), each a thin parser over a
library call; `main` is the `streamops` console script.
"""

from streamops.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
