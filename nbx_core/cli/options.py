"""What every ``nbx`` command shares: the plugin-selection flags and the usage error (exit code 2).

Both :mod:`nbx_core.cli` and :mod:`nbx_core.cli.run` import this module; neither imports the other
at the top (``nbx`` imports ``run`` only when the command is ``run``).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from typing import Any

from ..errors import NbxError


class UsageError(NbxError):
    """The command line asks for something that cannot be done (exit code 2)."""


def registry_options() -> argparse.ArgumentParser:
    """A parent parser with the plugin-selection flags, which mirror the NBX_* variables."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("plugin selection (added to the NBX_* environment variables)")
    group.add_argument(
        "--disable-plugin",
        action="append",
        default=[],
        metavar="NAME",
        help="do not load plugin NAME (repeatable; NBX_DISABLE_PLUGINS)",
    )
    group.add_argument(
        "--no-autoload",
        action="store_true",
        help="load only core and the --plugins allow-list (NBX_DISABLE_PLUGIN_AUTOLOAD=1)",
    )
    group.add_argument(
        "--plugins",
        metavar="A,B",
        help="allow-list of plugins to load besides core; implies --no-autoload (NBX_PLUGINS)",
    )
    group.add_argument(
        "--prefer",
        action="append",
        default=[],
        metavar="OP=PLUGIN",
        help="choose PLUGIN among the providers of OP (repeatable; NBX_PREFER)",
    )
    return parser


_MIN_LAST = 12  # a truncated last column keeps at least this many characters


def _terminal_width() -> int | None:
    """The width tables must fit: the terminal's (``COLUMNS`` when set), or None when stdout is not
    a terminal, so that a table piped to a file or to grep is never cut."""
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """An aligned table of ``rows`` under ``headers``, without its empty columns; where the terminal
    is narrower, the last column (the longest: targets, reasons) is cut to fit, ending in '...'."""
    cells = [[("" if c is None else str(c)) for c in row] for row in rows]
    shown = [i for i in range(len(headers)) if not cells or any(row[i] for row in cells)]
    cells = [[headers[i] for i in shown], *([row[i] for i in shown] for row in cells)]
    widths = [max(len(row[i]) for row in cells) for i in range(len(shown))]
    terminal = _terminal_width()
    if terminal is not None and sum(widths) + 2 * (len(widths) - 1) > terminal:
        last = max(terminal - sum(widths[:-1]) - 2 * (len(widths) - 1), _MIN_LAST)
        for row in cells:
            if len(row[-1]) > last:
                row[-1] = row[-1][: last - 3] + "..."
    lines = ("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in cells)
    return "\n".join(line.rstrip() for line in lines)
