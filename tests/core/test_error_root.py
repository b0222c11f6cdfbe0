"""Every exception class gpuopt defines derives from GpuoptError (gpuopt/core/errors.py):
a new one that derives from Exception, ValueError, ... straight away fails here."""

from __future__ import annotations

import importlib
import inspect

from gpuopt.core.errors import GpuoptError, UserError
from tests.conftest import PACKAGE_ROOT

# Modules not imported here: Alembic's env.py and revisions run migrations on import.
NOT_IMPORTED = ("gpuopt.orchestrator.store.migrations",)
# Exception classes that cannot derive from GpuoptError, with why.
OUTSIDE_THE_ROOT = {
    # A BaseException on purpose: no `except Exception` between the upload's reader and
    # the handler that answers 413 may swallow it.
    "gpuopt.orchestrator.api.app._TooLarge",
    # The GPU sampler is shipped to the node and run there as a script of its own, where
    # no gpuopt package is installed (jobs/telemetry/sampler.py imports nothing of it).
    "gpuopt.jobs.telemetry.sampler._Stop",
}


def product_modules() -> list[str]:
    names = []
    for path in sorted(PACKAGE_ROOT.rglob("*.py")):
        parts = path.relative_to(PACKAGE_ROOT.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts)
        if parts[-1] != "__main__" and not name.startswith(NOT_IMPORTED):
            names.append(name)
    return names


def exception_classes() -> dict[str, type[BaseException]]:
    found = {}
    for name in product_modules():
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if (inspect.isclass(value) and issubclass(value, BaseException)
                    and value.__module__ == name):
                found[f"{name}.{attr}"] = value
    return found


def test_every_exception_class_derives_from_gpuopt_error() -> None:
    classes = exception_classes()
    assert len(classes) > 20  # the walk found the product's classes
    outside = sorted(n for n, c in classes.items()
                     if not issubclass(c, GpuoptError) and n not in OUTSIDE_THE_ROOT)
    assert outside == []
    assert set(OUTSIDE_THE_ROOT) <= set(classes)  # no stale entry


def test_user_error_is_under_the_root() -> None:
    assert issubclass(UserError, GpuoptError)
    assert UserError("fix it", exit_code=2).exit_code == 2
