"""Launch parameters as data: what a kernel may tune, how it looks them up, and the tables it reads.

A kernel declares a :class:`Tunable`: its parameters (tile sizes, warps, pipeline stages, split
factors), the key it looks them up by (its dtype, shape buckets, layout: a :class:`Key`), and two
rules in code, one for GPUs and one for Triton's interpreter. A lookup on a GPU reads, in order:

1. the user cache, ``$NBX_CACHE_DIR/tuning/<plugin>.json`` (default ``~/.cache/nbx``), which
   ``nbx tune`` writes: the entries under the GPU's architecture (``sm_90``);
2. the plugin's table for that architecture: the file of the kernel's ``configs/`` folder whose
   ``"arch"`` names it (``h200.json`` says ``sm_90``);
3. the kernel's rule.

In 1 and 2 a key's full text comes first, then its text without the key's optional fields; a table
also holds ``rules``, tried in order after its exact keys. On the interpreter (the cpu backend) only
the interpreter rule applies: the tables describe GPUs. Every launcher also takes ``config=``, a
configuration that replaces the lookup (benchmarks and tests pass candidates that way).

A table file::

    {"about": "...", "arch": "sm_90",
     "kernels": {"gemm": {"shapes": {"f16:M4096:N4096:K4096": {"config": {...}, "source": "..."}},
                          "rules": [{"when": {"dtype": "f16", "max_M": 16}, "config": {...}, "source": "..."}]}}}

``source`` names the results file that justifies the entry (required in shipped tables). ``when``
holds key fields that must be equal and ``max_<field>``/``min_<field>`` bounds on integer fields.
The user cache holds ``{arch: {kernel: {key: {"config": {...}, "source": "..."}}}}``. A malformed
entry raises an NbxValueError naming the kernel, the key and the file. This module imports no Triton
except to read the architecture of the cuda backend's GPU.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from .. import backend as _backend
from ..errors import BackendError, NbxValueError

Config = dict[str, int]
KINDS = ("pow2", "count", "count0", "flag")
"""Parameter kinds: a power of two; an integer of at least 1; of at least 0; 0 or 1."""

_KIND_TEXT = {
    "pow2": "a power of two",
    "count": "an integer of at least 1",
    "count0": "an integer of at least 0",
    "flag": "0 or 1",
}


def bucket(n: int, least: int = 1) -> int:
    """``n`` rounded up to a power of two, and at least ``least``: the shape buckets of keys."""
    return max(least, 1 << max(n - 1, 0).bit_length())


def cache_root() -> Path:
    """NBX's cache directory: ``$NBX_CACHE_DIR``, default ``~/.cache/nbx``."""
    return Path(os.environ.get("NBX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "nbx"))


def cache_path(plugin: str) -> Path:
    """The user cache of ``plugin``'s tunables: ``$NBX_CACHE_DIR/tuning/<plugin>.json``."""
    return cache_root() / "tuning" / f"{plugin}.json"


_arch: list[str | None] = []


def arch() -> str | None:
    """The architecture the tables are read for: the cuda backend's GPU (``sm_90`` on an H100 or
    H200), the aot backend's target, or None on the interpreter."""
    if not _arch:
        kind = _backend.current()
        if kind == "cpu":
            _arch.append(None)
        elif kind == "aot":
            _arch.append(f"sm_{_backend.aot_target()[0]}")
        else:
            from triton.runtime import driver

            _arch.append(f"sm_{driver.active.get_current_target().arch}")
    return _arch[0]


class Key:
    """A lookup key: named fields in order, each a string (a dtype, a layout) or an int (a shape
    bucket). Its text joins them with ``:``, an int after its field's name (``f16:M4096:N4096:K4096:NT``
    for fields dtype, M, N, K, layout); fields named ``optional`` may be left out, so that a table
    entry without them serves every value of them."""

    __slots__ = ("fields", "optional")

    def __init__(self, fields: Mapping[str, str | int], optional: Iterable[str] = ()) -> None:
        self.fields = dict(fields)
        self.optional = tuple(optional)

    def text(self, full: bool = True) -> str:
        """The key's text; without ``full``, without its optional fields."""
        return ":".join(
            v if isinstance(v, str) else f"{k}{v}" for k, v in self.fields.items() if full or k not in self.optional
        )

    def texts(self) -> tuple[str, ...]:
        """The texts a table is searched for, most specific first."""
        return (self.text(), self.text(False)) if self.optional else (self.text(),)

    def matches(self, when: Any) -> bool | str:
        """Whether a rule's ``when`` holds for this key, or why it is malformed (a string)."""
        if not isinstance(when, dict):
            return "'when' must be a JSON object"
        for name, want in when.items():
            bound, _, field = name.partition("_") if name[:4] in ("max_", "min_") else ("", "", name)
            if field not in self.fields:
                return f"'when' names {name!r}, not a field of the key ({', '.join(self.fields)})"
            have = self.fields[field]
            if bound:
                if isinstance(have, str) or isinstance(want, bool) or not isinstance(want, int):
                    return f"'when' bound {name!r} needs an integer field and an integer bound"
                if have > want if bound == "max" else have < want:
                    return False
            elif have != want:
                return False
        return True

    def __repr__(self) -> str:
        return f"Key({self.text()!r})"


class _Files:
    """Parsed JSON files, read once; the user cache is re-read after :func:`reload`."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.tables: dict[Path, dict[str, tuple[Path, dict[str, Any]]]] = {}
        self.caches: dict[Path, dict[str, Any]] = {}

    def table(self, folder: Path, want: str, plugin: str) -> tuple[Path, dict[str, Any]] | None:
        """The table of ``folder`` whose ``arch`` is ``want``."""
        if folder not in self.tables:
            found: dict[str, tuple[Path, dict[str, Any]]] = {}
            for path in sorted(folder.glob("*.json")):
                data = _read(path, f"{plugin}'s tuning table")
                if not isinstance(data.get("arch"), str) or not isinstance(data.get("kernels"), dict):
                    raise NbxValueError(
                        f'tuning table {path}: needs "arch" (e.g. "sm_90") and "kernels" '
                        "(kernel name -> shapes and rules); fix the file or reinstall the plugin"
                    )
                if data["arch"] in found:
                    raise NbxValueError(
                        f"tuning tables {found[data['arch']][0]} and {path} are both for {data['arch']}: keep one"
                    )
                found[data["arch"]] = (path, data)
            self.tables[folder] = found
        return self.tables[folder].get(want)

    def cache(self, path: Path) -> dict[str, Any]:
        if path not in self.caches:
            self.caches[path] = _read(path, "tuning cache") if path.exists() else {}
        return self.caches[path]


_files = _Files()
_tunables: dict[tuple[str, str], Tunable] = {}
_MEMO_LIMIT = 4096


def _read(path: Path, what: str) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise NbxValueError(f"{what} {path} cannot be read ({exc}): fix or delete the file") from exc
    if not isinstance(data, dict):
        raise NbxValueError(f"{what} {path} must hold a JSON object: fix or delete the file")
    return data


def reload() -> None:
    """Forget the files read and the lookups made: the next lookup reads the user cache again
    (after ``NBX_CACHE_DIR`` changed, or another process wrote it)."""
    with _files.lock:
        _files.caches.clear()
        _files.tables.clear()
        for tunable in _tunables.values():
            tunable._memo.clear()


def tunables(plugin: str | None = None) -> list[Tunable]:
    """The tunables declared so far (by the kernel modules imported), of ``plugin`` or all."""
    return [t for t in _tunables.values() if plugin is None or t.plugin == plugin]


class Tunable:
    """The tunable launch parameters of one kernel, and how a launch finds them.

    ``params`` maps each parameter to its kind (:data:`KINDS`); those in ``optional`` may be absent
    from a configuration (the kernel reads its default). ``key(*args)`` is the lookup key of a launch
    described by ``args``, ``rule(*args)`` its configuration on a GPU where no table has an entry and
    ``interpreter(*args)`` on the interpreter. ``check(config)`` returns why a well-typed
    configuration is still unusable, or None. ``tables`` is the folder of the plugin's tables.
    """

    def __init__(
        self,
        plugin: str,
        name: str,
        params: Mapping[str, str],
        *,
        key: Callable[..., Key],
        rule: Callable[..., Config],
        interpreter: Callable[..., Config],
        tables: Path | None = None,
        optional: Iterable[str] = (),
        check: Callable[[Config], str | None] | None = None,
    ) -> None:
        bad = {p: k for p, k in params.items() if k not in KINDS}
        if bad:
            raise NbxValueError(f"tunable {plugin}.{name}: parameter kinds {bad} are not among {KINDS}")
        self.plugin, self.name = plugin, name
        self.params = dict(params)
        self.optional = frozenset(optional)
        self.key, self.rule, self.interpreter = key, rule, interpreter
        self.tables, self._check = tables, check
        self._memo: dict[tuple, Config] = {}
        _tunables[(plugin, name)] = self

    def __repr__(self) -> str:
        return f"Tunable({self.plugin}.{self.name})"

    # -- checking ---------------------------------------------------------------------------------
    def check(self, config: Any, where: str) -> Config:
        """A copy of ``config`` if it is a well-formed configuration, else an NbxValueError that
        names ``where`` it came from."""

        def bad(why: str) -> NbxValueError:
            return NbxValueError(
                f"{self.plugin}.{self.name} configuration {where}: {why}; fix or delete the "
                f"entry (`nbx tune --family {self.plugin}` writes well-formed ones), got {config!r}"
            )

        if not isinstance(config, dict):
            raise bad("must be a JSON object")
        missing = [p for p in self.params if p not in config and p not in self.optional]
        extra = sorted(set(config) - set(self.params))
        if missing or extra:
            raise bad(f"missing {missing}" if missing else f"unknown keys {extra}")
        for name, value in config.items():
            kind = self.params[name]
            if isinstance(value, bool) or not isinstance(value, int):
                raise bad(f"{name} must be an integer")
            if (
                (kind == "pow2" and (value < 1 or value & (value - 1)))
                or (kind == "count" and value < 1)
                or (kind == "count0" and value < 0)
                or (kind == "flag" and value not in (0, 1))
            ):
                raise bad(f"{name} must be {_KIND_TEXT[kind]}")
        why = self._check(config) if self._check else None
        if why:
            raise bad(why)
        return dict(config)

    def choose(self, config: Mapping[str, int] | None, *args: Any, skip: tuple[str, ...] = ()) -> Config:
        """``config`` when given (checked: a launcher's ``config=``), else :meth:`lookup`."""
        if config is not None:
            return self.check(
                dict(config) if isinstance(config, Mapping) else config, f"passed as config= to {self.name}"
            )
        return self.lookup(*args, skip=skip)

    # -- lookup -----------------------------------------------------------------------------------
    def lookup(self, *args: Any, skip: tuple[str, ...] = ()) -> Config:
        """The configuration of a launch described by ``args`` on this process's backend. Entries
        that set any parameter in ``skip`` are passed over (for a variant that does not apply)."""
        memo = (args, skip)
        found = self._memo.get(memo)
        if found is None:
            found = self.resolve(*args, target=arch(), skip=skip)[0]
            if len(self._memo) >= _MEMO_LIMIT:  # a process that sees endless shapes stays bounded
                self._memo.clear()
            self._memo[memo] = found
        return dict(found)

    def resolve(self, *args: Any, target: str | None, skip: tuple[str, ...] = ()) -> tuple[Config, str]:
        """(configuration, where it came from) of a launch described by ``args`` for architecture
        ``target`` (None: the interpreter); no memo, for tests and ``nbx tune``."""
        if target is None:
            return self.check(self.interpreter(*args), "of the interpreter rule"), "interpreter rule"
        key = self.key(*args)
        path = cache_path(self.plugin)
        with _files.lock:
            cached = _files.cache(path).get(target, {})
            table = _files.table(self.tables, target, self.plugin) if self.tables else None
        if not isinstance(cached, dict):
            raise NbxValueError(
                f"tuning cache {path}: the entry of {target!r} must be a JSON object: fix or delete the file"
            )
        found = self._exact(cached.get(self.name, {}), key, path, skip, needs_source=False)
        if found:
            return found
        if table is not None:
            file, data = table
            tables = data["kernels"].get(self.name, {})
            found = self._exact(tables.get("shapes", {}), key, file, skip, needs_source=True)
            if found:
                return found
            for i, entry in enumerate(tables.get("rules", [])):
                where = f"rule {i} in {file}"
                config = self._entry(entry, where, True)
                hit = key.matches(entry.get("when", {}))
                if isinstance(hit, str):
                    raise NbxValueError(f"{self.plugin}.{self.name} {where}: {hit}; fix the rule")
                if hit and not any(config.get(p) for p in skip):
                    return config, where
        return self.check(self.rule(*args), "of its rule"), "rule"

    def _exact(
        self, shapes: Any, key: Key, file: Path, skip: tuple[str, ...], needs_source: bool
    ) -> tuple[Config, str] | None:
        if not isinstance(shapes, dict):
            raise NbxValueError(
                f"{self.plugin}.{self.name} entries in {file} must be a JSON object of key -> entry: fix or delete them"
            )
        for text in key.texts():
            if text in shapes:
                where = f"{text!r} in {file}"
                config = self._entry(shapes[text], where, needs_source)
                if not any(config.get(p) for p in skip):
                    return config, where
        return None

    def _entry(self, entry: Any, where: str, needs_source: bool) -> Config:
        if not isinstance(entry, dict) or "config" not in entry:
            raise NbxValueError(
                f'{self.plugin}.{self.name} entry {where}: must be a JSON object with "config" '
                f'and "source"; fix or delete the entry, got {entry!r}'
            )
        if needs_source and not isinstance(entry.get("source"), str):
            raise NbxValueError(
                f'{self.plugin}.{self.name} entry {where}: needs "source", the results file that justifies it'
            )
        return self.check(entry["config"], where)

    # -- writing ----------------------------------------------------------------------------------
    def remember(self, key: Key, config: Mapping[str, int], source: str, target: str | None = None) -> Path:
        """Store ``config`` for ``key`` in the user cache (an atomic write), under ``target`` (default:
        this process's architecture); returns the file. Later lookups here and in new processes read it."""
        target = target or arch()
        if target is None:
            raise BackendError(
                f"{self.plugin}.{self.name}: tuning needs a GPU (the cuda backend); the interpreter reads no tables"
            )
        config = self.check(dict(config), f"for {key.text()!r}")
        path = cache_path(self.plugin)
        with _files.lock:
            data = _files.cache(path)
            data.setdefault(target, {}).setdefault(self.name, {})[key.text()] = {"config": config, "source": source}
            write_json(path, data)
            for tunable in _tunables.values():
                if tunable.plugin == self.plugin:
                    tunable._memo.clear()
        return path


def row_tunable(
    plugin: str, name: str, rule: Callable[[str, int, int], Config], interpreter: Config, tables: Path
) -> Tunable:
    """The launch of a kernel over rows (a normalisation, softmax): ``TILE``, the elements a program
    takes when rows are short (several rows share it), and ``num_warps``, keyed by the dtype and the
    row length's bucket. Lookup arguments: the input's dtype name, the row length and the kernel's
    block (the row rounded up to a power of two, or the chunk of a long row); ``interpreter`` is the
    configuration on the interpreter."""
    return Tunable(
        plugin,
        name,
        {"TILE": "pow2", "num_warps": "pow2"},
        key=lambda dtype, n, block: Key({"dtype": dtype, "N": bucket(n)}),
        rule=rule,
        interpreter=lambda dtype, n, block: dict(interpreter),
        tables=tables,
    )


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` to ``path`` as JSON, atomically (a reader sees the old file or the new one)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def table_text(data: Mapping[str, Any]) -> str:
    """A table file's text: its fields, then each kernel's entries one to a line (readable diffs)."""
    lines = ["{"]
    for name, value in data.items():
        if name != "kernels":
            lines.append(f" {json.dumps(name)}: {json.dumps(value)},")
    lines.append(' "kernels": {')
    kernels = list(data.get("kernels", {}).items())
    for i, (kernel, parts) in enumerate(kernels):
        lines.append(f"  {json.dumps(kernel)}: {{")
        sections = [(k, v) for k, v in parts.items() if k in ("shapes", "rules")]
        for j, (section, entries) in enumerate(sections):
            items = list(entries.items()) if section == "shapes" else list(enumerate(entries))
            lines.append(f"   {json.dumps(section)}: " + ("{" if section == "shapes" else "["))
            for k, (key, entry) in enumerate(items):
                head = f"{json.dumps(key)}: " if section == "shapes" else ""
                lines.append(f"    {head}{json.dumps(entry)}" + ("," if k < len(items) - 1 else ""))
            lines.append("   " + ("}" if section == "shapes" else "]") + ("," if j < len(sections) - 1 else ""))
        lines.append("  }" + ("," if i < len(kernels) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def frozen(config: Mapping[str, int] | None) -> tuple | None:
    """A hashable form of a ``config=`` argument, for the plan caches that key on it."""
    return None if config is None else tuple(sorted(config.items()))
