"""``nbx registry ...`` and the ``nbx run`` slot, run in-process on a temporary site."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import types

import pytest

from nbx_core import __version__
from nbx_core.cli import main, registry_options
from nbx_core.registry import get_registry

SELECT = ["--no-autoload", "--plugins", "acme,other"]  # ignore any other plugin installed here
PREFER = ["--prefer", "aten::relu=acme"]
ENTRY_KEYS = {
    "name",
    "namespace",
    "op",
    "overload",
    "plugin",
    "distribution",
    "version",
    "target",
    "preferred",
    "status",
}
OURS = ("core", "acme", "other")  # the plugins of this site; listings also show those installed here


@pytest.fixture(autouse=True)
def plugins(site):
    """core (aten::view, aten::clone), acme and other, which collide on aten::relu."""
    site.add_core()
    site.add_plugin("acme-kernels", "0.1.0", "acme", ["acme::fused_rope", "aten::relu"])
    site.add_plugin("other-kernels", "1.0", "other", ["aten::relu", "aten::gelu.default"])


@pytest.fixture
def nbx(capsys):
    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def fake_module(monkeypatch, name: str, **attributes) -> None:
    module = types.ModuleType(name)
    module.__dict__.update(attributes)
    monkeypatch.setitem(sys.modules, name, module)


# -- nbx registry list -----------------------------------------------------------------------------


def test_list_prints_a_table_and_reports_duplicates_on_stderr(nbx):
    code, out, err = nbx("registry", "list", *SELECT)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["op", "plugin", "note", "target"]
    rows = [line.split() for line in lines[1:]]
    assert ["aten::gelu.default", "other", "other_kernels.ops:gelu"] in rows
    assert ["aten::view", "core", "fake_core.ops:view"] in rows
    assert [r[2] for r in rows if r[0] == "aten::relu"] == ["conflict", "conflict"]
    assert "nbx:" not in out
    assert err.startswith("nbx: DuplicateKernelError: aten::relu has 2 providers")


def test_list_leaves_out_empty_columns(nbx):
    _, out, _ = nbx("registry", "list", *SELECT, *PREFER, "--plugin", "other")
    assert out.splitlines() == [
        "op                  plugin  note        target",
        "aten::gelu.default  other               other_kernels.ops:gelu",
        "aten::relu          other   overridden  other_kernels.ops:relu",
    ]
    _, out, _ = nbx("registry", "list", *SELECT, "--namespace", "acme")
    assert out.splitlines()[0].split() == ["op", "plugin", "target"]


def test_list_fits_the_terminal_by_cutting_the_target_column(nbx, monkeypatch):
    monkeypatch.setenv("COLUMNS", "56")
    _, wide, _ = nbx("registry", "list", *SELECT, *PREFER)  # not a terminal: nothing is cut
    assert max(map(len, wide.splitlines())) > 56 and "..." not in wide
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    _, out, _ = nbx("registry", "list", *SELECT, *PREFER)
    lines = out.splitlines()
    assert max(map(len, lines)) == 56
    assert lines[1] == "acme::fused_rope    acme                acme_kernels...."
    assert [line[:40] for line in lines] == [line[:40] for line in wide.splitlines()]


def test_an_unknown_flag_prints_the_subcommand_usage(capsys):
    with pytest.raises(SystemExit) as info:
        main(["registry", "list", "--bogus"])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert err.startswith("usage: nbx registry list ")
    assert err.endswith("nbx registry list: error: unrecognized arguments: --bogus\n")


def test_an_unknown_namespace_is_a_usage_error_naming_the_namespaces(nbx):
    code, out, err = nbx("registry", "list", *SELECT, "--namespace", "nosuch")
    assert (code, out) == (2, "")
    assert err == "nbx: error: --namespace nosuch: no registered op is in this namespace; namespaces: acme, aten\n"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--plugins", "acme", "--plugin", "other"],
            "nbx: plugin 'other' is disabled, so it registers nothing: disabled: autoload is off",
        ),
        (
            [*SELECT, *PREFER, "--plugin", "other", "--namespace", "acme"],
            "nbx: plugin 'other' registers no op in namespace 'acme'",
        ),
    ],
)
def test_an_empty_listing_says_why(nbx, flags, message):
    code, out, err = nbx("registry", "list", *flags)
    assert code == 0 and out.splitlines() == ["op  plugin  note  target"]
    assert err.startswith(message)


def test_list_json_schema_is_pinned(nbx):
    code, out, err = nbx("registry", "list", *SELECT, *PREFER, "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert set(document) == {"schema", "ops", "patterns", "problems"}
    assert document["schema"] == 1 and document["problems"] == []
    assert all(set(op) == ENTRY_KEYS for op in document["ops"])
    assert [op["name"] for op in document["ops"]] == [
        "acme::fused_rope",
        "aten::clone",
        "aten::gelu.default",
        "aten::relu",
        "aten::relu",
        "aten::view",
    ]
    assert document["ops"][2] == {
        "name": "aten::gelu.default",
        "namespace": "aten",
        "op": "aten::gelu",
        "overload": "default",
        "plugin": "other",
        "distribution": "other-kernels",
        "version": "1.0",
        "target": "other_kernels.ops:gelu",
        "preferred": False,
        "status": "active",
    }
    assert document["ops"][3]["overload"] is None
    assert [(op["plugin"], op["preferred"], op["status"]) for op in document["ops"][3:5]] == [
        ("acme", True, "active"),
        ("other", False, "overridden"),
    ]


def test_list_json_reports_problems(nbx):
    code, out, err = nbx("registry", "list", *SELECT, "--format", "json")
    assert code == 1
    (problem,) = json.loads(out)["problems"]
    assert set(problem) == {"error", "message"} and problem["error"] == "DuplicateKernelError"
    assert problem["message"].startswith("aten::relu has 2 providers")
    assert "DuplicateKernelError" in err


def test_list_filters_by_plugin_and_namespace(nbx):
    _, out, _ = nbx("registry", "list", *SELECT, *PREFER, "--plugin", "acme", "--format", "json")
    assert [op["name"] for op in json.loads(out)["ops"]] == ["acme::fused_rope", "aten::relu"]
    _, out, _ = nbx("registry", "list", *SELECT, *PREFER, "--namespace", "acme", "--format", "json")
    assert [op["name"] for op in json.loads(out)["ops"]] == ["acme::fused_rope"]
    code, out, err = nbx("registry", "list", *SELECT, "--plugin", "acmee")
    assert (code, out) == (2, "")
    assert "--plugin acmee: no such plugin; plugins: acme, " in err
    listed = err.split("plugins: ", 1)[1].split(", ")
    assert {"acme", "core", "other"} <= {p.strip() for p in listed}


# -- nbx registry plugins --------------------------------------------------------------------------


def test_plugins_lists_status_and_reason(nbx):
    code, out, err = nbx("registry", "plugins", "--no-autoload", "--plugins", "acme")
    assert (code, err) == (0, "")
    header, *rows = (line.split(None, 5) for line in out.splitlines())
    assert header == ["plugin", "distribution", "version", "ops", "status", "detail"]
    rows = {row[0]: row for row in rows}
    assert rows["core"] == ["core", "nbx-core", "0.1.0", "2", "loaded"]
    assert rows["acme"] == ["acme", "acme-kernels", "0.1.0", "2", "loaded"]
    assert rows["other"][:5] == ["other", "other-kernels", "1.0", "0", "disabled"]
    assert "not in NBX_PLUGINS / --plugins" in rows["other"][5]


def test_plugins_json(nbx):
    code, out, _ = nbx("registry", "plugins", "--plugins=acme", "--disable-plugin=other", "--format=json")
    assert code == 0
    document = json.loads(out)
    assert set(document) == {"schema", "plugins", "problems"}
    (other,) = (p for p in document["plugins"] if p["name"] == "other")
    assert other == {
        "name": "other",
        "distribution": "other-kernels",
        "version": "1.0",
        "ops": 0,
        "status": "disabled",
        "reason": "disabled by NBX_DISABLE_PLUGINS / --disable-plugin",
        "error": None,
    }


# -- nbx registry coverage -------------------------------------------------------------------------


def test_coverage_against_a_bundled_list(nbx):
    code, out, _ = nbx("registry", "coverage", *SELECT, *PREFER, "--against", "core")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "coverage against core: 2 of 79 names covered (2.5%)"
    assert lines[1] == "missing (77):"
    assert (
        "  aten::cat: provided by nbx-core, but the installed nbx-core 0.1.0 does not register it: "
        "upgrade nbx-core" in lines
    )


def conv2d_reason() -> str:
    """Why aten::conv2d is missing under SELECT: nbx-conv absent, or present but not allowed."""
    try:
        importlib.metadata.distribution("nbx-conv")
    except importlib.metadata.PackageNotFoundError:
        return "aten::conv2d: provided by nbx-conv, which is not installed (pip install nbx-conv)"
    return (
        "aten::conv2d: provided by nbx-conv, whose plugin 'conv' is disabled: autoload is off and it is "
        "not in NBX_PLUGINS / --plugins"
    )


def test_coverage_against_a_file_as_json(nbx, tmp_path):
    names = tmp_path / "model-ops.txt"
    names.write_text("aten::view.default\n# a comment\naten::relu\n\naten::conv2d  # from the stem\n")
    code, out, _ = nbx("registry", "coverage", *SELECT, *PREFER, "--against", str(names), "--format", "json")
    assert code == 1
    document = json.loads(out)
    assert set(document) == {"schema", "against", "total", "percentage", "covered", "missing", "conflicts", "problems"}
    assert (document["against"], document["total"], document["percentage"]) == (str(names), 3, 66.7)
    assert document["covered"] == [
        {"name": "aten::view.default", "plugin": "core", "target": "fake_core.ops:view"},
        {"name": "aten::relu", "plugin": "acme", "target": "acme_kernels.ops:relu"},
    ]
    assert document["missing"] == [{"name": "aten::conv2d", "reason": conv2d_reason()}]


def test_coverage_counts_conflicts_apart_and_passes_when_all_is_covered(nbx, tmp_path):
    names = tmp_path / "ops.txt"
    names.write_text("aten::relu\naten::view\n")
    code, out, _ = nbx("registry", "coverage", *SELECT, "--against", str(names), "--format", "json")
    document = json.loads(out)
    assert code == 1 and [c["name"] for c in document["conflicts"]] == ["aten::relu"]
    assert nbx("registry", "coverage", *SELECT, *PREFER, "--against", str(names))[0] == 0


def test_coverage_against_something_unreadable_is_a_usage_error(nbx, tmp_path):
    code, out, err = nbx("registry", "coverage", "--against", str(tmp_path / "nope.txt"))
    assert (code, out) == (2, "")
    assert "neither a bundled op list (core-aten, core, elementwise" in err
    bad = tmp_path / "bad.txt"
    bad.write_text("aten::view\naten:relu\n")
    code, _, err = nbx("registry", "coverage", "--against", str(bad))
    assert code == 2 and f"{bad}:2: 'aten:relu' is not a valid op name" in err


# -- nbx registry check ----------------------------------------------------------------------------


def graph_reader(monkeypatch, ops: dict[str, int]) -> list[str]:
    read: list[str] = []

    def required_ops(path):
        read.append(path)
        return ops

    fake_module(monkeypatch, "nbx_core.graph", required_ops=required_ops)
    fake_module(monkeypatch, "nbx_core.graph.bundle", summary=lambda path: [])  # the graph has no kernel bundle
    return read


def test_check_names_what_a_graph_lacks(nbx, monkeypatch):
    read = graph_reader(monkeypatch, {"aten::view.default": 3, "aten::relu": 1, "aten::conv2d": 2})
    code, out, err = nbx("registry", "check", *SELECT, *PREFER, "model.nbx")
    assert code == 1 and read == ["model.nbx"]
    rows = [line.split() for line in out.splitlines()]
    assert rows[0] == ["op", "uses", "plugin", "note", "target"]
    assert rows[1:] == [
        ["aten::conv2d", "2", "missing"],
        ["aten::relu", "1", "acme", "acme_kernels.ops:relu"],
        ["aten::view.default", "3", "core", "fake_core.ops:view"],
    ]
    assert "nbx: model.nbx cannot run: 1 of 3 required ops cannot be resolved" in err
    assert conv2d_reason().removesuffix(" (pip install nbx-conv)") in err


def test_check_json_and_success(nbx, monkeypatch):
    graph_reader(monkeypatch, {"aten::view.default": 3, "aten::relu": 1})
    code, out, err = nbx("registry", "check", *SELECT, *PREFER, "model.nbx", "--format", "json")
    assert (code, err) == (0, "")
    document = json.loads(out)
    assert set(document) == {"schema", "graph", "ops", "unresolved", "bundle", "problems"}
    assert document["unresolved"] == []
    assert document["ops"][0] == {
        "name": "aten::relu",
        "count": 1,
        "status": "resolved",
        "plugin": "acme",
        "distribution": "acme-kernels",
        "version": "0.1.0",
        "target": "acme_kernels.ops:relu",
    }


def test_check_reports_conflicts(nbx, monkeypatch):
    graph_reader(monkeypatch, {"aten::relu": 1})
    code, out, err = nbx("registry", "check", *SELECT, "model.nbx", "--format", "json")
    assert code == 1
    (op,) = json.loads(out)["ops"]
    assert op["status"] == "conflict" and op["reason"].startswith("aten::relu has 2 providers")


def test_check_without_the_graph_module_is_a_clear_error(nbx, monkeypatch):
    monkeypatch.setitem(sys.modules, "nbx_core.graph", None)
    code, out, err = nbx("registry", "check", "model.nbx")
    assert (code, out) == (2, "")
    assert err.startswith(
        "nbx: error: nbx registry check cannot read graphs here: nbx_core.graph.required_ops is not available"
    )


# -- exit codes and usage --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--disable-plugin", "core"], "plugin 'core' cannot be disabled"),
        (["--prefer", "relu=acme"], "--prefer: 'relu' is not a valid op name"),
        (["--prefer", "aten::relu"], "--prefer: 'aten::relu' is not of the form 'namespace::op=plugin'"),
        (["--plugins", "acme,nope"], "NBX_PLUGINS / --plugins names 'nope'"),
    ],
)
def test_bad_selections_exit_2_with_a_message(nbx, args, message):
    code, out, err = nbx("registry", "list", *args)
    assert (code, out) == (2, "")
    assert err.startswith("nbx: error: ") and message in err


def test_the_environment_applies_and_flags_add_to_it(nbx, monkeypatch):
    monkeypatch.setenv("NBX_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("NBX_PLUGINS", "acme")

    def statuses(*flags):
        out = nbx("registry", "plugins", *flags, "--format", "json")[1]
        return [p["status"] for p in json.loads(out)["plugins"] if p["name"] in OURS]

    assert statuses() == ["loaded", "loaded", "disabled"]
    assert statuses("--disable-plugin", "acme", "--plugins", "other") == ["loaded", "disabled", "loaded"]


def test_version_and_help(nbx, capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out == f"nbx-core {__version__}\n"
    with pytest.raises(SystemExit):
        main(["--help"])
    help_text = capsys.readouterr().out
    assert "registry" in help_text and "run" in help_text


# -- the nbx run slot ------------------------------------------------------------------------------


def test_run_dispatches_to_the_graph_cli_with_the_plugin_flags_applied(nbx, monkeypatch):
    seen = []

    def run(args):
        seen.append((args.graph, get_registry().resolve("aten::relu").plugin))
        return 0

    def add_run_parser(subparsers):
        parser = subparsers.add_parser("run", parents=[registry_options()], help="run a graph")
        parser.add_argument("graph")
        parser.set_defaults(func=run)

    fake_module(monkeypatch, "nbx_core.graph")
    fake_module(monkeypatch, "nbx_core.cli.run", add_run_parser=add_run_parser)
    assert nbx("run", "model.nbx", *SELECT, *PREFER)[0] == 0
    assert seen == [("model.nbx", "acme")]


def test_run_without_the_graph_cli_is_a_clear_error(nbx, monkeypatch):
    monkeypatch.setitem(sys.modules, "nbx_core.cli.run", None)
    code, _, err = nbx("run", "model.nbx", "--whatever")
    assert code == 2
    assert err.startswith("nbx: error: nbx run needs nbx_core.cli.run, which is not available")


def test_registry_commands_do_not_import_the_graph_cli(nbx, monkeypatch):
    def add_run_parser(subparsers):
        raise AssertionError("imported for a registry command")

    fake_module(monkeypatch, "nbx_core.graph")
    fake_module(monkeypatch, "nbx_core.cli.run", add_run_parser=add_run_parser)
    assert nbx("registry", "list", *SELECT, *PREFER)[0] == 0
