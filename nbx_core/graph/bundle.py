"""A graph's kernel bundle: the kernels ``nbx compile`` built for a target, beside graph.json.

::

    model.nbx/
      graph.json, weights.safetensors
      kernels/sm_90/
        index.json                         what is here, and a checksum of every file
        <hash>/<kernel>.cubin              the binary of one compiled variant
        <hash>/<kernel>.json               Triton's launch metadata for it

``<hash>`` is Triton's cache key of the variant (:mod:`nbx_core.runtime.prebuilt`). The bundle is
data: JSON and binaries for the GPU, never Python code or pickles. :func:`read` checks the index
(its schema and its own checksum) and every file's size and SHA-256, so a corrupt, truncated or
edited bundle is a :class:`~nbx_core.errors.BundleError` before anything of it is used;
:func:`write` replaces one target's directory atomically. The format is described in
docs/bundles.md. Nothing here imports Triton (``nbx registry check`` reads bundles).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import BundleError, GraphInputError
from ..version import __version__
from .format import GRAPH_FILE, KERNELS_DIR, Graph, current_path
from .writer import _fsync_dir, _remove_trash, _swap

FORMAT = "nbx-kernels"
VERSION = 1
INDEX_FILE = "index.json"

_TARGET = re.compile(r"sm_[0-9]{2,3}")
_HASH = re.compile(r"[0-9a-f]{64}")
_FILE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,149}\.(json|cubin)")  # Triton's names: kernel name + extension
_KEYS = {"format", "version", "target", "triton", "nbx", "graph_sha256", "signatures", "kernels", "checksum"}


@dataclass(frozen=True)
class Kernel:
    """One compiled variant in a bundle: its index entry and its files (Triton's name -> path)."""

    hash: str
    entry: Mapping[str, Any]
    files: Mapping[str, Path]


@dataclass(frozen=True)
class Bundle:
    """A verified ``kernels/<target>/`` of a graph."""

    path: Path
    target: str
    triton: str
    nbx: str
    graph_sha256: str
    signatures: tuple[Mapping[str, Any], ...]
    kernels: Mapping[str, Kernel]
    bytes: int

    def groups(self) -> dict[str, dict[str, str]]:
        """Each variant's files as Triton's cache groups them: hash -> file name -> path."""
        return {k.hash: {name: str(p) for name, p in k.files.items()} for k in self.kernels.values()}


def signatures(graph: Graph, sizes: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination of the symbolic dims' sizes: those in ``sizes``, the exported example size
    for the others, in the order given. Raises GraphInputError for a dim the graph does not declare,
    a size outside its exported range, or a dim with neither."""
    dims = {name: symbol for name, symbol in graph.symbols.items() if symbol.source is None}  # not read from data
    unknown = sorted(set(sizes) - set(dims))
    if unknown:
        declared = ", ".join(dims) or "none"
        raise GraphInputError(
            f"{graph.file}: no symbolic dim named {', '.join(unknown)} (the graph declares: {declared})"
        )
    choices = []
    for name, symbol in dims.items():
        values = list(sizes.get(name, ()))
        if not values:
            if symbol.example is None:
                raise GraphInputError(
                    f"{graph.file}: symbolic dim {name} has no exported example size: give its "
                    f"sizes with --dim {name}=SIZE,..."
                )
            values = [symbol.example]
        for value in values:
            if not symbol.admits(value):
                raise GraphInputError(
                    f"{graph.file}: {name}={value} lies outside the exported range {symbol.range_text}"
                )
        choices.append([(name, v) for v in dict.fromkeys(values)])
    return [dict(combo) for combo in itertools.product(*choices)]


def signature_record(graph: Graph, dims: dict[str, int]) -> dict[str, Any]:
    """How a bundle's index lists a signature: the dims and each input's dtype and shape."""
    return {
        "dims": dict(dims),
        "inputs": [
            {"name": s.name, "dtype": s.dtype, "shape": [d if isinstance(d, int) else d(dims) for d in s.shape]}
            for s in graph.inputs
        ],
    }


def graph_sha256(graph_dir: Path) -> str:
    """SHA-256 of the graph.json a bundle was built for."""
    return hashlib.sha256((graph_dir / GRAPH_FILE).read_bytes()).hexdigest()


def targets(graph_dir: str | Path) -> list[str]:
    """The targets ``graph_dir`` holds a bundle directory for, sorted."""
    root = Path(graph_dir) / KERNELS_DIR
    if not root.is_dir():
        return []
    return sorted(entry.name for entry in root.iterdir() if _TARGET.fullmatch(entry.name) and entry.is_dir())


def has_bundle(graph_dir: str | Path) -> bool:
    """Whether ``graph_dir`` has a ``kernels/`` directory (a bundle, possibly broken)."""
    return os.path.lexists(Path(graph_dir) / KERNELS_DIR)


def read(graph_dir: str | Path, target: str) -> Bundle | None:
    """The bundle of ``graph_dir`` for ``target``, verified; None when there is none for that target.

    Raises BundleError, naming the file and the fix, when the index is not a bundle index of this
    format, when it was edited (its checksum), or when a file it lists is missing, of another size
    (truncated) or of other content.
    """
    graph_dir = Path(graph_dir)
    directory = current_path(graph_dir / KERNELS_DIR / target)
    index_path = directory / INDEX_FILE
    if not directory.is_dir():
        return None
    fix = (
        f"run nbx compile {graph_dir} --target {target} again, or delete {directory} to run without it (its "
        "kernels then compile at run time)"
    )
    try:
        raw = index_path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{index_path}: cannot read the bundle's index ({exc.strerror or exc}); {fix}") from None
    document = _parse_index(raw, index_path, target, fix)
    kernels: dict[str, Kernel] = {}
    total = len(raw)
    for entry in document["kernels"]:
        files = {}
        for name, record in entry["files"].items():
            path = directory / entry["hash"] / name
            files[name] = path
            total += _check_file(path, record, fix)
        kernels[entry["hash"]] = Kernel(entry["hash"], entry, files)
    return Bundle(
        directory,
        target,
        document["triton"],
        document["nbx"],
        document["graph_sha256"],
        tuple(document["signatures"]),
        kernels,
        total,
    )


def _parse_index(raw: bytes, index_path: Path, target: str, fix: str) -> dict[str, Any]:
    def bad(why: str) -> BundleError:
        return BundleError(f"{index_path}: corrupt bundle index: {why}; {fix}")

    try:
        document = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise bad(f"not JSON ({exc})") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise bad(f"its format is not {FORMAT!r}")
    if document.get("version") != VERSION:
        raise bad(f"version {document.get('version')!r}, this NBX reads version {VERSION}")
    if set(document) != _KEYS:
        raise bad(f"its keys are {sorted(document)}, expected {sorted(_KEYS)}")
    if document.get("checksum") != checksum(document):
        raise bad("its checksum does not match its content (the index was edited or damaged)")
    if document["target"] != target:
        raise bad(f"it describes target {document['target']!r} but lies in the directory of {target!r}")
    for key in ("triton", "nbx", "graph_sha256"):
        if not isinstance(document[key], str):
            raise bad(f"{key!r} is not a string")
    if not isinstance(document["signatures"], list) or not isinstance(document["kernels"], list):
        raise bad("'signatures' and 'kernels' must be lists")
    seen = set()
    for entry in document["kernels"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("hash"), str) or not _HASH.fullmatch(entry["hash"]):
            raise bad("a kernel entry has no valid 'hash' (64 lowercase hex digits)")
        if entry["hash"] in seen:
            raise bad(f"kernel {entry['hash']} is listed twice")
        seen.add(entry["hash"])
        files = entry.get("files")
        if not isinstance(files, dict) or sorted(n.rsplit(".", 1)[-1] for n in files) != ["cubin", "json"]:
            raise bad(f"kernel {entry['hash']}: 'files' must name one .cubin and one .json file")
        for name, record in files.items():
            if (
                not _FILE.fullmatch(name)
                or not isinstance(record, dict)
                or set(record) != {"bytes", "sha256"}
                or not isinstance(record["bytes"], int)
                or not isinstance(record["sha256"], str)
            ):
                raise bad(f"kernel {entry['hash']}: file entry {name!r} is malformed")
    return document


def _check_file(path: Path, record: Mapping[str, Any], fix: str) -> int:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BundleError(f"{path}: a file of the bundle cannot be read ({exc.strerror or exc}); {fix}") from None
    if len(data) != record["bytes"]:
        raise BundleError(
            f"{path}: {len(data)} bytes where the bundle's index lists {record['bytes']} (truncated or replaced); {fix}"
        )
    if hashlib.sha256(data).hexdigest() != record["sha256"]:
        raise BundleError(
            f"{path}: its content does not match the bundle's index (SHA-256 differs: the file was "
            f"modified or damaged); {fix}"
        )
    return len(data)


def checksum(document: Mapping[str, Any]) -> str:
    """SHA-256 of an index's content without its ``checksum`` (sorted keys, compact separators)."""
    body = {k: v for k, v in document.items() if k != "checksum"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write(
    graph_dir: str | Path,
    target: str,
    triton: str,
    records: Sequence[Mapping[str, Any]],
    kernels: Mapping[str, tuple[Mapping[str, Any], Mapping[str, str | Path]]],
) -> Bundle:
    """Write ``graph_dir``'s bundle for ``target``, replacing the one there atomically, and return it
    as :func:`read` returns it.

    ``records`` lists the signatures compiled (:func:`signature_record`); ``kernels`` maps each
    variant's hash to its index entry (what it was compiled from) and its files (Triton's name ->
    where the file is now). The output depends on nothing else: entries and keys are sorted, and
    nothing records a time or a path, so compiling twice writes the same bytes.
    """
    graph_dir = Path(graph_dir)
    if not _TARGET.fullmatch(target):
        raise BundleError(f"{graph_dir}: target {target!r} is not of the form sm_NN (sm_90)")
    root = graph_dir / KERNELS_DIR
    root.mkdir(exist_ok=True)
    final = root / target
    _remove_trash(final)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target}.", suffix=".tmp", dir=root))
    try:
        entries = []
        for digest in sorted(kernels):
            entry, files = kernels[digest]
            (tmp / digest).mkdir()
            stored = {}
            for name in sorted(files):
                data = Path(files[name]).read_bytes()
                _write_file(tmp / digest / name, data)
                stored[name] = {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
            entries.append({**entry, "hash": digest, "files": stored})
        document: dict[str, Any] = {
            "format": FORMAT,
            "version": VERSION,
            "target": target,
            "triton": triton,
            "nbx": __version__,
            "graph_sha256": graph_sha256(graph_dir),
            "signatures": list(records),
            "kernels": entries,
        }
        document["checksum"] = checksum(document)
        _write_file(tmp / INDEX_FILE, (json.dumps(document, indent=1, sort_keys=True) + "\n").encode())
        for digest in kernels:
            _fsync_dir(tmp / digest)
        _fsync_dir(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    _swap(tmp, final, final.with_name(f".{target}.old"))
    written = read(graph_dir, target)
    assert written is not None
    return written


def _write_file(path: Path, data: bytes) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def summary(graph_dir: str | Path) -> list[dict[str, Any]]:
    """Each target's bundle of ``graph_dir``, for ``nbx registry check``: target, Triton and NBX
    versions, signatures, kernel count and bytes, and ``problem`` (why it cannot be used, or None)."""
    graph_dir = current_path(Path(graph_dir))
    rows: list[dict[str, Any]] = []
    for target in targets(graph_dir):
        try:
            bundle = read(graph_dir, target)
        except BundleError as exc:
            rows.append({"target": target, "problem": str(exc)})
            continue
        if bundle is None:
            continue
        problem = None
        if bundle.graph_sha256 != graph_sha256(graph_dir):
            problem = f"built for another version of {GRAPH_FILE}: run nbx compile {graph_dir} --target {target} again"
        rows.append(
            {
                "target": target,
                "triton": bundle.triton,
                "nbx": bundle.nbx,
                "signatures": [dict(s) for s in bundle.signatures],
                "kernels": len(bundle.kernels),
                "bytes": bundle.bytes,
                "problem": problem,
            }
        )
    return rows
