"""The shape of the source tree (issue #25): no import cycles inside the package (issue #45: type
hints' imports included), no overlong source files, and nothing but product code in the wheel that
users install."""
from __future__ import annotations

import ast
import fnmatch
import os
import shutil
import subprocess
import sys
import zipfile
from collections import deque
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
PACKAGE = SRC / "gamut"

#: Longest source file allowed under src/ (compiled kernels' sources are exempt).
MAX_LINES = 600
KERNEL_SUFFIXES = {".cu", ".cuh"}
#: Directories of generated files that are never part of the source.
GENERATED_DIRS = ("__pycache__", ".egg-info")


# --------------------------------------------------------------------------- import graph

def package_modules(package: Path = PACKAGE) -> dict[str, Path]:
    """Dotted module name -> file, for every .py of the package (a package is its ``__init__``)."""
    modules = {}
    for path in sorted(package.rglob("*.py")):
        if any(part == "__pycache__" for part in path.parts):
            continue
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _literal_import(node: ast.AST) -> ast.Import | None:
    """``importlib.import_module("a.b")`` (or ``import_module``) with a literal name, as an import."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "import_module" or node.args[0].value.startswith("."):
        return None
    return ast.Import(names=[ast.alias(name=node.args[0].value)], lineno=node.lineno)


def import_nodes(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module, at any depth (functions included), and ``import_module`` calls
    with a literal name. Imports made only for type checkers (under ``if TYPE_CHECKING:``) count
    too: a cycle through type hints is a cycle of the design all the same (a data type above the
    code that reads it), however Python runs it."""
    found = []
    pending = deque([tree])
    while pending:
        node = pending.popleft()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif (call := _literal_import(node)) is not None:
            found.append(call)
        pending.extend(ast.iter_child_nodes(node))
    return found


def import_edges(name: str, path: Path, modules: dict[str, Path]) -> dict[str, int]:
    """Modules of the package that module ``name`` imports -> line of the first such import.

    ``from pkg import x`` is an edge to ``pkg.x`` when that is a module, else to ``pkg`` (its
    ``__init__``, which defines or re-exports ``x``); ``import a.b.c`` is an edge to the longest
    prefix that is a module of the package. Relative imports are resolved against the module's
    package."""
    here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    edges: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target != name and target in modules:
            edges.setdefault(target, line)

    for node in import_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                for stop in range(len(parts), 0, -1):
                    if ".".join(parts[:stop]) in modules:
                        add(".".join(parts[:stop]), node.lineno)
                        break
            continue
        if node.level:
            if node.level - 1 > len(here):
                continue  # beyond the top package: not ours
            base = here[:len(here) - (node.level - 1)]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        for alias in node.names:
            submodule = f"{source}.{alias.name}"
            add(submodule if submodule in modules else source, node.lineno)
    return edges


def import_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    return {name: import_edges(name, path, modules) for name, path in modules.items()}


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's algorithm without recursion; components of more than one module (or a module
    importing itself) are returned, each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, {}):
                    components.append(sorted(component))
    return components


def one_cycle(component: list[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """A shortest import chain from the component's first module back to itself, within it."""
    start, members = component[0], set(component)
    previous: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in sorted(graph[node]):
            if child not in members:
                continue
            if child == start:
                chain = [node]
                while chain[-1] != start:
                    chain.append(previous[chain[-1]])
                return [start, *reversed(chain[:-1]), start] if node != start else [start, start]
            if child not in previous:
                previous[child] = node
                queue.append(child)
    return component  # not reached for a real component


def describe_cycle(cycle: list[str], graph: dict[str, dict[str, int]], modules: dict[str, Path]) -> str:
    steps = [cycle[0]]
    for here, there in zip(cycle, cycle[1:]):
        line = graph[here][there]
        steps.append(f"      -> {there}   ({modules[here].relative_to(ROOT)}:{line})")
    return "\n".join(steps)


def test_the_package_has_no_import_cycles():
    modules = package_modules()
    assert "gamut" in modules and "gamut.cli" in modules, "the package was not found under src/"
    graph = import_graph(modules)
    assert sum(map(len, graph.values())) > len(modules) // 2, "too few imports found: the parser is broken"
    cycles = strongly_connected(graph)
    if cycles:
        report = []
        for c in cycles:
            inside = [f"    {a} -> {b}   ({modules[a].relative_to(ROOT)}:{graph[a][b]})"
                      for a in c for b in sorted(graph[a]) if b in c]
            report += [f"{len(c)} modules import each other: {', '.join(c)}",
                       "  one cycle: " + describe_cycle(one_cycle(c, graph), graph, modules),
                       "  all imports inside the group:", *inside]
        pytest.fail("import cycles in src/gamut (lazy imports inside functions and imports for type hints "
                    "under TYPE_CHECKING count: move the data types the lower module reads below both):\n"
                    + "\n".join(report))


def test_cycle_finder_finds_cycles(tmp_path: Path):
    """The checker itself: a lazy import, a relative import, a package re-export and imports under
    TYPE_CHECKING (``typing.TYPE_CHECKING`` too) make cycles; a package importing its submodules
    does not."""
    pkg = tmp_path / "toy"
    (pkg / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from .a import f\nfrom . import sub\n",
        "a.py": "def f():\n    from toy.b import g\n    return g\n",
        "b.py": "from .sub import c\n",
        "sub/__init__.py": "",
        "sub/c.py": "from ..a import f\n",
        "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy import e\n",
        "e.py": "from toy import d\n",
        "m.py": "import typing\nif typing.TYPE_CHECKING:\n    from toy.n import N\n",
        "n.py": "class N:\n    pass\n",
        "h.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    from toy import k\n",
        "k.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from toy import h\n",
        "x.py": "from toy import f\n",  # a name of toy/__init__: an edge to the package
        "y.py": "import importlib\ndef load():\n    return importlib.import_module('toy.z')\n",
        "z.py": "from . import y\n",
    }
    for name, text in files.items():
        (pkg / name).write_text(text)
    modules = package_modules(pkg)
    graph = import_graph(modules)
    assert graph["toy.x"] == {"toy": 1}
    assert graph["toy.y"] == {"toy.z": 3}
    assert graph["toy.d"] == {"toy.e": 3} and graph["toy.m"] == {"toy.n": 3}
    assert sorted(strongly_connected(graph)) == [["toy.a", "toy.b", "toy.sub.c"], ["toy.d", "toy.e"],
                                                 ["toy.h", "toy.k"], ["toy.y", "toy.z"]]
    (pkg / "n.py").write_text("from toy import m\n")  # m imports n only for its type hints
    (pkg / "b.py").write_text("from .sub import c\nimport toy.x\n")
    (pkg / "z.py").write_text("")
    (pkg / "e.py").write_text("")
    (pkg / "k.py").write_text("")
    graph = import_graph(package_modules(pkg))
    assert sorted(strongly_connected(graph)) == [["toy", "toy.a", "toy.b", "toy.sub.c", "toy.x"], ["toy.m", "toy.n"]]


# --------------------------------------------------------------------------- file lengths

def source_files() -> list[Path]:
    files = []
    for folder, dirs, names in os.walk(SRC):
        dirs[:] = [d for d in dirs if not d.endswith(GENERATED_DIRS)]
        files.extend(Path(folder, n) for n in names if not n.endswith((".pyc", ".so")))
    return sorted(files)


def line_count(path: Path) -> int | None:
    try:
        return len(path.read_text().splitlines())
    except UnicodeDecodeError:
        return None  # a binary data file


def test_no_source_file_is_longer_than_600_lines():
    files = source_files()
    assert any(p.name == "cli.py" for p in files)
    too_long = sorted((n, p) for p in files if p.suffix not in KERNEL_SUFFIXES
                      and (n := line_count(p)) is not None and n > MAX_LINES)
    if too_long:
        pytest.fail(f"files under src/ longer than {MAX_LINES} lines (split them):\n" + "\n".join(
            f"  {p.relative_to(ROOT)}: {n} lines" for n, p in reversed(too_long)))


# --------------------------------------------------------------------------- the wheel

#: Names of test-only files (fnmatch on the path inside the wheel).
TEST_ONLY_NAMES = ["*harness*", "*host_harness*", "tests/*", "*/tests/*", "*conftest*", "*splicing/generate.py"]
#: Source text that only test code has: the host (g++) builds of the kernels and test kill hooks.
TEST_ONLY_TEXT = ["HostBackend", "HostEngine", "build_host_library", "GAMUT_TEST_", "g++"]
#: Files the project copies into a build: the packaging configuration and what it reads.
BUILD_INPUTS = ["pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in", "README.md", "LICENSE"]


def _pip_wheel(source: Path, out: Path, *isolation: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", *isolation,
                           "--no-cache-dir", "-q", "-w", str(out)], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of the working tree as it is now. Built from a copy, so that no stale ``build/``
    folder adds old files and the build writes nothing into the checkout. Offline with the
    environment's own setuptools first; where that one cannot build the project (missing or too
    old), with pip's isolated build environment (which needs the package index)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "source"
    source.mkdir()
    for name in BUILD_INPUTS:
        if (ROOT / name).exists():
            shutil.copy(ROOT / name, source / name)
    shutil.copytree(SRC, source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "*.pyc"))
    out = work / "dist"
    attempts = [_pip_wheel(source, out, "--no-build-isolation")]
    if attempts[0].returncode != 0:
        attempts.append(_pip_wheel(source, out))
    wheels = sorted(out.glob("*.whl"))
    if not wheels:
        errors = "\n---\n".join(a.stderr[-2000:] for a in attempts)
        pytest.fail(f"pip wheel failed (offline and isolated):\n{errors}")
    return wheels[0]


def test_the_wheel_holds_only_product_code(wheel: Path):
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        sources = {n: archive.read(n).decode("utf-8", "replace") for n in names if n.endswith(".py")}
    # not an empty or partial wheel: the analyses, the command line and the GPU kernels are there
    for required in ["gamut/__init__.py", "gamut/cli.py", "gamut/scanning/__init__.py",
                     "gamut/folding/__init__.py", "gamut/splicing/__init__.py"]:
        assert required in names, f"{required} is missing from {wheel.name}"
    kernels = [n for n in names if fnmatch.fnmatch(n, "gamut/cuda/kernels/*.cu") and "harness" not in n]
    assert len(kernels) >= 3, f"the CUDA kernels are missing from {wheel.name}: {kernels}"

    findings = [f"{n}: test-only file ({next(p for p in TEST_ONLY_NAMES if fnmatch.fnmatch(n, p))})"
                for n in names if any(fnmatch.fnmatch(n, p) for p in TEST_ONLY_NAMES)]
    findings += [f"{n}: contains {marker!r} (line {text[:text.index(marker)].count(chr(10)) + 1})"
                 for n, text in sorted(sources.items()) for marker in TEST_ONLY_TEXT if marker in text]
    if findings:
        pytest.fail(f"test-only code in {wheel.name} (move it to tests/):\n" + "\n".join(f"  {f}" for f in findings))
