"""Every SkyPilot name gpuopt uses exists in the installed release, with a signature that
takes the arguments gpuopt passes: an upgrade that renames or reshapes one fails here,
not at a user's first launch.

The names are read from the adapter's source (jobs/executors/sky_sdk.py reaches each as
``module.name``, ``module`` one of its ``LazyModule``s), so a new call is checked without
anyone listing it here.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from gpuopt.jobs.executors import sky_errors, sky_sdk

pytest.importorskip("sky", reason="SkyPilot is not installed (the skypilot extra)")

REPO = Path(__file__).resolve().parents[3]
ADAPTER = REPO / "gpuopt" / "jobs" / "executors" / "sky_sdk.py"
PACKAGES = ("core", "jobs", "policies", "orchestrator", "providers", "gpuopt")


@dataclass(frozen=True)
class Use:
    line: int
    module: str
    path: tuple[str, ...]  # attribute chain after the module
    call: tuple[int, tuple[str, ...]] | None  # (positional count, keyword names)

    def __str__(self) -> str:
        return f"sky_sdk.py:{self.line} {self.module}.{'.'.join(self.path)}"


def lazy_modules(source: str, constants: dict[str, str]) -> dict[str, str]:
    """The module-level ``name = LazyModule(CONST or "module", ...)`` of ``source``:
    name -> module."""
    out = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "LazyModule"):
            arg = node.value.args[0]
            module = constants[arg.id] if isinstance(arg, ast.Name) else ast.literal_eval(arg)
            for target in node.targets:
                assert isinstance(target, ast.Name)
                out[target.id] = module
    return out


def uses(source: str, constants: dict[str, str]) -> list[Use]:
    """Each ``lazy_module.a.b`` chain in ``source``, with the call made on it, if any."""
    tree = ast.parse(source)
    lazies = lazy_modules(source, constants)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
                and node.id in lazies and isinstance(parents.get(node), ast.Attribute)):
            continue
        module = lazies[node.id]
        if module.split(".")[0] != "sky":
            continue  # requests: not SkyPilot's
        path: list[str] = []
        top: ast.AST = node
        while isinstance(parents.get(top), ast.Attribute | ast.Subscript):
            parent = parents[top]
            if isinstance(parent, ast.Subscript):
                break  # StorageMode[mode]: the chain names the class
            path.append(parent.attr)  # type: ignore[attr-defined]
            top = parent
        if path == ["load"]:
            continue  # the module itself
        call = None
        parent = parents.get(top)
        if isinstance(parent, ast.Call) and parent.func is top:
            call = (len(parent.args), tuple(k.arg for k in parent.keywords if k.arg))
        found.append(Use(node.lineno, module, tuple(path), call))
    return found


def problems(found: list[Use]) -> list[str]:
    out = []
    for use in found:
        try:
            obj = importlib.import_module(use.module)
        except ImportError as err:
            out.append(f"{use}: no module ({err})")
            continue
        for i, name in enumerate(use.path):
            if not hasattr(obj, name):
                out.append(f"{use}: {'.'.join(use.path[:i + 1])} is not in SkyPilot "
                           f"{sky_sdk.version()}")
                break
            obj = getattr(obj, name)
        else:
            if use.call is not None:
                npos, keywords = use.call
                try:
                    inspect.signature(obj).bind(*range(npos), **dict.fromkeys(keywords))
                except TypeError as err:
                    out.append(f"{use}: the call does not fit its signature ({err})")
    return out


def _adapter_uses() -> list[Use]:
    constants = {name: getattr(sky_sdk, name) for name in dir(sky_sdk)
                 if isinstance(getattr(sky_sdk, name), str) and name.isupper()}
    return uses(ADAPTER.read_text(encoding="utf-8"), constants)


def test_every_name_the_adapter_uses_is_in_the_installed_skypilot() -> None:
    found = _adapter_uses()
    called = {u.path[0] for u in found if u.module == sky_sdk.SDK}
    # the calls the executor and submit depend on are among those read and checked
    assert {"launch", "get", "api_status", "status", "queue", "down", "tail_logs",
            "enabled_clouds", "optimize", "stream_and_get", "api_cancel"} <= called
    assert problems(found) == []


def test_the_check_catches_a_renamed_function_and_a_changed_signature() -> None:
    source = ("sdk = LazyModule(SDK)\nsky = LazyModule(SKY)\n"
              "def f():\n"
              "    sdk.enabled_clouds_of_old()\n"
              "    sdk.launch(" + ", ".join(["1"] * 40) + ")\n"
              "    sdk.down('c', purge_all=True)\n"
              "    sky.StatusRefreshMode.SOMETIMES\n")
    found = problems(uses(source, {"SDK": sky_sdk.SDK, "SKY": sky_sdk.SKY}))
    assert len(found) == 4
    assert found[0].startswith("sky_sdk.py:4 sky.client.sdk.enabled_clouds_of_old: ")
    assert "enabled_clouds_of_old is not in SkyPilot 0." in found[0]
    assert "does not fit its signature" in found[1] and "does not fit" in found[2]
    assert "StatusRefreshMode.SOMETIMES is not in SkyPilot" in found[3]


def test_the_record_fields_and_members_gpuopt_reads_exist() -> None:
    for (module, cls), fields in sky_sdk.RECORD_FIELDS.items():
        model = getattr(importlib.import_module(module), cls)
        missing = set(fields) - set(model.model_fields)
        assert not missing, f"{module}.{cls} lacks {missing}"
    for (module, cls), members in sky_sdk.MEMBERS.items():
        klass = getattr(importlib.import_module(module), cls)
        assert [m for m in members if not hasattr(klass, m)] == [], f"{module}.{cls}"


def test_the_states_and_exceptions_gpuopt_names_are_skypilots() -> None:
    import sky
    from sky.server.requests.request_names import RequestName
    from sky.server.requests.requests import RequestStatus

    assert sky_sdk.launch_request_name() == f"sky.{RequestName.CLUSTER_LAUNCH.value}"
    assert {"PENDING", "WAITING", "RUNNING", "SUCCEEDED", "FAILED"} <= {
        s.value for s in RequestStatus}
    assert {"INIT", "UP", "STOPPED"} <= {s.value for s in sky.ClusterStatus}
    assert {"INIT", "PENDING", "SETTING_UP", "RUNNING", "SUCCEEDED", "FAILED",
            "FAILED_SETUP", "CANCELLED"} <= {s.value for s in sky.JobStatus}
    from sky import exceptions

    assert [n for n in sky_errors._REFUSED if not hasattr(exceptions, n)] == []


def test_no_other_gpuopt_module_imports_skypilot_at_run_time() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            if path == ADAPTER:
                continue
            tree = ast.parse(path.read_text(encoding="utf-8"))
            typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                           and ast.unparse(node.test) == "TYPE_CHECKING"
                           for n in ast.walk(node)}
            for node in ast.walk(tree):
                if id(node) in typing_only:
                    continue
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
                if any(n == "sky" or n.startswith("sky.") for n in names):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_the_pin_is_the_range_the_adapter_is_written_for_and_installed() -> None:
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    extras = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"]["optional-dependencies"]
    assert extras["skypilot"] == [f"skypilot{sky_sdk.SKYPILOT_PIN}"]
    pin = SpecifierSet(sky_sdk.SKYPILOT_PIN)
    assert Version(sky_sdk.version()) in pin
    assert Version("0.15.0") not in pin  # an upper bound: the next minor is tried first
