"""Build docs/report-sample/ from a realistic synthetic ledger (seeded: same output each run).

    /work/venv/bin/python docs/make_sample_report.py [OUT_DIR]

Writes report.html (+ report-daily-spend.png, report-vs-on-demand.png beside it, linked
by relative file name: the same template as the e-mail, whose images use cid: links),
report.txt and report.json. Prices are 2026 list prices in USD per instance-hour.
"""

from __future__ import annotations

import random
import sys
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

from gpuopt.jobs.states import EndReason, JobStatus
from gpuopt.orchestrator.ledger.records import AttemptRecord, JobRecord
from gpuopt.orchestrator.report.aggregate import build_report
from gpuopt.orchestrator.report.files import write_html_report
from gpuopt.orchestrator.report.render_json import render_json
from gpuopt.orchestrator.report.render_text import render_text
from gpuopt.orchestrator.report.weeks import IsoWeek

WEEK = IsoWeek(2026, 48)
TZ = ZoneInfo("Europe/Berlin")
# (cloud, region, instance type, GPU, count, on-demand $/h, spot $/h)
PLACES = [
    ("aws", "us-east-1", "p4d.24xlarge", "A100-40GB", 8, "32.7726", "12.9610"),
    ("aws", "us-west-2", "g5.12xlarge", "A10G", 4, "5.6720", "2.2688"),
    ("aws", "us-east-1", "p5.48xlarge", "H100", 8, "55.0400", "24.7680"),
    ("gcp", "us-central1", "a2-ultragpu-8g", "A100-80GB", 8, "40.5504", "14.6016"),
    ("gcp", "europe-west4", "g2-standard-48", "L4", 4, "4.0022", "1.6009"),
    ("azure", "eastus", "Standard_ND96asr_v4", "A100-40GB", 8, "27.1970", "10.8788"),
    ("azure", "westeurope", "Standard_NC40ads_H100_v5", "H100", 1, "6.9800", "2.7920"),
]
PEOPLE = [("alice", "nlp"), ("bob", "nlp"), ("chen", "vision"), ("dana", "vision"),
          ("eve", "research"), ("farid", "research")]
KINDS = ["llama3-8b-sft", "mistral-7b-dpo", "qwen2-vl-ft", "embed-batch", "eval-harness",
         "whisper-ft", "clip-pretrain", "rerank-infer"]
TEAM_BUDGETS = {"nlp": Decimal("6000"), "vision": Decimal("3500"), "research": Decimal("2500")}


def synthetic_ledger(seed: int = 11) -> tuple[list[AttemptRecord], list[JobRecord]]:
    rng = random.Random(seed)
    week_start = WEEK.previous().bounds(TZ)[0]
    attempts: list[AttemptRecord] = []
    jobs: list[JobRecord] = []
    as_of = WEEK.bounds(TZ)[1] + timedelta(hours=8)
    for n in range(34):
        owner, team = rng.choice(PEOPLE)
        name = f"{rng.choice(KINDS)}-{n:02d}"
        job_id = f"job-{n:03d}"
        t = week_start + timedelta(minutes=rng.randrange(2 * 24 * 60, 14 * 24 * 60))
        remaining = timedelta(hours=rng.uniform(2, 40))
        attempt_no, status, finished = 0, JobStatus.RUNNING, None
        while remaining > timedelta(0) and t < as_of:
            attempt_no += 1
            cloud, region, itype, gpu, count, od, spot = rng.choice(PLACES)
            market = "spot" if rng.random() < 0.72 else "on-demand"
            price = Decimal(spot if market == "spot" else od)
            run = remaining
            reason: EndReason | None = EndReason.SUCCEEDED
            wasted = 0.0
            if market == "spot" and rng.random() < 0.35:
                run = remaining * rng.uniform(0.2, 0.8)
                reason = EndReason.PREEMPTED
                wasted = rng.uniform(600, 3600)
            elif rng.random() < 0.06:
                reason = EndReason.FAILED
            end: datetime | None = t + run
            if end is not None and end > as_of:
                end, reason = None, None  # still running when the ledger is read
            attempts.append(AttemptRecord(
                job_id=job_id, job_name=name, owner=owner, team=team, attempt=attempt_no,
                cloud=cloud, region=region, zone=None, instance_type=itype, gpu=gpu,
                gpu_count=count, market=market, price_per_hour=price,
                on_demand_price_per_hour=Decimal(od), started_at=t, ended_at=end,
                end_reason=reason, wasted_seconds=wasted,
            ))
            if end is None:
                break
            if reason is EndReason.PREEMPTED:
                remaining -= run - timedelta(seconds=wasted)
                t = end + timedelta(minutes=rng.uniform(3, 25))
                continue
            status, finished = (JobStatus.SUCCEEDED if reason is EndReason.SUCCEEDED
                                else JobStatus.FAILED), end
            break
        budget = Decimal(rng.choice([None, 800, 1500, 3000]) or 0) or None
        jobs.append(JobRecord(job_id, name, owner, team, status, week_start, finished, budget))
    return attempts, jobs


def main(out_dir: Path) -> None:
    attempts, jobs = synthetic_ledger()
    as_of = WEEK.bounds(TZ)[1] + timedelta(hours=8)
    report = build_report(attempts, jobs, WEEK, TZ, team_budgets=TEAM_BUDGETS, as_of=as_of)
    for path in write_html_report(report, out_dir / "report.html"):
        print("wrote", path)
    (out_dir / "report.txt").write_text(render_text(report), encoding="utf-8")
    (out_dir / "report.json").write_text(render_json(report), encoding="utf-8")
    print("wrote", out_dir / "report.txt", out_dir / "report.json")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).parent / "report-sample")
