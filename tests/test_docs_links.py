"""The docs point only at what a clone holds (issue 44): every relative link of README.md and
docs/*.md resolves to a file (and its #anchor to a heading there), every repository path written in
backticks exists, and no page sends readers to ``../shared``, which a clone does not have."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted([ROOT / "README.md", *ROOT.glob("docs/*.md"), *ROOT.glob("examples/*.md"), *ROOT.glob("bench/*.md")])
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
#: A backticked repository path: a top-level folder of the clone, then a file or folder name.
REPO_PATH = re.compile(r"`((?:src|tests|bench|docs|examples|\.ci)/[A-Za-z0-9_./-]*)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]|<[^>]+>", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in FENCE.sub("", page.read_text()).splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            out.add(base if count == 0 else f"{base}-{count}")
    return out


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_and_paths_resolve_inside_the_clone(page):
    text = page.read_text()
    broken = []
    for match in LINK.finditer(FENCE.sub("", text)):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or ROOT not in file.parents and file != ROOT:
            broken.append(f"{target} (no such file in the clone)")
        elif anchor and file.suffix == ".md" and anchor not in anchors(file):
            broken.append(f"{target} (no heading #{anchor})")
    for match in REPO_PATH.finditer(text):
        path = match.group(1).rstrip("./")
        if not (ROOT / path).exists():
            broken.append(f"`{match.group(1)}` (no such path)")
    assert not broken, f"{page.relative_to(ROOT)}: " + "; ".join(broken)
    assert "../shared" not in text, f"{page.relative_to(ROOT)} points at ../shared, which a clone does not have"
