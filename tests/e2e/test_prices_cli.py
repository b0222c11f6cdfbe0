"""Drive the installed `gpuopt` console script: prices and config on a fresh home."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

REQUIRED = {
    "cloud",
    "region",
    "zone",
    "instance_type",
    "gpu",
    "gpu_count",
    "gpu_memory_gib",
    "market",
    "price_per_hour",
    "observed_at",
    "source",
}



def run(home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("GPUOPT_")}
    # No cloud credentials from the machine running the tests.
    for var in ("AWS_PROFILE", "AWS_ACCESS_KEY_ID", "GOOGLE_APPLICATION_CREDENTIALS"):
        clean.pop(var, None)
    clean.update({"GPUOPT_HOME": str(home), "COLUMNS": "200", **env})
    return subprocess.run(
        [*gpuopt_command(), *args], capture_output=True, text=True, timeout=120, cwd=home, env=clean
    )


def test_prices_on_a_fresh_home_uses_the_snapshot(tmp_path: Path) -> None:
    r = run(tmp_path, "prices", "--gpu", "A100-80GB", "--market", "spot")
    assert r.returncode == 0, r.stderr
    assert "snapshot" in r.stderr
    assert "A100-80GB" in r.stdout and "spot" in r.stdout
    assert not (tmp_path / "data" / "gpuopt.db").exists()  # reading created nothing


def test_prices_json_shape_and_order(tmp_path: Path) -> None:
    r = run(tmp_path, "prices", "--json", "--gpu", "h100", "--cloud", "aws")
    assert r.returncode == 0, r.stderr
    offers = json.loads(r.stdout)
    assert offers and all(set(o) >= REQUIRED for o in offers)
    assert {o["gpu"] for o in offers} == {"H100"} and {o["cloud"] for o in offers} == {"aws"}
    per_gpu = [o["price_per_hour"] / o["gpu_count"] for o in offers]
    assert per_gpu == sorted(per_gpu)
    assert {o["source"] for o in offers} == {"snapshot"}


def test_prices_max_price_and_bad_filter(tmp_path: Path) -> None:
    r = run(tmp_path, "prices", "--json", "--max-price", "1")
    assert r.returncode == 0, r.stderr
    offers = json.loads(r.stdout)
    assert offers and all(o["price_per_hour"] / o["gpu_count"] <= 1 for o in offers)
    bad = run(tmp_path, "prices", "--gpu", "B300")
    assert bad.returncode == 2 and "unknown GPU" in bad.stderr and "Traceback" not in bad.stderr


def test_refresh_without_credentials_fails_cleanly(tmp_path: Path) -> None:
    # Every polled cloud failing (here: AWS with an empty credential chain) exits 1.
    r = run(
        tmp_path,
        "prices",
        "refresh",
        "--cloud",
        "aws",
        AWS_CONFIG_FILE=str(tmp_path / "none"),
        AWS_SHARED_CREDENTIALS_FILE=str(tmp_path / "none"),
        AWS_EC2_METADATA_DISABLED="true",
    )
    assert r.returncode == 1, r.stdout + r.stderr
    assert "aws: skipped" in r.stdout or "aws: failed" in r.stdout
    assert "Traceback" not in r.stderr


def test_config_init_show_and_refuse_overwrite(tmp_path: Path) -> None:
    r = run(tmp_path, "config", "init")
    assert r.returncode == 0, r.stderr
    cfg = tmp_path / "config.toml"
    assert cfg.exists() and (cfg.stat().st_mode & 0o777) == 0o600
    again = run(tmp_path, "config", "init")
    assert again.returncode == 2 and "--force" in again.stderr
    assert run(tmp_path, "config", "init", "--force").returncode == 0
    show = run(
        tmp_path,
        "config",
        "show",
        GPUOPT_SMTP_PASSWORD="s3cret-value",
        GPUOPT_DAEMON_POLL_INTERVAL="5m",
    )
    assert show.returncode == 0, show.stderr
    assert "s3cret-value" not in show.stdout + show.stderr
    parsed = tomllib.loads(show.stdout)
    assert parsed["smtp"]["password"] == "**********"
    assert parsed["daemon"]["poll_interval"] == "5m"
    assert "GPUOPT_DAEMON_POLL_INTERVAL" in show.stdout


def test_config_show_is_toml_whatever_the_path_length(tmp_path: Path) -> None:
    """The header names the file; a long path used to wrap it into a non-comment line."""
    home = tmp_path / ("deep" * 30) / ("er" * 40)
    home.mkdir(parents=True)
    show = run(home, "config", "show", COLUMNS="40")
    assert show.returncode == 0, show.stderr
    assert str(home) in show.stdout.splitlines()[0]
    assert "database" in tomllib.loads(show.stdout)


def test_config_error_exit_code(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text('[daemon]\npoll_interval = "often"\n')
    r = run(tmp_path, "config", "show")
    assert r.returncode == 2
    assert "poll_interval" in r.stderr and "Traceback" not in r.stderr


def _seed_store(home: Path, clouds: tuple[str, ...] = ("aws", "gcp", "azure")) -> None:
    """Store two polls of prices in home's SQLite file through the real store code."""
    code = f"CLOUDS = {clouds!r}\n" + """
from datetime import UTC, datetime, timedelta
from gpuopt.orchestrator.store import open_store
from gpuopt.orchestrator.store.price_history import record_offers
from gpuopt.providers.snapshot import load_snapshot
offers = [o for o in load_snapshot().offers if o.gpu == "H100"
          and o.cloud in CLOUDS]
t0 = datetime.now(UTC) - timedelta(days=2)
store = open_store()
for i, factor in enumerate((1, 1, 0.9)):
    batch = [o.with_price(o.price_per_hour * __import__("decimal").Decimal(str(factor)),
                          t0 + timedelta(hours=i)) for o in offers]
    batch = [b.__class__(**{**{f: getattr(b, f) for f in b.__slots__}, "source": f"api:{b.cloud}"})
             for b in batch]
    with store.transaction() as s:
        record_offers(s, batch)
store.close()
"""
    env = {**os.environ, "GPUOPT_HOME": str(home)}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_history_plot_and_export_snapshot(tmp_path: Path) -> None:
    _seed_store(tmp_path)
    r = run(tmp_path, "prices", "--json", "--gpu", "H100")
    assert r.returncode == 0, r.stderr
    assert {o["source"] for o in json.loads(r.stdout)} == {"api:aws", "api:gcp", "api:azure"}
    png = tmp_path / "h100.png"
    h = run(
        tmp_path,
        "prices",
        "history",
        "--gpu",
        "H100",
        "--market",
        "spot",
        "--since",
        "7d",
        "--plot",
        str(png),
        "--limit",
        "0",  # every point: the snapshot seeds H100 in some 50 places now
    )
    assert h.returncode == 0, h.stderr
    assert "p5.48xlarge" in h.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = tmp_path / "snap.json"
    e = run(tmp_path, "prices", "export-snapshot", "--out", str(out))
    assert e.returncode == 0, e.stderr
    from gpuopt.providers.snapshot import load_snapshot

    snap = load_snapshot(out.read_text())
    assert snap.offers and {o.gpu for o in snap.offers} == {"H100"}
    assert all("gpuopt poll" in text for text in snap.sources.values())


def test_export_snapshot_keeps_the_data_centres_of_runpods_global_rows(tmp_path: Path) -> None:
    """The store keeps prices only: an exported snapshot names each RunPod row's data
    centres as the embedded snapshot does, and the prices table counts them."""
    from gpuopt.providers.snapshot import load_snapshot

    _seed_store(tmp_path, ("aws", "runpod"))
    embedded = load_snapshot()
    runpod = {o.instance_type for o in embedded.offers if o.cloud == "runpod" and o.gpu == "H100"}
    assert runpod, "the embedded snapshot prices RunPod H100"
    out = tmp_path / "snap.json"
    e = run(tmp_path, "prices", "export-snapshot", "--out", str(out))
    assert e.returncode == 0, e.stderr
    snap = load_snapshot(out.read_text())
    assert {o.instance_type for o in snap.offers if o.cloud == "runpod"} == runpod
    assert {k for k in snap.places} == {("runpod", it) for it in runpod}
    assert all(snap.places[k] == embedded.places[k] for k in snap.places)
    assert len(snap.places[("runpod", "8x_H100-SXM_SECURE")]) == 48
    table = run(tmp_path, "prices", "--gpu", "H100", "--cloud", "runpod", "--wide")
    assert table.returncode == 0, table.stderr
    assert "runpod (48 data centres)" in table.stdout


def test_gpus_lists_the_table_with_where_sold_and_cheapest(tmp_path: Path) -> None:
    r = run(tmp_path, "gpus", "--json")
    assert r.returncode == 0, r.stderr
    rows = {g["gpu"]: g for g in json.loads(r.stdout)}
    assert {"H200", "B200", "RTX4090", "A10", "H100-NVL", "A100-80GB-PCIe"} <= set(rows)
    h200 = rows["H200"]
    assert h200["memory_gib"] > 140 and h200["bf16_tflops"] == 989
    assert h200["bandwidth_gbps"] == 4800 and h200["interconnect"] == "nvlink"
    assert h200["sold"]["aws"] == [8] and "datasheet" in h200["source"]
    rtx = rows["RTX4090"]
    assert set(rtx["sold"]) == {"runpod", "vast"}
    # The cheapest RTX 4090 GPU-hour in the snapshot is Vast.ai's 8x machine at $2.77/h.
    assert rtx["cheapest_on_demand_per_gpu_hour"] == pytest.approx(2.77 / 8)
    # each cheapest price says whose it is (issue 28: never an od beside another's spot)
    assert rtx["cheapest_on_demand_cloud"] == "vast" and rtx["cheapest_spot_cloud"] is None
    # RunPod's L40 rows (SkyPilot catalog, $0.82 a GPU-hour at every count): no spot price
    l40 = rows["L40"]
    assert l40["sold"] == {"runpod": [1, 2, 4, 8]} and l40["cheapest_spot_per_gpu_hour"] is None
    assert l40["cheapest_on_demand_per_gpu_hour"] == pytest.approx(0.82)
    table = run(tmp_path, "gpus", COLUMNS="80")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert all(len(line) <= 80 for line in lines)
    # od / spot name whose price each is (issue 28); at 80 columns the bandwidth and link
    # columns give way to them (--wide shows every column)
    assert lines[0].split()[:5] == ["GPU", "GiB", "bf16", "od", "spot"]
    b200 = next(line for line in lines if line.startswith("B200 "))
    assert b200.split()[4] in ("aws", "gcp", "lambda", "vast", "nebius", "oci")
    wide = run(tmp_path, "gpus", "--wide", COLUMNS="80")
    assert any(line.startswith("B200 ") and "NVL 1800" in line
               for line in wide.stdout.splitlines())
    assert "A100 = A100-40GB" in table.stdout
    assert "days old: run `gpuopt prices refresh`" in table.stderr
    # the README says it too (issue 28: a user reading it before any command)
    from tests.conftest import REPO_ROOT

    readme = " ".join((REPO_ROOT / "README.md").read_text(encoding="utf-8").split())
    assert "a bare `A100` means the 40 GB part, A100-40GB" in readme


def test_history_on_a_fresh_home_shows_the_snapshot_as_json_with_a_limit(
    tmp_path: Path,
) -> None:
    """Issue 14: `prices history` had no --json or --limit and, on a fresh machine,
    nothing to show. Before any refresh the snapshot's prices are each series' first
    point (the cheapest N with --limit), its age said on stderr."""
    r = run(tmp_path, "prices", "history", "--gpu", "H100", "--json", "--limit", "3")
    assert r.returncode == 0, r.stderr
    points = json.loads(r.stdout)
    assert len(points) == 3
    assert {p["source"] for p in points} == {"snapshot"} and {p["gpu"] for p in points} == {
        "H100"}
    per_gpu = [float(p["price_per_gpu_hour"]) for p in points]
    assert per_gpu == sorted(per_gpu)
    assert "No price history yet" in r.stderr and "days old" in r.stderr
    every = json.loads(run(tmp_path, "prices", "history", "--gpu", "H100", "--json",
                           "--limit", "0").stdout)
    assert len(every) > 3 and every[:3] == points
    table = run(tmp_path, "prices", "history", "--gpu", "H100", "--limit", "2")
    assert table.returncode == 0, table.stderr
    assert f"{len(every) - 2} more points (use --limit 0 for all)" in table.stderr
    assert not (tmp_path / "data" / "gpuopt.db").exists()  # reading created nothing


def test_history_json_limit_keeps_the_newest_stored_points(tmp_path: Path) -> None:
    _seed_store(tmp_path)
    every = json.loads(run(tmp_path, "prices", "history", "--gpu", "H100", "--json",
                           "--limit", "0").stdout)
    assert every and {p["source"] for p in every} == {"store"}
    newest = json.loads(run(tmp_path, "prices", "history", "--gpu", "H100", "--json",
                            "--limit", "2").stdout)
    assert newest == every[-2:] and len(every) > 2
