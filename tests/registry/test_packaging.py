"""What the distributions declare (license, readme, the nbx-core range plugins accept) and what the
documentation promises (the README's commands, the package description, links that lead somewhere),
read from the checkout."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import nbx_core

REPO = Path(__file__).resolve().parents[2]
PLUGINS = sorted(p.parent for p in REPO.glob("plugins/*/pyproject.toml"))
EXAMPLE = REPO / "examples" / "third_party_plugin"
PROJECTS = [REPO, *PLUGINS, EXAMPLE]
PIN = re.compile(r"nbx-core>=(\d+(?:\.\d+)*),<(\d+(?:\.\d+)*)")


def label(root: Path) -> str:
    return root.relative_to(REPO).as_posix() if root != REPO else "nbx-core"


def project(root: Path) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())


def version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))


def bash_block(markdown: str, heading: str) -> str:
    """The first ```bash block under ``heading``."""
    section = markdown.split(f"\n{heading}\n", 1)[1]
    return section.split("```bash\n", 1)[1].split("\n```", 1)[0].strip()


def test_there_are_eight_plugins():
    assert [p.name for p in PLUGINS] == [
        "attention",
        "conv",
        "elementwise",
        "index",
        "linalg",
        "norm",
        "reduction",
        "spectral",
    ]


def test_the_license_file_is_apache_2():
    text = (REPO / "LICENSE").read_text()
    assert text.lstrip().startswith("Apache License\n                           Version 2.0, January 2004")
    assert "END OF TERMS AND CONDITIONS" in text and "APPENDIX: How to apply the Apache License" in text


@pytest.mark.parametrize("root", PROJECTS, ids=label)
def test_every_distribution_declares_its_license_and_a_readme(root):
    meta = project(root)
    assert meta["project"]["license"] == "Apache-2.0"
    assert (root / meta["project"]["readme"]).is_file()
    # A license given as an SPDX string (PEP 639) needs setuptools 77 to build.
    assert "setuptools>=77" in meta["build-system"]["requires"]


@pytest.mark.parametrize("root", [*PLUGINS, EXAMPLE], ids=label)
def test_plugins_pin_a_compatible_nbx_core_range(root):
    (requirement,) = [d for d in project(root)["project"]["dependencies"] if d.startswith("nbx-core")]
    match = PIN.fullmatch(requirement)
    assert match, f"{root.name}: {requirement!r} should be 'nbx-core>=LOW,<HIGH'"
    low, high = map(version, match.groups())
    assert low <= version(nbx_core.__version__) < high


def test_the_package_readme_suits_a_package_index():
    readme = project(REPO)["project"]["readme"]
    assert readme != "README.md", "nbx-core's package description must not be the repository README"
    text = (REPO / readme).read_text()
    assert "pip install -e" not in text and "-e ." not in text
    links = re.findall(r"\]\(([^)]+)\)", text) + re.findall(r'(?:src|href)="([^"]+)"', text)
    assert [link for link in links if not link.startswith("https://")] == []


def test_ci_runs_the_readme_test_command():
    command = bash_block((REPO / "README.md").read_text(), "## Test it")
    script = (REPO / ".ci" / "run").read_text().splitlines()
    ci = [line for line in script if line and not line.startswith(("#", "set ", "cd "))]
    assert ci == [command]


def test_ci_type_checks_nbx_core_with_the_pinned_mypy():
    assert " && mypy nbx_core && " in bash_block((REPO / "README.md").read_text(), "## Test it")
    test_extra = project(REPO)["project"]["optional-dependencies"]["test"]
    assert [d for d in test_extra if d.startswith("mypy")] and all(
        re.fullmatch(r"mypy==[\d.]+", d) for d in test_extra if d.startswith("mypy")
    )
    assert project(REPO)["tool"]["mypy"]["files"] == ["nbx_core"]


def test_ruff_format_and_ruff_check_share_one_line_length_and_pre_commit_pins_ruff():
    ruff = project(REPO)["tool"]["ruff"]
    assert ruff["line-length"] == 120 and "format" in ruff and "line-length" not in ruff["format"]
    hooks = (REPO / ".pre-commit-config.yaml").read_text()
    assert re.search(r"repo: https://github.com/astral-sh/ruff-pre-commit\n\s+rev: v\d+\.\d+\.\d+\n", hooks)
    assert "id: ruff-check" in hooks and "id: ruff-format" in hooks


def test_the_readme_run_command_is_quiet_and_ends_in_nbx_run():
    command = bash_block((REPO / "README.md").read_text(), "## Run it")
    assert command.startswith("pip install -q ")
    assert command.endswith("&& nbx run examples/encoder_block.nbx")


def anchor(heading: str) -> str:
    """The anchor a Markdown renderer (GitHub's) gives a heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


DOCS = [
    REPO / "README.md",
    *sorted(REPO.glob("docs/*.md")),
    *sorted(REPO.glob("docs/notes/*.md")),
    *sorted(REPO.glob("plugins/*/README.md")),
    REPO / "benchmarks" / "README.md",
    EXAMPLE / "README.md",
]


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_lead_to_a_file_and_a_heading_that_exist(page):
    prose = re.sub(r"`[^`\n]*`", "", re.sub(r"```.*?```", "", page.read_text(), flags=re.S))  # code is no link
    for target in re.findall(r"\]\(([^)\s]+)\)", prose):
        if target.startswith(("https://", "http://")):
            continue
        path, _, fragment = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} leads nowhere"
        if fragment:
            headings = re.findall(r"^#+ (.+)$", linked.read_text(), flags=re.M)
            assert fragment in map(anchor, headings), f"{page.name}: {target} names no heading of {linked.name}"


@pytest.mark.parametrize("page", DOCS, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_page_a_document_names_exists(page):
    prose = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
    names = set(re.findall(r"[\w./-]+\.md\b", prose))
    missing = [n for n in names if not (page.parent / n).exists() and not (REPO / n).exists()]
    assert missing == []


def test_the_first_page_leads_to_no_lab_notes():
    # docs/notes/ holds the history of experiments, for maintainers; a reader starting at the
    # README should meet documentation, not a lab notebook.
    assert "docs/notes" not in (REPO / "README.md").read_text()
    assert (REPO / "docs" / "notes" / "history.md").is_file()
