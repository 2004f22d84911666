"""nbx-core's own ops (metadata, creation, copy, cast, join), registered as plugin ``core``.

Each module holds plain functions with ATen's signatures; ``plugin.py`` maps the ATen names of
``oplists/core.txt`` onto them.
"""
