"""The cloud registry (providers/clouds.py) is the only list of clouds.

- no product module spells a list of cloud names by hand (a tuple/list/set/dict literal
  or a ``Literal[...]`` naming two or more registered clouds);
- no product module outside the registry and the adapter folders spells a cloud's name
  at all (``if cloud == "aws"``, ``{"aws": ...}``, ``root / "aws"``): what a cloud can do
  is a capability in its registry entry (the exceptions are listed with their reason);
- a cloud added to the registry (here: monkeypatched) is accepted everywhere the clouds
  are checked: the job spec, the offer integrity check, the configuration, the adapter
  lookup, the SkyPilot task builder, the default hazard and the chart colours.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import MappingProxyType

import pytest

from gpuopt.providers import clouds
from gpuopt.providers.clouds import CLOUDS, Cloud, cloud_names

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("core", "providers", "jobs", "policies", "orchestrator")
REGISTRY = REPO / "gpuopt" / "providers" / "clouds.py"


def _hand_spelled(path: Path, names: frozenset[str]) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: dict[int, str] = {}
    for node in ast.walk(tree):
        items: list[ast.expr | None] = []
        if isinstance(node, ast.Tuple | ast.List | ast.Set):
            items = list(node.elts)
        elif isinstance(node, ast.Dict):
            items = list(node.keys)
        elif (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name)
              and node.value.id == "Literal"):
            s = node.slice
            items = list(s.elts) if isinstance(s, ast.Tuple) else [s]
        spelled = {i.value for i in items if isinstance(i, ast.Constant) and i.value in names}
        if len(spelled) >= 2:
            found.setdefault(node.lineno, f"{path.name}:{node.lineno} {sorted(spelled)}")
    return [found[line] for line in sorted(found)]


def test_no_module_spells_the_cloud_list_by_hand() -> None:
    names = frozenset(cloud_names())
    found = [
        f for folder in PRODUCT for p in sorted((REPO / folder).rglob("*.py"))
        if p != REGISTRY and "migrations" not in p.parts for f in _hand_spelled(p, names)
    ]
    assert found == []


# Modules outside the registry and the adapter folders that may spell a cloud's name,
# each with why it is not a branch on a cloud.
SPELLS_A_CLOUD_NAME = {
    "gpuopt/orchestrator/daemon/logs.py":
        "'azure' is the Azure SDK's logger name (quietened with urllib3's and msal's)",
    "gpuopt/orchestrator/simulate/daemon_engine.py":
        "the simulated daemon's single cloud and region (a scenario, not a branch)",
}


def _adapter_folders() -> set[Path]:
    return {REPO / "gpuopt" / "providers" / c.adapter_module.split(".")[2]
            for c in clouds.registered_clouds() if c.has_adapter}


def _cloud_names_spelled(path: Path, names: frozenset[str]) -> list[str]:
    """Every string constant that is a registered cloud's name (docstrings are prose)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path.name
    return [f"{shown}:{node.lineno} {node.value!r}"
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value in names]


def _product_outside_the_registry() -> list[Path]:
    adapters = _adapter_folders()
    return [p for p in sorted((REPO / "gpuopt").rglob("*.py"))
            if p != REGISTRY and "migrations" not in p.parts
            and not any(a in p.parents for a in adapters)]


def test_no_cloud_name_is_spelled_outside_the_registry_and_its_adapters() -> None:
    names = frozenset(cloud_names())
    found = [f for p in _product_outside_the_registry()
             if str(p.relative_to(REPO)) not in SPELLS_A_CLOUD_NAME
             for f in _cloud_names_spelled(p, names)]
    assert found == []


def test_only_the_registry_reaches_into_an_adapter_folder() -> None:
    """The executor, the planner and the SkyPilot catalog reader read a cloud's facts
    from its registry entry, never from its adapter's modules."""
    adapters = {f"gpuopt.providers.{a.name}" for a in _adapter_folders()}
    found = []
    for p in _product_outside_the_registry():
        for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            if any(n == a or n.startswith(a + ".") for n in names for a in adapters):
                found.append(f"{p.relative_to(REPO)}:{node.lineno}")
    assert found == []


def test_each_allowed_exception_still_spells_a_cloud_name() -> None:
    """An exception that no longer applies is removed from the list, not kept."""
    names = frozenset(cloud_names())
    for rel, why in SPELLS_A_CLOUD_NAME.items():
        assert why and _cloud_names_spelled(REPO / rel, names), rel


def test_the_name_check_sees_branches(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('"""aws is named in prose."""\nif cloud == "gcp":\n    pass\n'
                   'X = {"azure": 1}\nY = root / "aws"\nZ = "lambda" if a else "b"\n',
                   encoding="utf-8")
    found = _cloud_names_spelled(bad, frozenset(cloud_names()))
    assert sorted(f.split(":", 1)[1] for f in found) == [
        "2 'gcp'", "4 'azure'", "5 'aws'", "6 'lambda'"]


def test_the_registry_is_read_at_call_time() -> None:
    """``from ...clouds import CLOUDS`` binds the mapping at import: a cloud registered
    later (or monkeypatched) would be missed there. Modules call the functions instead."""
    bound = []
    for folder in PRODUCT:
        for p in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if (isinstance(node, ast.ImportFrom) and node.module == "gpuopt.providers.clouds"
                        and any(a.name == "CLOUDS" for a in node.names)):
                    bound.append(f"{p.relative_to(REPO)}:{node.lineno}")
    assert bound == []


def test_the_hand_spelled_check_sees_what_it_forbids(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('from typing import Literal\nA = ("aws", "gcp")\nB = {"aws": 1, "azure": 2}\n'
                   'C: Literal["gcp", "azure"]\nD = ["aws"]\nE = "aws" in ("x", "gcp")\n',
                   encoding="utf-8")
    found = _hand_spelled(bad, frozenset(cloud_names()))
    assert [f.split(":")[1].split()[0] for f in found] == ["2", "3", "4"]


NEW = Cloud(name="newcloud", display_name="NewCloud", adapter_module="gpuopt.providers.aws",
            adapter_class="AwsProvider", skypilot_name="newcloud", chart_color="#123456",
            default_preemptions_per_hour=0.5)


@pytest.fixture
def with_new_cloud(monkeypatch: pytest.MonkeyPatch) -> Cloud:
    monkeypatch.setattr(clouds, "CLOUDS", MappingProxyType({**CLOUDS, NEW.name: NEW}))
    return NEW


def _offer(cloud: str) -> object:
    from gpuopt.providers.offer import Market, Offer

    return Offer(cloud, "us-east-1", None, "gpu_1x_a10", "A10G", 1, 22.35, 30, 200,
                 Market.SPOT, Decimal("0.75"), datetime(2026, 1, 1, tzinfo=UTC),
                 f"api:{cloud}")


def test_a_registered_cloud_is_accepted_everywhere(with_new_cloud: Cloud) -> None:
    from gpuopt.jobs.loader import parse_job_spec
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.report.charts import cloud_color, cloud_label
    from gpuopt.policies.hazard import preemptions_per_hour
    from gpuopt.providers.integrity import offer_problems
    from gpuopt.providers.registry import load_provider

    spec = parse_job_spec("model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n"
                          "resources:\n  clouds: [newcloud]\n", "job.yaml")
    assert spec.resources.clouds == ("newcloud",)
    default = parse_job_spec("model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n",
                             "job.yaml")
    assert default.resources.clouds == (*cloud_names(),) and "newcloud" in cloud_names()
    offer = _offer("newcloud")
    assert offer_problems(offer) == []  # type: ignore[arg-type]
    settings = Settings.model_validate({"clouds": {"enabled": ["newcloud", "aws"]},
                                        "placement": {"preemption_rates": {"aws": 0.1}}})
    assert settings.clouds.poll_clouds() == ("newcloud", "aws")
    assert settings.placement.preemption_rates["newcloud"] == 0.5
    assert preemptions_per_hour(offer) == (0.5, "default")  # type: ignore[arg-type]
    assert (cloud_color("newcloud", 0), cloud_label("newcloud")) == ("#123456", "NewCloud")
    assert cloud_label("unknown-cloud") == "unknown-cloud"
    assert type(load_provider("newcloud")).__name__ == "AwsProvider"
    from gpuopt.jobs.executors.base import AttemptSpec, Placement
    from gpuopt.jobs.executors.sky_task import plan_task

    plan = plan_task(AttemptSpec(job_id="J", attempt=1, run="true", checkpoint_dir="s3://b/c",
                                 placement=Placement("newcloud", "us-east-1", None, "gpu_1x_a10",
                                                     "A10G", 1, True)))
    assert plan.infra == "newcloud/us-east-1"


def test_an_unregistered_cloud_is_refused_everywhere(tmp_path: Path) -> None:
    from gpuopt.jobs.errors import SpecError
    from gpuopt.jobs.loader import parse_job_spec
    from gpuopt.orchestrator.config.load import ConfigError, load_config
    from gpuopt.providers.integrity import offer_problems

    with pytest.raises(SpecError, match="unknown cloud 'newcloud'"):
        parse_job_spec("model:\n  name: llama-2-7b\nworkload:\n  type: finetune\n"
                       "resources:\n  clouds: [newcloud]\n", "job.yaml")
    assert offer_problems(_offer("newcloud")) == ["unknown cloud 'newcloud'"]  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"GPUOPT_CLOUDS_ENABLED: unknown cloud 'newcloud'"):
        load_config(_empty(tmp_path),
                    env={"GPUOPT_CLOUDS_ENABLED": "aws,newcloud"})


def _empty(tmp_path: Path) -> Path:
    path = tmp_path / "gpuopt.toml"
    path.write_text("", encoding="utf-8")
    return path


def test_registry_entries_are_complete() -> None:
    for name, entry in CLOUDS.items():
        assert entry.name == name and entry.display_name and entry.skypilot_name
        assert entry.chart_color.startswith("#") and len(entry.chart_color) == 7
        if entry.sells_spot:
            assert 0 < entry.default_preemptions_per_hour <= 1
        else:  # no spot offer can be preempted
            assert entry.default_preemptions_per_hour == 0
        if entry.has_adapter:
            folder = entry.adapter_module.rsplit(".", 1)[-1]
            assert (REPO / "gpuopt" / "providers" / folder).is_dir()
        else:  # priced from SkyPilot's catalog only: its columns must be known
            assert entry.skypilot_catalog_columns and not entry.adapter_class
    assert replace(CLOUDS["aws"], skypilot_catalog_columns=()).skypilot_zonal is False
    assert CLOUDS["aws"].skypilot_zonal and not CLOUDS["azure"].skypilot_zonal


def test_lambda_sells_no_spot_and_carries_no_default_hazard() -> None:
    """Lambda Cloud sells on-demand and reserved instances only (its instance-types API
    has no spot price), so its default hazard is 0 and it bounds no planner search."""
    from gpuopt.policies.hazard import advisor_hazard, min_hazard

    lam = CLOUDS["lambda"]
    assert not lam.sells_spot and lam.default_preemptions_per_hour == 0
    assert [c.name for c in clouds.registered_clouds() if not c.sells_spot] == ["lambda"]
    assert min_hazard() == advisor_hazard(0) > 0  # lambda's 0 is not a spot hazard


def test_capabilities_point_into_the_adapter_folders() -> None:
    from gpuopt.providers.fabrics import FABRICS, fabric_for

    assert {c for c, _ in FABRICS} == {"aws", "gcp", "azure"}
    for (cloud, itype), fabric in FABRICS.items():
        assert fabric_for(cloud, itype) is fabric
        assert CLOUDS[cloud].fabrics[itype] is fabric
        assert CLOUDS[cloud].fabrics.__class__ is MappingProxyType
    assert fabric_for("newcloud", "p5.48xlarge") is None
    assert CLOUDS["gcp"].skypilot_vm_type("n1-standard-8+1xT4") == "n1-standard-8"
    assert CLOUDS["aws"].skypilot_vm_type("p5.48xlarge") == "p5.48xlarge"
    assert CLOUDS["aws"].skypilot_row_extras("g5g.xlarge") == {"Arch": "arm64"}
    assert CLOUDS["azure"].skypilot_row_extras("Standard_NC6") == {"Generation": "V1,V2"}
    assert CLOUDS["aws"].region_of_zone("us-east-1c") == "us-east-1"
    assert [c.name for c in clouds.zone_id_clouds()] == ["aws"]
    assert [c.name for c in clouds.registered_clouds() if c.skypilot_gpu_rows_apart] == ["gcp"]
    assert CLOUDS["gcp"].skypilot_paired_instance_type("n1-standard-8", "T4", 1) == (
        "n1-standard-8+1xT4")
    assert CLOUDS["gcp"].skypilot_paired_instance_type("a2-highgpu-1g", "A100", 1) == (
        "a2-highgpu-1g")
