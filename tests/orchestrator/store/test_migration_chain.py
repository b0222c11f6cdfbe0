"""The migration history is one straight line in file order (docs/migrations.md), and a
database written before the renumbering (holding an old revision id) upgrades to head
with every migration it had not run yet.

The chain checks read the revision files themselves (``revision`` / ``down_revision``),
not Alembic's graph, so a branch, a gap or an unknown parent is named plainly."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from gpuopt.orchestrator.store.migrate import (
    MAX_REVISION_ID_LENGTH,
    MIGRATIONS_DIR,
    RENAMED_REVISIONS,
    REVISION_ID_PATTERN,
    current_revision,
    next_revision_id,
)
from gpuopt.orchestrator.store.migrations import HEAD

VERSIONS = MIGRATIONS_DIR / "versions"


def _assigned(path: Path, name: str) -> object:
    for node in ast.parse(path.read_text()).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name):
            return ast.literal_eval(node.value)
    raise AssertionError(f"{path.name} assigns no {name}")


def revision_files() -> dict[str, tuple[str, str | None]]:
    """file stem -> (revision, down_revision), for every revision file in versions/."""
    found: dict[str, tuple[str, str | None]] = {}
    for path in sorted(VERSIONS.glob("*.py")):
        if path.name == "__init__.py":
            continue
        revision, down = _assigned(path, "revision"), _assigned(path, "down_revision")
        assert isinstance(revision, str), f"{path.name}: revision must be one string"
        assert down is None or isinstance(down, str), (
            f"{path.name}: down_revision must be one id or None (a tuple is a merge)")
        for name in ("branch_labels", "depends_on"):
            assert _assigned(path, name) is None, f"{path.name}: {name} must be None"
        found[path.stem] = (revision, down)
    return found


def chain_problems(files: dict[str, tuple[str, str | None]]) -> list[str]:
    """Everything that keeps ``files`` from being one line 0001_.. 0002_.. in file order."""
    problems = []
    ids = {revision for revision, _ in files.values()}
    for stem, (revision, down) in files.items():
        if revision != stem:
            problems.append(f"{stem}.py: revision {revision!r} is not the file's stem")
        if not re.fullmatch(REVISION_ID_PATTERN, revision) or len(
                revision) > MAX_REVISION_ID_LENGTH:
            problems.append(f"{stem}.py: revision {revision!r} is not NNNN_<slug> "
                            f"(at most {MAX_REVISION_ID_LENGTH} characters)")
        if down is not None and down not in ids:
            problems.append(f"{stem}.py: unknown parent {down!r}")
    children: dict[str | None, list[str]] = {}
    for revision, down in files.values():
        children.setdefault(down, []).append(revision)
    for parent, kids in children.items():
        if len(kids) > 1:
            problems.append(f"a branch: {sorted(kids)} all revise {parent!r}")
    walked: list[str] = []
    at: str | None = None
    while len(children.get(at, [])) == 1 and len(walked) <= len(files):
        at = children[at][0]
        walked.append(at)
    if len(walked) != len(files):
        problems.append(f"base to head walks {walked}, not all {len(files)} revisions")
    in_file_order = sorted(files)
    if walked != in_file_order:
        problems.append(f"the chain {walked} is not the file order {in_file_order}")
    numbers = [int(stem[:4]) for stem in in_file_order if stem[:4].isdigit()]
    if numbers != list(range(1, len(in_file_order) + 1)):
        problems.append(f"the numbers {numbers} are not 1..{len(in_file_order)} (a gap)")
    return problems


def test_the_history_is_one_line_in_file_order() -> None:
    files = revision_files()
    assert chain_problems(files) == []
    assert sorted(files)[-1] == HEAD


@pytest.mark.parametrize(("files", "problem"), [
    ({"0001_a": ("0001_a", None), "0002_b": ("0002_b", "0001_a"),
      "0003_c": ("0003_c", "0001_a")}, "a branch"),
    ({"0001_a": ("0001_a", None), "0003_c": ("0003_c", "0001_a")}, "a gap"),
    ({"0001_a": ("0001_a", None), "0002_b": ("0002_b", "0009_x")}, "unknown parent"),
    ({"0001_a": ("0001_a", None), "0002_b": ("0002_b", "0003_c"),
      "0003_c": ("0003_c", "0001_a")}, "is not the file order"),
    ({"0001_a": ("0001_a", None), "0002_b": ("0002", "0001_a")}, "is not the file's stem"),
    ({"0001_a": ("0001_a", None), "0002_B": ("0002_B", "0001_a")}, "is not NNNN_<slug>"),
])
def test_the_check_names_each_kind_of_break(files: dict[str, tuple[str, str | None]],
                                            problem: str) -> None:
    assert any(problem in p for p in chain_problems(files)), chain_problems(files)


def test_renamed_ids_map_onto_the_chain_exactly() -> None:
    files = revision_files()
    assert set(RENAMED_REVISIONS.values()) <= set(files)
    assert not set(RENAMED_REVISIONS) & set(files), "an old id is also a new one"
    assert len(set(RENAMED_REVISIONS.values())) == len(RENAMED_REVISIONS)


def test_the_revision_command_names_the_next_file() -> None:
    assert next_revision_id("0013_users", "Add GPU quotas!") == "0014_add_gpu_quotas"
    assert next_revision_id(None, "price history") == "0001_price_history"
    long = next_revision_id("0013_users", "a very long message " * 5)
    assert len(long) <= MAX_REVISION_ID_LENGTH and not long.endswith("_")


def _schema(engine: sa.Engine) -> dict[str, list[str]]:
    inspector = sa.inspect(engine)
    return {table: sorted(c["name"] for c in inspector.get_columns(table))
            for table in sorted(inspector.get_table_names())}


# Every id a database could hold before the renumbering, with the migration it names now.
OLD_IDS = sorted({**{stem: stem for stem in revision_files()},
                  **RENAMED_REVISIONS}.items())


@pytest.mark.parametrize(("old", "new"), OLD_IDS, ids=[old for old, _ in OLD_IDS])
def test_a_database_at_an_old_id_upgrades_to_head(db_url: str, old: str, new: str) -> None:
    """Stop at ``new``, write the id an older gpuopt wrote there, open: the store ends at
    head with the same schema as a new one (no migration skipped, none run twice)."""
    from alembic import command

    from gpuopt.orchestrator.store import open_store
    from gpuopt.orchestrator.store.migrate import alembic_config

    engine = sa.create_engine(db_url)
    try:
        command.upgrade(alembic_config(engine), new)
        with engine.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = :old"), {"old": old})
        store = open_store(db_url)
        try:
            assert current_revision(store.engine) == HEAD
            upgraded = _schema(store.engine)
            command.downgrade(alembic_config(store.engine), "base")
        finally:
            store.close()
        fresh = open_store(db_url)
        try:
            assert _schema(fresh.engine) == upgraded
        finally:
            fresh.close()
    finally:
        engine.dispose()
