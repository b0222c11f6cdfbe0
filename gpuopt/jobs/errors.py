"""Errors raised while reading a job spec."""

from __future__ import annotations

from gpuopt.core.errors import UserError


class SpecError(UserError):
    """One or more problems in a job.yaml; each line reads `file:line path: what to fix`."""

    exit_code = 2

    def __init__(self, problems: list[str] | str) -> None:
        lines = [problems] if isinstance(problems, str) else list(problems)
        self.problems: tuple[str, ...] = tuple(lines)
        super().__init__("\n".join(lines), exit_code=2)
