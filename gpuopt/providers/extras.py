"""The optional extras gpuopt installs on request, and the check that names the missing one.

The core install (``pip install gpuopt``) plans on the embedded snapshot and runs jobs
with the local executor; each cloud's SDK and SkyPilot come as extras, as SkyPilot
ships its own clouds: ``gpuopt[aws]``, ``[gcp]``, ``[azure]``, ``[skypilot]``, ``[all]``.
A command that needs one checks for it first (:func:`require_extra`) and says which
``pip install`` to run instead of failing deep inside with an ImportError.
"""

from __future__ import annotations

import importlib.util

from gpuopt.core.errors import UserError
from gpuopt.providers.clouds import get_cloud

SKYPILOT_MODULES = ("sky",)  # the 'skypilot' extra; each cloud's extra is in the registry


def extra_modules(extra: str) -> tuple[str, ...]:
    """The modules ``extra`` provides (pyproject.toml's optional-dependencies): SkyPilot's,
    or a registered cloud's SDK (providers/clouds.py ``sdk_modules``)."""
    return SKYPILOT_MODULES if extra == "skypilot" else get_cloud(extra).sdk_modules


class MissingExtra(UserError):
    """An optional dependency group is not installed (exit code 2)."""

    def __init__(self, message: str, extra: str) -> None:
        super().__init__(message, exit_code=2)
        self.extra = extra


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or sys.modules[x] = None
        return False


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` that cannot be imported (without importing them)."""
    return [m for m in extra_modules(extra) if not _installed(m)]


def install_hint(*extras: str) -> str:
    return f"pip install 'gpuopt[{','.join(extras)}]'"


def require_extra(extra: str, purpose: str) -> None:
    """Raise :class:`MissingExtra` naming the ``pip install`` when ``extra`` is missing."""
    missing = missing_modules(extra)
    if missing:
        raise MissingExtra(
            f"{purpose} needs the {extra!r} extra ({', '.join(missing)} not installed): "
            f"run {install_hint(extra)}",
            extra,
        )
