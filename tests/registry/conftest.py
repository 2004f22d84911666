"""Fixtures for the registry tests.

Plugins here are real distributions: a directory holding ``<name>.dist-info/`` (METADATA and
entry_points.txt) next to the package, which importlib.metadata reads like any installed one. Each
test writes its own into a temporary directory, so tests are independent under pytest-xdist and
the environment is left as it was. The example acme-kernels is installed for real, with pip, into
a temporary ``--target`` directory once per worker.

``Site.add_core()`` writes a stand-in nbx-core distribution: placed first on the path, it shadows
the installed nbx-core's metadata, so these tests do not depend on nbx-core's own ops.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from nbx_core.registry import reset_registry

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "third_party_plugin"
NBX_VARIABLES = ("NBX_DISABLE_PLUGINS", "NBX_DISABLE_PLUGIN_AUTOLOAD", "NBX_PLUGINS", "NBX_PREFER")

CORE_PLUGIN_SOURCE = """
from nbx_core import hookimpl

@hookimpl
def nbx_register_kernels(registry):
    registry.register_module("fake_core.ops", ["aten::view", "aten::clone"])
"""
CORE_OPS_SOURCE = """
def view(self, size):
    return ("view", self, size)

def clone(self):
    return ("clone", self)
"""


def plugin_source(module: str, names: list[str]) -> str:
    """A plugin module registering ``names`` onto functions of ``module``."""
    return textwrap.dedent(f"""
        from nbx_core import hookimpl

        @hookimpl
        def nbx_register_kernels(registry):
            registry.register_module({module!r}, {names!r})
    """)


@dataclass
class Site:
    """A directory of distributions, first on sys.path for this test."""

    root: Path
    packages: set[str] = field(default_factory=set)

    def add_dist(
        self,
        name: str,
        version: str,
        plugins: dict[str, str],
        modules: dict[str, str],
        opt_in: dict[str, str] | None = None,
    ) -> None:
        """Write distribution ``name`` declaring ``plugins`` and ``opt_in`` plugins (entry name →
        value) and the ``modules`` (dotted name → source) it ships."""
        for dotted, source in modules.items():
            parts = dotted.split(".")
            self.packages.add(parts[0])
            for depth in range(1, len(parts)):
                package = self.root.joinpath(*parts[:depth])
                package.mkdir(parents=True, exist_ok=True)
                (package / "__init__.py").touch()
            self.root.joinpath(*parts[:-1], f"{parts[-1]}.py").write_text(textwrap.dedent(source))
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        groups = {"nbx.plugins": plugins, "nbx.plugins.opt_in": opt_in or {}}
        (info / "entry_points.txt").write_text(
            "".join(
                f"[{group}]\n" + "".join(f"{plugin} = {value}\n" for plugin, value in entries.items())
                for group, entries in groups.items()
                if entries
            )
        )

    def add_plugin(self, dist: str, version: str, plugin: str, names: list[str], opt_in: bool = False) -> None:
        """A distribution with one plugin (an opt-in one if ``opt_in``) registering ``names`` onto
        ``<package>.ops``."""
        package = dist.replace("-", "_")
        functions = {n.split("::")[1].split(".")[0]: n for n in names}
        ops = "".join(f"def {f}(*args):\n    return {n!r}, args\n" for f, n in functions.items())
        declared = {plugin: f"{package}.plugin"}
        self.add_dist(
            dist,
            version,
            {} if opt_in else declared,
            {f"{package}.plugin": plugin_source(f"{package}.ops", names), f"{package}.ops": ops},
            opt_in=declared if opt_in else None,
        )

    def add_core(self) -> None:
        self.add_dist(
            "nbx-core",
            "0.1.0",
            {"core": "fake_core.plugin"},
            {"fake_core.plugin": CORE_PLUGIN_SOURCE, "fake_core.ops": CORE_OPS_SOURCE},
        )


@pytest.fixture(autouse=True)
def clean_state(monkeypatch: pytest.MonkeyPatch):
    """No NBX_* variable from the caller's shell, and a fresh default registry before and after
    (another test in this worker may have loaded the installed plugins into it)."""
    for name in NBX_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    reset_registry()
    yield
    reset_registry()


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """An empty :class:`Site`; the modules it shipped are forgotten afterwards."""
    root = tmp_path / "site"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    made = Site(root)
    yield made
    for module in [m for m in sys.modules if m.split(".")[0] in made.packages]:
        del sys.modules[module]


@pytest.fixture(scope="session")
def acme_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """examples/third_party_plugin pip-installed into a private directory (a copy is built, so
    the build leaves nothing in the checkout)."""
    work = tmp_path_factory.mktemp("acme")
    source = work / "src"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("*.egg-info", "build", "__pycache__"))
    target = work / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--disable-pip-version-check",
            "--root-user-action=ignore",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    return target


@pytest.fixture
def acme(acme_dir: Path, monkeypatch: pytest.MonkeyPatch):
    """acme-kernels importable and discoverable for this test."""
    monkeypatch.syspath_prepend(str(acme_dir))
    yield acme_dir
    for module in [m for m in sys.modules if m.split(".")[0] == "acme_kernels"]:
        del sys.modules[module]


def _run_nbx(*args: str, path: Sequence[Path] = (), env: dict[str, str] | None = None) -> CompletedProcess:
    """``nbx ARGS`` in a fresh interpreter whose path starts with ``path``, then this checkout."""
    environ = {k: v for k, v in os.environ.items() if k not in NBX_VARIABLES and k != "PYTHONPATH"}
    environ["PYTHONPATH"] = os.pathsep.join([*map(str, path), str(REPO)])
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", "import sys; from nbx_core.cli import main; sys.exit(main())", *args],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )


@pytest.fixture
def run_nbx():
    """Runs ``nbx`` in a subprocess: ``run_nbx(*args, path=[...], env={...})``."""
    return _run_nbx
