"""What every ``nbx`` command shares: the plugin-selection flags and the usage error (exit code 2).

Both :mod:`nbx_core.cli` and :mod:`nbx_core.cli.run` import this module; neither imports the other
at the top (``nbx`` imports ``run`` only when the command is ``run``).
"""

from __future__ import annotations

import argparse

from ..errors import NbxError


class UsageError(NbxError):
    """The command line asks for something that cannot be done (exit code 2)."""


def registry_options() -> argparse.ArgumentParser:
    """A parent parser with the plugin-selection flags, which mirror the NBX_* variables."""
    parser = argparse.ArgumentParser(add_help=False)
    group = parser.add_argument_group("plugin selection (added to the NBX_* environment variables)")
    group.add_argument("--disable-plugin", action="append", default=[], metavar="NAME",
                       help="do not load plugin NAME (repeatable; NBX_DISABLE_PLUGINS)")
    group.add_argument("--no-autoload", action="store_true",
                       help="load only core and the --plugins allow-list (NBX_DISABLE_PLUGIN_AUTOLOAD=1)")
    group.add_argument("--plugins", metavar="A,B",
                       help="allow-list of plugins to load besides core; implies --no-autoload (NBX_PLUGINS)")
    group.add_argument("--prefer", action="append", default=[], metavar="OP=PLUGIN",
                       help="choose PLUGIN among the providers of OP (repeatable; NBX_PREFER)")
    return parser
