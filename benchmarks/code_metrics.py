"""Cyclomatic complexity and size of the functions in a package (radon's Python API).

Run: .venv/bin/python benchmarks/code_metrics.py [PACKAGE_DIR ...]
(default: gpuopt/policies gpuopt/orchestrator). Per directory: the number of functions and
methods, their mean complexity, how many are above 20, the most complex, and how many
are longer than 60 lines. ``--list`` also prints every function above either limit.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Function

COMPLEXITY_LIMIT = 20
LINES_LIMIT = 60


@dataclass(frozen=True, slots=True)
class FunctionFigures:
    path: str
    name: str
    complexity: int
    lines: int


def function_figures(root: Path) -> list[FunctionFigures]:
    """Every function and method under ``root`` (closures and nested classes included)."""
    out: list[FunctionFigures] = []
    for path in sorted(root.rglob("*.py")):
        # radon's blocks: the top-level functions, the classes and their methods
        stack = [(block, False) for block in cc_visit(path.read_text(encoding="utf-8"))]
        while stack:
            block, nested = stack.pop()
            if isinstance(block, Function):
                out.append(FunctionFigures(str(path), block.fullname, block.complexity,
                                           block.endline - block.lineno + 1))
                stack += [(closure, True) for closure in block.closures]
                continue
            if nested:  # a nested class: radon's blocks leave its methods out
                stack += [(method, True) for method in block.methods]
            stack += [(inner, True) for inner in block.inner_classes]
    return out


def over_limits(figures: list[FunctionFigures]) -> list[FunctionFigures]:
    return [f for f in figures if f.complexity > COMPLEXITY_LIMIT or f.lines > LINES_LIMIT]


def summary(root: Path, figures: list[FunctionFigures]) -> str:
    if not figures:
        return f"{root}: no functions"
    worst = max(figures, key=lambda f: f.complexity)
    mean = sum(f.complexity for f in figures) / len(figures)
    above = sum(f.complexity > COMPLEXITY_LIMIT for f in figures)
    long = sum(f.lines > LINES_LIMIT for f in figures)
    return (f"{root}: {len(figures)} functions, mean CC {mean:.2f}, "
            f"{above} above CC {COMPLEXITY_LIMIT}, max CC {worst.complexity} ({worst.name}), "
            f"{long} over {LINES_LIMIT} lines")


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    roots = [Path(a) for a in args] or [Path("gpuopt/policies"), Path("gpuopt/orchestrator")]
    for root in roots:
        figures = function_figures(root)
        print(summary(root, figures))
        if "--list" in sys.argv:
            for f in sorted(over_limits(figures), key=lambda f: -f.complexity):
                print(f"  CC {f.complexity:3d}  {f.lines:4d} lines  {f.path}:{f.name}")


if __name__ == "__main__":
    main()
