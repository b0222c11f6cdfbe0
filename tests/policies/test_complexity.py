"""No function in gpuopt/policies is above cyclomatic complexity 20 or longer than 60
lines (radon's figures, closures and methods included)."""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

from tests.conftest import PACKAGE_ROOT

POLICIES = PACKAGE_ROOT / "policies"
MAX_COMPLEXITY = 20
MAX_LINES = 60


def functions(path: Path) -> list[Function]:
    """Every function and method of a module; radon's blocks leave out the methods of
    nested classes and the closures, so those are walked here."""
    found: list[Function] = []
    stack: list[tuple[Function | Class, bool]] = [
        (b, False) for b in cc_visit(path.read_text(encoding="utf-8"))]
    while stack:
        block, nested = stack.pop()
        if isinstance(block, Function):
            found.append(block)
            stack += [(c, True) for c in block.closures]
            continue
        if nested:
            stack += [(m, True) for m in block.methods]
        stack += [(c, True) for c in block.inner_classes]
    return found


def test_the_walk_sees_methods_closures_and_nested_classes(tmp_path: Path) -> None:
    source = (
        "def outer(x):\n    def inner(y):\n        return 1 if y else 2\n    return inner\n"
        "class A:\n    def m(self):\n        pass\n    class B:\n        def n(self):\n"
        "            pass\n")
    probe = tmp_path / "probe.py"
    probe.write_text(source, encoding="utf-8")
    assert sorted(f.name for f in functions(probe)) == ["inner", "m", "n", "outer"]


def test_no_policy_function_is_too_complex_or_too_long() -> None:
    modules = sorted(POLICIES.rglob("*.py"))
    assert len(modules) > 20  # the package is where the test thinks it is
    over = [
        f"{path.relative_to(POLICIES)}:{f.fullname} (CC {f.complexity}, "
        f"{f.endline - f.lineno + 1} lines)"
        for path in modules for f in functions(path)
        if f.complexity > MAX_COMPLEXITY or f.endline - f.lineno + 1 > MAX_LINES
    ]
    assert over == [], over
