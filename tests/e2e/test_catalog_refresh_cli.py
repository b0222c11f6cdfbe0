"""`gpuopt prices refresh --source skypilot-catalog` through the installed console script."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.e2e.test_prices_cli import run

RECORDED = Path(__file__).parents[1] / "providers" / "skypilot_catalog" / "catalog_v8"


def test_refresh_from_recorded_catalogs_of_eight_clouds(tmp_path: Path) -> None:
    r = run(tmp_path, "prices", "refresh", "--source", "skypilot-catalog", "--catalog-dir",
            str(RECORDED))
    assert r.returncode == 0, r.stderr
    for cloud in ("aws", "gcp", "lambda", "runpod", "vast", "nebius", "oci", "cudo"):
        assert f"{cloud}: " in r.stdout and f"{cloud}: 0 new" not in r.stdout, cloud
    shown = run(tmp_path, "prices", "--gpu", "H100", "--cloud", "nebius", "--json")
    assert shown.returncode == 0 and '"source": "catalog vms.csv ' in shown.stdout


def test_a_file_with_an_unknown_column_is_refused_cleanly(tmp_path: Path) -> None:
    root = tmp_path / "cat"
    shutil.copytree(RECORDED, root)
    bad = root / "vast" / "vms.csv"
    lines = bad.read_text(encoding="utf-8").splitlines()
    bad.write_text("\n".join([lines[0] + ",HostingType"] + [x + ",1" for x in lines[1:]])
                   + "\n", encoding="utf-8")
    r = run(tmp_path, "prices", "refresh", "--source", "skypilot-catalog", "--catalog-dir",
            str(root))
    assert r.returncode == 2
    assert "vast/vms.csv: line 1: unknown column 'HostingType' for vast" in r.stdout
    assert "Traceback" not in r.stdout + r.stderr
    assert "nebius: 8 new" in r.stdout  # the other files are stored


def test_bad_source_and_missing_directory(tmp_path: Path) -> None:
    r = run(tmp_path, "prices", "refresh", "--source", "catalog")
    assert r.returncode == 2 and "--source 'catalog'" in r.stderr
    r = run(tmp_path, "prices", "refresh", "--source", "skypilot-catalog", "--catalog-dir",
            str(tmp_path / "nowhere"))
    assert r.returncode == 2 and "not a directory" in r.stderr and "Traceback" not in r.stderr
