"""The one error type a user can act on.

Every layer raises a subclass of :class:`UserError` for problems the user can fix
(bad YAML, unknown GPU, missing credentials). The CLI prints the message, without a
traceback, and exits with ``exit_code``.
"""

from __future__ import annotations


class UserError(Exception):
    """A problem the user can fix; ``str(err)`` says what to fix."""

    exit_code: int = 1

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code
