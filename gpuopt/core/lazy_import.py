"""Heavy dependencies named at a module's top, imported on first use.

The pattern of SkyPilot's ``sky/adaptors/common.py`` (``LazyImport``): a module writes

    boto3 = LazyModule("boto3", extra="aws")

beside its other imports and uses ``boto3.client(...)`` in its functions; ``boto3`` is
imported the first time an attribute is read, so ``gpuopt --help`` (and every module
that merely imports the adapter) never pays for a cloud SDK, SkyPilot or matplotlib,
and the module's dependencies are still visible at its top instead of buried in its
functions. An attribute that is not an attribute of the module is taken as a submodule
(``google.cloud.compute_v1``, ``matplotlib.pyplot``) and is itself lazy.

Nothing is cached on the object: the import system's own ``sys.modules`` is the cache,
so there is no module-level mutable state and a test may monkeypatch ``sys.modules``.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

# The module attributes a lazy module passes on (other dunders are Python's probes).
_MODULE_DUNDERS = frozenset({"__version__", "__file__", "__path__"})


def _findable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ImportError:
        return False


class LazyModule:
    """A module imported on first attribute access (see the module docstring).

    ``extra``: the ``pip install 'gpuopt[<extra>]'`` that provides it, named in the
    ImportError raised when the module is not installed."""

    __slots__ = ("_extra", "_name")

    def __init__(self, name: str, extra: str = "") -> None:
        object.__setattr__(self, "_name", name)
        object.__setattr__(self, "_extra", extra)

    @property
    def module_name(self) -> str:
        return str(object.__getattribute__(self, "_name"))

    def load(self) -> ModuleType:
        """The module itself, imported now if it was not already."""
        name = self.module_name
        extra = object.__getattribute__(self, "_extra")
        try:
            return importlib.import_module(name)
        except ImportError as err:
            if extra:
                raise ImportError(f"{name} is not installed: pip install "
                                  f"'gpuopt[{extra}]'") from err
            raise

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__") and attr not in _MODULE_DUNDERS:
            raise AttributeError(attr)  # copy, pickle and typing probes: not the module's
        module = self.load()
        if hasattr(module, attr):
            return getattr(module, attr)
        sub = f"{self.module_name}.{attr}"
        if hasattr(module, "__path__") and _findable(sub):  # a package's submodule
            return LazyModule(sub, object.__getattribute__(self, "_extra"))
        raise AttributeError(f"module {self.module_name!r} has no attribute {attr!r}")

    def __setattr__(self, attr: str, value: object) -> None:
        raise AttributeError(f"{self.module_name} is a lazy module: set attributes on "
                             f"the module itself")

    def __repr__(self) -> str:
        return f"LazyModule({self.module_name!r})"


def load_all(*modules: LazyModule) -> None:
    """Import ``modules`` now (a command that needs them fails before it starts work)."""
    for module in modules:
        module.load()


def lazy_attributes(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A package's ``__getattr__`` (PEP 562) that imports ``where[name]`` (a module) on
    first access of ``name`` and returns its attribute ``name``: the package's
    ``__init__`` names what it exports without importing its heavy modules."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
