"""``python -m nbx_core.cli``: the ``nbx`` command (how ``nbx compile`` starts its aot child)."""

import sys

from . import main

sys.exit(main())
