"""Tuning as data (nbx_core.runtime.tuning, tuner, `nbx tune`): keys, the lookup order, the files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nbx_core.backend import current
from nbx_core.errors import BackendError, NbxError
from nbx_core.runtime import tuning
from nbx_core.runtime.tuner import Case, Sweep, parse_shapes, tune
from nbx_core.runtime.tuning import Key, Tunable, bucket


def _key(dtype: str, m: int, layout: str) -> Key:
    return Key({"dtype": dtype, "M": bucket(m, 16), "layout": layout}, optional=("layout",))


def _toy(tables: Path, name: str = "toy") -> Tunable:
    # BLOCK is the rule's bucket of m; the interpreter's is always 16.
    return Tunable(
        "toyplugin",
        name,
        {"BLOCK": "pow2", "num_warps": "count", "SPLIT": "count"},
        key=_key,
        rule=lambda d, m, lay: {"BLOCK": bucket(m, 16), "num_warps": 4},
        interpreter=lambda d, m, lay: {"BLOCK": 16, "num_warps": 1},
        tables=tables,
        optional=("SPLIT",),
        check=lambda c: "SPLIT needs num_warps 4" if c.get("SPLIT", 1) > 1 and c["num_warps"] != 4 else None,
    )


def _entry(block: int, **more: int) -> dict:
    return {"config": {"BLOCK": block, "num_warps": 4, **more}, "source": "benchmarks/results/sweeps/toy.json"}


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("NBX_CACHE_DIR", str(tmp_path / "cache"))
    tables = tmp_path / "configs"
    tables.mkdir()
    tuning.reload()
    yield tables
    tuning.reload()


def _write_table(tables: Path, kernels: dict, arch: str = "sm_90", name: str = "h200.json") -> Path:
    path = tables / name
    path.write_text(json.dumps({"about": "test", "arch": arch, "kernels": kernels}))
    tuning.reload()
    return path


def test_key_text_buckets_and_rules():
    key = Key({"dtype": "f16", "M": bucket(4000, 16), "N": bucket(5), "layout": "NT"}, optional=("layout",))
    assert key.texts() == ("f16:M4096:N8:NT", "f16:M4096:N8")
    assert Key({"dtype": "bfloat16", "N": 1024}).texts() == ("bfloat16:N1024",)
    assert [bucket(n, 16) for n in (1, 16, 17, 4096, 4097)] == [16, 16, 32, 4096, 8192]
    assert key.matches({"dtype": "f16", "max_M": 4096, "min_N": 8}) is True
    assert key.matches({"dtype": "f16", "max_M": 2048}) is False
    assert key.matches({"layout": "NN"}) is False
    assert "not a field of the key" in key.matches({"max_K": 16})
    assert "integer" in key.matches({"max_dtype": 3})


def test_lookup_order(files):
    toy = _toy(files)
    table = _write_table(
        files,
        {
            "toy": {
                "shapes": {"f16:M256": _entry(1), "f16:M256:NT": _entry(2)},
                "rules": [
                    {"when": {"dtype": "f16", "layout": "TT"}, **_entry(4)},
                    {"when": {"dtype": "f16", "max_M": 64}, **_entry(8)},
                ],
            }
        },
    )

    def pick(m: int, layout: str) -> tuple[int, str]:
        config, where = toy.resolve("f16", m, layout, target="sm_90")
        return config["BLOCK"], where

    assert pick(200, "NN") == (1, f"'f16:M256' in {table}")  # the layout-free key serves every layout
    assert pick(200, "NT") == (2, f"'f16:M256:NT' in {table}")  # a layout's own key comes first
    assert pick(1000, "TT") == (4, f"rule 0 in {table}")  # then the first matching rule
    assert pick(40, "NN") == (8, f"rule 1 in {table}")
    assert pick(1000, "NN") == ({"BLOCK": 1024, "num_warps": 4}["BLOCK"], "rule")  # then the kernel's rule
    assert toy.resolve("f16", 200, "NN", target="sm_80")[1] == "rule"  # no table for that architecture
    assert toy.resolve("f16", 200, "NN", target=None) == ({"BLOCK": 16, "num_warps": 1}, "interpreter rule")
    # The user cache comes before the table, for its architecture only.
    path = toy.remember(_key("f16", 200, "NT"), {"BLOCK": 32, "num_warps": 4}, "nbx tune", target="sm_90")
    assert path == Path(tuning.cache_root()) / "tuning" / "toyplugin.json"
    assert pick(200, "NT") == (32, f"'f16:M256:NT' in {path}")
    assert pick(200, "NN") == (1, f"'f16:M256' in {table}")
    assert toy.resolve("f16", 200, "NT", target="sm_100")[1] == "rule"
    saved = json.loads(path.read_text())
    assert saved == {"sm_90": {"toy": {"f16:M256:NT": {"config": {"BLOCK": 32, "num_warps": 4}, "source": "nbx tune"}}}}
    tuning.reload()  # a new process reads it back from disk
    assert pick(200, "NT")[0] == 32


def test_skip_passes_over_entries_that_ask_for_a_variant(files):
    toy = _toy(files)
    _write_table(
        files,
        {
            "toy": {
                "shapes": {"f16:M256:NN": _entry(128, SPLIT=2), "f16:M256": _entry(1)},
                "rules": [{"when": {}, **_entry(64, SPLIT=4)}],
            }
        },
    )
    assert toy.resolve("f16", 200, "NN", target="sm_90")[0]["BLOCK"] == 128
    assert toy.resolve("f16", 200, "NN", target="sm_90", skip=("SPLIT",))[0]["BLOCK"] == 1
    assert toy.resolve("f16", 1000, "NN", target="sm_90")[0]["BLOCK"] == 64
    assert toy.resolve("f16", 1000, "NN", target="sm_90", skip=("SPLIT",))[1] == "rule"


def test_lookup_on_this_backend_is_remembered_and_config_wins(files):
    toy = _toy(files)
    first = toy.lookup("f16", 100, "NN")
    assert first == toy.resolve("f16", 100, "NN", target=tuning.arch())[0]
    first["BLOCK"] = 3  # a caller's copy: the next lookup is unchanged
    assert toy.lookup("f16", 100, "NN")["BLOCK"] != 3
    assert toy.choose({"BLOCK": 64, "num_warps": 2}, "f16", 100, "NN") == {"BLOCK": 64, "num_warps": 2}
    with pytest.raises(NbxError, match=r"passed as config= to toy: BLOCK must be a power of two"):
        toy.choose({"BLOCK": 48, "num_warps": 2}, "f16", 100, "NN")


@pytest.mark.parametrize(
    ("config", "why"),
    [
        ({"BLOCK": 64}, r"missing \['num_warps'\]"),
        ({"BLOCK": 64, "num_warps": 4, "num_wraps": 4}, r"unknown keys \['num_wraps'\]"),
        ({"BLOCK": 48, "num_warps": 4}, "BLOCK must be a power of two"),
        ({"BLOCK": 64, "num_warps": "4"}, "num_warps must be an integer"),
        ({"BLOCK": 64, "num_warps": True}, "num_warps must be an integer"),
        ({"BLOCK": 64, "num_warps": 0}, "num_warps must be an integer of at least 1"),
        ({"BLOCK": 64, "num_warps": 8, "SPLIT": 2}, "SPLIT needs num_warps 4"),
        ([64, 4], "must be a JSON object"),
    ],
)
def test_malformed_entries_name_the_key_and_the_file(files, config, why):
    toy = _toy(files)
    path = tuning.cache_path("toyplugin")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"sm_90": {"toy": {"f16:M256": {"config": config}}}}))
    with pytest.raises(NbxError, match=why) as err:
        toy.resolve("f16", 200, "NN", target="sm_90")
    assert f"'f16:M256' in {path}" in str(err.value) and "fix or delete the entry" in str(err.value)


def test_malformed_tables_are_clear_errors(files):
    toy = _toy(files)
    path = _write_table(files, {"toy": {"shapes": {"f16:M256": {"config": {"BLOCK": 64, "num_warps": 4}}}}})
    with pytest.raises(NbxError, match='needs "source", the results file') as err:
        toy.resolve("f16", 200, "NN", target="sm_90")
    assert f"'f16:M256' in {path}" in str(err.value)
    _write_table(files, {"toy": {"rules": [{"when": {"max_Q": 4}, **_entry(64)}]}})
    with pytest.raises(NbxError, match=f"rule 0 in {path}: 'when' names 'max_Q'"):
        toy.resolve("f16", 200, "NN", target="sm_90")
    _write_table(files, {}, name="h100.json")
    with pytest.raises(NbxError, match="are both for sm_90: keep one"):
        toy.resolve("f16", 200, "NN", target="sm_90")
    (files / "h100.json").write_text("{not json")
    tuning.reload()
    with pytest.raises(NbxError, match=r"h100.json cannot be read .*fix or delete the file"):
        toy.resolve("f16", 200, "NN", target="sm_90")


off_the_gpu = pytest.mark.skipif(current() == "cuda", reason="checks the refusal off the cuda backend")


@off_the_gpu
def test_remember_and_tune_need_a_gpu(files):
    toy = _toy(files)
    if tuning.arch() is None:
        with pytest.raises(BackendError, match="tuning needs a GPU"):
            toy.remember(_key("f16", 1, "NN"), {"BLOCK": 16, "num_warps": 1}, "test")
    sweep = Sweep(toy, [(16,)], lambda shape, dtype: [Case("x", ("f16", 16, "NN"), lambda c: None, [])], "m")
    with pytest.raises(BackendError, match=r"tuning toyplugin.toy: tuning needs the cuda backend \(a GPU\)"):
        tune(sweep)


@off_the_gpu
def test_nbx_tune_refuses_off_the_gpu(capsys):
    from nbx_core.cli import main

    assert main(["tune", "--family", "norm"]) == 2
    err = capsys.readouterr().err
    assert "nbx tune --family norm: tuning needs the cuda backend (a GPU)" in err


def test_parse_shapes():
    assert parse_shapes("8192x4096,16x768") == [(8192, 4096), (16, 768)]
    assert parse_shapes("7") == [(7,)]
    for bad in ("", "8192x", "0x4", "ax4"):
        with pytest.raises(NbxError, match="write positive sizes"):
            parse_shapes(bad)


def test_choose_sums_the_cases_of_a_key(files):
    # Cases of one key choose together; a configuration that failed in one of them is out.
    from nbx_core.runtime.tuner import Timing, choose

    toy = _toy(files)
    a, b = {"BLOCK": 16, "num_warps": 4}, {"BLOCK": 32, "num_warps": 4}
    bad = {"BLOCK": 64, "num_warps": 4}
    cases = [Case(label, ("f16", m, "NN"), lambda c: None, []) for label, m in (("x", 200), ("y", 256), ("z", 40))]
    timed = [
        (cases[0], [Timing(a, 1.0), Timing(b, 2.0), Timing(bad, 0.1)]),
        (cases[1], [Timing(a, 3.0), Timing(b, 1.5), Timing(bad, error="too much shared memory")]),
        (cases[2], [Timing(a, 1.0), Timing(b, 0.5)]),
    ]
    first, second = choose(toy, timed)
    assert (first.key.text(), first.config, first.seconds, [c.label for c in first.cases]) == (
        "f16:M256:NN",
        b,
        3.5,
        ["x", "y"],
    )
    assert first.totals == {tuning.frozen(a): 4.0, tuning.frozen(b): 3.5}
    assert (second.key.text(), second.config) == ("f16:M64:NN", b)
    with pytest.raises(NbxError, match="no candidate ran in every case on this GPU: too much shared memory"):
        choose(toy, [(cases[0], [Timing(bad, error="too much shared memory")])])


def test_lookup_memo_stays_bounded(files, monkeypatch):
    # A process that sees endless shapes keeps a bounded memo of lookups.
    toy = _toy(files)
    monkeypatch.setattr(tuning, "_MEMO_LIMIT", 8)
    for m in range(1, 40):
        assert toy.lookup("f16", m, "NN") == toy.resolve("f16", m, "NN", target=tuning.arch())[0]
        assert len(toy._memo) <= 8
