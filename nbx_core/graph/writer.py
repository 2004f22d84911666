"""Writing a graph directory: ``graph.json`` and ``weights.safetensors``, atomically.

:func:`save` validates the document and the weights first (:mod:`nbx_core.graph.validate`), so a
graph that would not load is never written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..dtypes import from_numpy as dtype_of
from ..errors import ExportError, GraphFormatError
from .format import FORMAT, GRAPH_FILE, KERNELS_DIR, SAFETENSORS_DTYPES, WEIGHTS_FILE, backup_path
from .validate import check_weights, is_graph_file, parse_document


def write_safetensors(path: Path, arrays: Mapping[str, np.ndarray], dtypes: Mapping[str, str]) -> None:
    """Write ``arrays`` (keyed like the file) in the safetensors layout, ``dtypes`` giving each NBX
    dtype name. Written directly because safetensors.numpy cannot store float8."""
    header: dict[str, Any] = {"__metadata__": {"format": FORMAT}}
    offset = 0
    blobs = []
    for key, array in arrays.items():
        data = np.ascontiguousarray(array).tobytes()
        header[key] = {
            "dtype": SAFETENSORS_DTYPES[dtypes[key]],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(data)],
        }
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

    ``weights`` maps each weight's key to a numpy array (ml_dtypes for bfloat16 and float8).
    Atomic (docs/graph-format.md): killed at any instant, the save leaves either the old graph or
    the new one readable at ``path``. An existing ``path`` is replaced only when it is an NBX graph
    or an empty directory; anything else is an ExportError, and nothing is written.
    """
    path = Path(path)
    if not path.name:  # "." or "..": the backup and temporary names need the directory's own name
        path = path.resolve()
    graph = parse_document(document, path)
    given = {key: (dtype_of(a.dtype).name, tuple(a.shape)) for key, a in weights.items()}
    check_weights(graph, given, "given to save()")
    try:
        text = json.dumps(document, indent=1, allow_nan=False) + "\n"
    except (TypeError, ValueError, RecursionError) as exc:
        raise GraphFormatError(f"{path / GRAPH_FILE}: the document cannot be written as JSON: {exc}") from None
    _check_replaceable(path, path)
    backup = backup_path(path)
    _check_replaceable(backup, path)
    dtypes = {w.key: w.dtype for w in graph.weights}
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_trash(path)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a graph is an ordinary directory
        with open(tmp / GRAPH_FILE, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        write_safetensors(tmp / WEIGHTS_FILE, {w.key: weights[w.key] for w in graph.weights}, dtypes)
        _fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap(tmp, path, backup)
    return path


def _swap(new: Path, path: Path, backup: Path) -> None:
    """Move the complete graph ``new`` to ``path``; at every instant :func:`current_path` names a
    complete graph: the old one (at ``path``, then at ``backup``), then the new one at ``path``."""
    moved_aside = False
    try:
        if os.path.lexists(path):
            if os.path.lexists(backup):
                _discard(backup, path)  # left by a save killed after its swap: ``path`` is newer and complete
            os.rename(path, backup)
            moved_aside = True
        os.rename(new, path)
    except BaseException:
        try:
            if moved_aside and not os.path.lexists(path):
                os.rename(backup, path)
        finally:
            shutil.rmtree(new, ignore_errors=True)
        raise
    _fsync_dir(path.parent)
    if os.path.lexists(backup):
        _discard(backup, path)


def _discard(directory: Path, path: Path) -> None:
    """Delete an old graph: renamed to a trash name first, so that ``directory`` is never half-deleted."""
    trash = tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".trash", dir=path.parent)
    os.rename(directory, trash)
    shutil.rmtree(trash, ignore_errors=True)


def _remove_trash(path: Path) -> None:
    """Delete what a save killed while discarding an old graph left (``.name.XXXX.trash``)."""
    pattern = re.compile(re.escape(f".{path.name}.") + r"[a-z0-9_]{8}\.trash")  # tempfile.mkdtemp's names
    for entry in path.parent.iterdir():
        if pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return  # a platform that cannot open a directory: durability of the rename is the OS's
    try:
        os.fsync(fd)
    except OSError:
        pass  # some file systems cannot sync a directory; the renames are still atomic
    finally:
        os.close(fd)


def _check_replaceable(target: Path, path: Path) -> None:
    """An ExportError unless ``target`` is absent, an empty directory or an NBX graph directory."""
    if not os.path.lexists(target):
        return
    fix = (
        f"nothing was written. Save to another path, or move or delete {target} yourself if it is meant to be replaced"
    )
    if target.is_symlink() or not target.is_dir():
        what = "a symbolic link" if target.is_symlink() else "not a directory"
        raise ExportError(f"{path}: cannot save the graph there: {target} exists and is {what}; {fix}")
    try:
        entries = sorted(entry.name for entry in target.iterdir())
    except OSError as exc:
        raise ExportError(f"{path}: cannot save the graph there: cannot list {target}: {exc}; {fix}") from None
    # A graph's kernel bundle goes with it: it was built for the graph being replaced.
    if not entries or (set(entries) <= {GRAPH_FILE, WEIGHTS_FILE, KERNELS_DIR} and is_graph_file(target / GRAPH_FILE)):
        return
    shown = ", ".join(entries[:5]) + (f" and {len(entries) - 5} more" if len(entries) > 5 else "")
    raise ExportError(
        f"{path}: cannot save the graph there: {target} is a directory that is not an NBX graph (it "
        f"holds {shown}), and saving would delete it; {fix}"
    )
