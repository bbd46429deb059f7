"""Every ```python block of README.md and docs/*.md runs as written, in a folder holding the
example files the docs name. A block that needs a GPU, a cluster or a big data file says so on
the line before it (``<!-- docs-test: skip (needs a GPU) -->``) and is skipped visibly."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((.+?)\)\s*-->\s*$")
#: Names the docs use for input files, and the bundled example each stands for.
EXAMPLE_FILES = {"mirnas.fa": "mirnas.fa", "utrs.fa": "targets.fa", "targets.fa": "targets.fa",
                 "fold_hairpins.fa": "fold_hairpins.fa"}


class Block(NamedTuple):
    where: str  # file:line of the opening fence
    code: str
    skip: str | None  # the reason given in the skip marker


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text()
    blocks = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = SKIP.search(before)
        blocks.append(Block(f"{path.relative_to(ROOT)}:{line}", match.group(1), marker and marker.group(1)))
    return blocks


BLOCKS = [block for path in DOCS for block in python_blocks(path)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("docs")
    for name, source in EXAMPLE_FILES.items():
        shutil.copy(EXAMPLES / source, folder / name)
    return folder


def test_the_docs_have_examples_and_skips_are_rare():
    assert len(BLOCKS) >= 8
    assert any(b.where.startswith("README.md") for b in BLOCKS)
    assert sum(b.skip is not None for b in BLOCKS) <= len(BLOCKS) // 2


@pytest.mark.parametrize("block", BLOCKS, ids=[b.where for b in BLOCKS])
def test_python_example_runs_as_written(block: Block, workdir: Path):
    if block.skip:
        pytest.skip(f"{block.where}: {block.skip} (marked in the docs)")
    env = dict(os.environ, MPLBACKEND="Agg")
    done = subprocess.run([sys.executable, "-c", block.code], cwd=workdir, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{block.where} failed:\n{done.stderr[-3000:]}"


def _readme_commands() -> list[str]:
    """The README's first shell block: one command line per line, comments removed."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"^```bash\n(.*?)^```", text, re.S | re.M).group(1)
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_first_command_scans_the_bundled_examples():
    scan = next(part.strip() for part in _readme_commands()[0].split("&&") if part.strip().startswith("gamut "))
    args = shlex.split(scan)
    assert args[:2] == ["gamut", "scan"]
    done = subprocess.run([sys.executable, "-m", "gamut", *args[1:]], cwd=ROOT, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "hsa-" in done.stdout or "dme-" in done.stdout  # hits of the bundled miRNAs


def test_readme_test_command_is_what_ci_runs_and_shows_each_file():
    """CI runs the README's test command, in a form whose log names each test file as it goes."""
    command = _readme_commands()[1].split("&&")[-1].strip()
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip().startswith("python -m pytest")]
    assert ci == [command]
    assert "-q" not in shlex.split(command)  # -q prints dots only, no file names
