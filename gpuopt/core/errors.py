"""The error types of gpuopt: one root, and the one error a user can act on.

Every exception class gpuopt defines derives from :class:`GpuoptError`
(tests/core/test_error_root.py checks it), so a caller can tell gpuopt's own failures from a
library's or a bug's. Errors are raised, never returned as values.

Every layer raises a subclass of :class:`UserError` for problems the user can fix
(bad YAML, unknown GPU, missing credentials). The CLI prints the message, without a
traceback, and exits with ``exit_code``. The other subclasses of :class:`GpuoptError` are
internal: a caller in gpuopt handles them (a launch that failed, a step that failed).
"""

from __future__ import annotations


class GpuoptError(Exception):
    """The root of every exception class gpuopt defines."""


class UserError(GpuoptError):
    """A problem the user can fix; ``str(err)`` says what to fix."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
