"""nbx-core's version, in a foundation module so that the graph exporter and the CLI can name it
without importing the ``nbx_core`` package module, which sits above them."""

__version__ = "0.1.0"
