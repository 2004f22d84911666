"""Writing a graph directory: ``graph.json`` and ``weights.safetensors``, atomically.

:func:`save` validates the document and the weights first (:mod:`nbx_core.graph.validate`), so a
graph that would not load is never written.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import from_numpy as dtype_of
from .format import FORMAT, GRAPH_FILE, SAFETENSORS_DTYPES, WEIGHTS_FILE
from .validate import check_weights, parse_document


def write_safetensors(path: Path, arrays: Mapping[str, np.ndarray], dtypes: Mapping[str, str]) -> None:
    """Write ``arrays`` (keyed like the file) in the safetensors layout, ``dtypes`` giving each NBX
    dtype name. Written directly because safetensors.numpy cannot store float8."""
    header: dict[str, Any] = {"__metadata__": {"format": FORMAT}}
    offset = 0
    blobs = []
    for key, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        header[key] = {"dtype": SAFETENSORS_DTYPES[dtypes[key]], "shape": list(array.shape),
                       "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # the format asks for 8-byte alignment of the data
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)
        f.flush()
        os.fsync(f.fileno())


def save(document: Mapping[str, Any], weights: Mapping[str, np.ndarray], path: str | Path) -> Path:
    """Validate ``document`` with ``weights`` and write them as the graph directory ``path``.

    Atomic: everything is written to a temporary directory beside ``path`` and renamed into
    place, so an interrupted save leaves either the old graph or the new one, never half of one.
    ``weights`` maps each weight's key to a numpy array (ml_dtypes for bfloat16 and float8).
    """
    path = Path(path)
    graph = parse_document(document, path)
    given = {key: (dtype_of(a.dtype).name, tuple(a.shape)) for key, a in weights.items()}
    check_weights(graph, given, "given to save()")
    dtypes = {w.key: w.dtype for w in graph.weights}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    old = None
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a graph is an ordinary directory
        with open(tmp / GRAPH_FILE, "w", encoding="utf-8") as f:
            json.dump(document, f, indent=1, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        write_safetensors(tmp / WEIGHTS_FILE, {w.key: weights[w.key] for w in graph.weights}, dtypes)
        if path.exists():
            # A directory cannot be renamed over a non-empty one: move the old graph aside first.
            old = path.with_name(f".{path.name}.{os.getpid()}.old")
            os.replace(path, old)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not path.exists():
            os.replace(old, path)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return path
