"""The layering rules of DESIGN.md that the import contract (.importlinter) cannot see.

- policies/ decides, jobs/estimate/ estimates, from what they are handed, and core/ holds
  only values and rules: no clock, no file or network I/O, no environment, no randomness,
  no database (checked on the syntax tree of every module);
- nothing imports the layers by their bare folder names: they exist only as gpuopt.*.
"""

from __future__ import annotations

import ast
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PKG = REPO / "gpuopt"  # the layers, as real files (the root's folders are links into it)
LAYERS = ("core", "providers", "jobs", "policies", "orchestrator")

# Modules a pure decision never imports (stdlib I/O, clocks, randomness, the store).
IMPURE_MODULES = {
    "os", "io", "socket", "subprocess", "shutil", "tempfile", "pathlib", "time", "random",
    "secrets", "urllib", "http", "smtplib", "sqlite3", "threading", "multiprocessing",
    "asyncio", "sqlalchemy", "sqlmodel", "requests", "logging",
}
# Calls that read the clock, the filesystem or the environment.
IMPURE_CALLS = {
    "open", "input", "print", "now", "utcnow", "today", "time", "monotonic", "perf_counter",
    "read_text", "read_bytes", "write_text", "write_bytes", "getenv", "system", "urlopen",
}


def _folder(name: str) -> Path:
    """A layer's folder (``jobs/estimate``) in the package, any other from the root."""
    return (PKG if name.split("/")[0] in LAYERS else REPO) / name


def _python_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def _impurities(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        for name in names:
            if name.split(".")[0] in IMPURE_MODULES:
                found.append(f"{path.name}:{node.lineno} imports {name}")
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else "")
            if called in IMPURE_CALLS:
                found.append(f"{path.name}:{node.lineno} calls {called}()")
        if isinstance(node, ast.Attribute) and node.attr == "environ":
            found.append(f"{path.name}:{node.lineno} reads environ")
    return found


@pytest.mark.parametrize("folder", ["policies", "core", "jobs/estimate"])
def test_decisions_estimates_and_shared_values_are_pure(folder: str) -> None:
    found = [f for p in _python_files(_folder(folder)) for f in _impurities(p)]
    assert found == []


def test_the_purity_check_sees_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import time\nfrom datetime import datetime\nimport os\n"
        "def f():\n    return datetime.now(), open('x'), os.environ['A'], time.time()\n",
        encoding="utf-8",
    )
    found = _impurities(bad)
    assert any("imports time" in f for f in found)
    assert any("calls now()" in f for f in found)
    assert any("calls open()" in f for f in found)
    assert any("reads environ" in f for f in found)


@pytest.mark.parametrize("folder", [*LAYERS, "tests", "benchmarks", "docs"])
def test_nothing_imports_a_layer_by_its_bare_name(folder: str) -> None:
    bare: list[str] = []
    for path in _python_files(_folder(folder)):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            mods: list[str] = []
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                mods = [node.module]
            bare += [f"{path.relative_to(REPO)}:{node.lineno} {m}"
                     for m in mods if m.split(".")[0] in LAYERS]
    assert bare == []


def test_the_package_is_real_files_and_the_root_links_into_it() -> None:
    """The layers live under gpuopt/ as real files (a checkout without symlinks, git's
    default on Windows, still imports gpuopt.core); the root's core/, jobs/, ... are links
    into the package, for reading only, and a checkout without links may lack them."""
    tracked = subprocess.run(["git", "ls-files", "-s", "gpuopt"], cwd=REPO,
                             capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip(f"not a git checkout ({tracked.stderr.strip()})")
    links = [ln.split("\t")[1] for ln in tracked.stdout.splitlines() if ln.startswith("120000")]
    assert links == [], "symlinks inside the package"
    for layer in LAYERS:
        real = PKG / layer
        assert real.is_dir() and not real.is_symlink(), layer
        assert (real / "__init__.py").is_file(), layer
        root = REPO / layer
        if root.is_symlink():
            assert root.resolve() == real.resolve(), layer


# -- the store boundary: every query lives in orchestrator/store/ -----------------------
STORE = PKG / "orchestrator" / "store"
SQL_MODULES = {"sqlalchemy", "sqlmodel", "psycopg", "sqlite3", "alembic"}
# Calls that run a query or change rows through a session or connection.
QUERY_CALLS = {"execute", "exec", "scalar", "scalars", "query", "add", "add_all", "get",
               "delete", "flush", "merge", "executemany"}
# Outside the store, only these may touch a database driver or SQLAlchemy, each for why:
SQL_ALLOWED = {
    # The leader lock: a PostgreSQL advisory lock on its own psycopg connection; it holds
    # no data and reads no table.
    "orchestrator/daemon/leadership.py",
}


def _session_like(node: ast.expr) -> bool:
    """``session``, ``conn``, ``self.session``, ``self._conn``, ... (the receiver's name)."""
    name = node.id if isinstance(node, ast.Name) else (
        node.attr if isinstance(node, ast.Attribute) else "")
    return name.lstrip("_") in {"session", "conn", "connection", "cursor", "db"}


def _store_leaks(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [f"{path.name}:{node.lineno} imports {n}" for n in names
                  if n.split(".")[0] in SQL_MODULES]
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in QUERY_CALLS and _session_like(node.func.value)):
            found.append(f"{path.name}:{node.lineno} calls .{node.func.attr}() on a session")
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_every_query_lives_in_the_store(layer: str) -> None:
    found = [f"{p.relative_to(PKG)}: {f}" for p in _python_files(PKG / layer)
             if STORE not in p.parents and str(p.relative_to(PKG)) not in SQL_ALLOWED
             for f in _store_leaks(p)]
    assert found == []


def test_the_store_check_sees_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text("from sqlalchemy import select\nimport sqlmodel\n"
                   "def f(store, session):\n    session.execute(select(1))\n"
                   "    with store.session() as s2:\n        pass\n    session.add(1)\n",
                   encoding="utf-8")
    found = _store_leaks(bad)
    assert any("imports sqlalchemy" in f for f in found)
    assert any("imports sqlmodel" in f for f in found)
    assert any(".execute()" in f for f in found) and any(".add()" in f for f in found)
    assert not any(".session()" in f for f in found)  # opening a session is not a query
