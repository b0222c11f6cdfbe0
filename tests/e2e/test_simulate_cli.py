"""Drive the installed `gpuopt simulate` console script."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.e2e.cli import gpuopt_command

REPO = Path(__file__).resolve().parents[2]
TRACES = Path("..") / "shared" / "data" / "spot-traces"  # relative to the repo root
TRACE_2022 = TRACES / "aws-2022-10-26"



def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*gpuopt_command(), "simulate", *args], capture_output=True, text=True,
                          timeout=120, cwd=REPO)


def _need_traces() -> None:
    if not (REPO / TRACES).is_dir():
        pytest.skip(f"{(REPO / TRACES).resolve()} is absent (CI always has ../shared)")


def _write(tmp: Path, name: str, data: list[int], gap: int = 600) -> Path:
    p = tmp / name
    p.write_text(json.dumps({"metadata": {"gap_seconds": gap}, "data": data}))
    return p


JOB = ["--task-hours", "1", "--restart-overhead-hours", "0.1", "--spot-price", "1.2",
       "--on-demand-price", "3.6"]


def test_json_on_a_hand_made_trace(tmp_path: Path) -> None:
    # Spot all the time: 6 min restart + 1 h of work -> 7 ticks of spot at 0.2 USD.
    trace = _write(tmp_path, "a.json", [0] * 20)
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "2", "--policy", "greedy",
               "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {"engine", "cost", "finish_hours", "met_deadline", "preemptions",
                        "decisions"}
    assert doc["engine"] == "replay"
    assert doc["cost"] == pytest.approx(1.4)
    assert doc["finish_hours"] == pytest.approx(1.1)
    assert doc["met_deadline"] is True
    assert doc["preemptions"] == 0
    assert doc["decisions"] == ["spot"] * 7


def test_several_traces_label_the_zone_and_start_hour_offsets(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.json", [1, 1, 1] + [1] * 20)
    b = _write(tmp_path, "b.json", [1, 1, 1] + [0] * 20)
    res = _run("--trace", str(a), "--trace", str(b), *JOB, "--deadline-hours", "2",
               "--start-hour", "0.4", "--json")  # ceil(0.4 h / 600 s) = tick 3
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["decisions"][0] == "spot:1"
    assert doc["met_deadline"] is True


def test_human_summary(tmp_path: Path) -> None:
    trace = _write(tmp_path, "a.json", [0, 0, 1, 1, 0] * 10)
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "1.5")
    assert res.returncode == 0, res.stderr
    assert "cost" in res.stdout and "preemptions" in res.stdout


@pytest.mark.parametrize(
    ("content", "extra", "expect"),
    [
        (None, [], "does not exist"),
        ("{not json", [], "not valid JSON"),
        ('{"metadata": {}, "data": [0]}', [], "gap_seconds"),
        ('{"metadata": {"gap_seconds": 600}, "data": [0, 2]}', [], "data[1]"),
        ('{"metadata": {"gap_seconds": 600}, "data": [0, 0]}', ["--deadline-hours", "0.5"],
         "shorter than --task-hours"),
        # The deadline (2 h) is longer than the whole trace (20 min): the deadline is to
        # blame, not --start-hour (5000 h on a 2-year trace said --start-hour).
        ('{"metadata": {"gap_seconds": 600}, "data": [0, 0]}', [],
         "--deadline-hours 2: longer than the trace (0.3 h)"),
        ('{"metadata": {"gap_seconds": 600}, "data": [' + ", ".join(["0"] * 18) + "]}",
         ["--start-hour", "1.5"], "--start-hour 1.5: the trace (3.0 h) must cover the deadline"),
        ('{"metadata": {"gap_seconds": 600}, "data": [0, 0]}', ["--policy", "nope"],
         "choose one of"),
    ],
)
def test_bad_input_exits_2_with_what_to_fix(tmp_path: Path, content: str | None,
                                            extra: list[str], expect: str) -> None:
    path = tmp_path / "t.json"
    if content is not None:
        path.write_text(content)
    args = ["--trace", str(path), *JOB]
    if "--deadline-hours" not in extra:
        args += ["--deadline-hours", "2"]
    res = _run(*args, *extra)
    assert res.returncode == 2
    assert expect in " ".join(res.stderr.split())  # rich wraps long lines
    assert "Traceback" not in res.stderr


def test_replays_a_shared_trace() -> None:
    _need_traces()
    trace = TRACE_2022 / "us-west-2b_v100_1.json"
    res = _run("--trace", str(trace), "--task-hours", "48", "--deadline-hours", "52",
               "--start-hour", "100", "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["met_deadline"] is True
    assert len(doc["decisions"]) == pytest.approx(doc["finish_hours"] * 6, abs=1)
    assert 0 < doc["cost"] < 48.1 * 3.06 * 1.05


def test_sweep_table_json_and_plot(tmp_path: Path) -> None:
    _need_traces()
    out = tmp_path / "curve.png"
    args = ["--trace", str(TRACE_2022 / "us-west-2a_v100_1.json"),
            "--trace", str(TRACE_2022 / "us-west-2b_v100_1.json"),
            "--task-hours", "48", "--deadline-hours", "52", "--deadline-hours", "56",
            "--sweep", "--starts", "3"]
    res = _run(*args, "--plot", str(out))
    assert res.returncode == 0, res.stderr
    assert "uniform-progress" in res.stdout and "optimum" in res.stdout
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    res = _run(*args, "--json")
    assert res.returncode == 0, res.stderr
    docs = json.loads(res.stdout)
    assert [d["deadline_hours"] for d in docs] == [52, 56]
    for d in docs:
        pol = d["policies"]
        assert d["runs"] == 9  # 3 starts x (2 single traces + 1 two-zone set)
        assert pol["optimum"]["ratio_to_optimum"] == 1.0
        for name in ("auto", "greedy", "uniform-progress", "uniform-progress-zones",
                     "on-demand"):
            assert pol[name]["mean_cost"] >= pol["optimum"]["mean_cost"]
        assert pol["auto"]["misses"] == 0


def test_information_launch_json_on_hand_made_traces(tmp_path: Path) -> None:
    # Zone a never has spot, zone b always (task 1 h, 6 min restarts, deadline 2 h).
    # tick: spot:1 at once -> 6 min + 1 h of spot = 7 ticks at 0.2 USD, ends at 1.1 h.
    # launch: nothing is known, zone a is tried first and fails (no bill, a tick lost),
    # then zone b: the same 7 ticks of spot, ending one tick (1/6 h) later.
    a = _write(tmp_path, "a.json", [1] * 20)
    b = _write(tmp_path, "b.json", [0] * 20)
    args = ["--trace", str(a), "--trace", str(b), *JOB, "--deadline-hours", "2", "--json"]
    tick = json.loads(_run(*args).stdout)
    same = json.loads(_run(*args, "--information", "tick").stdout)
    res = _run(*args, "--information", "launch")
    assert res.returncode == 0, res.stderr
    launch = json.loads(res.stdout)
    assert tick == same
    assert set(launch) == set(tick)
    assert tick["decisions"] == ["spot:1"] * 7
    assert launch["decisions"] == ["spot:0"] + ["spot:1"] * 7
    assert tick["cost"] == pytest.approx(1.4) and launch["cost"] == pytest.approx(1.4)
    assert launch["finish_hours"] == pytest.approx(1.1 + 1 / 6)
    assert launch["met_deadline"] is True


def test_information_launch_summary_and_bad_value(tmp_path: Path) -> None:
    trace = _write(tmp_path, "a.json", [1, 1] + [0] * 20)
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "2", "--policy", "greedy",
               "--information", "launch")
    assert res.returncode == 0, res.stderr
    assert "failed launches" in res.stdout and "launch information" in " ".join(
        res.stdout.split())
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "2", "--information", "all")
    assert res.returncode == 2
    assert "--information 'all': choose one of tick, launch, launch-probe" in " ".join(
        res.stderr.split())
    assert "Traceback" not in res.stderr


def _assert_daemon_as_replay(*args: str) -> None:
    """`--engine daemon` and the replay on the same arguments (with `--json`): the same
    decisions, the same cost within half a cent, and the deadline met."""
    daemon, replay = _run(*args, "--engine", "daemon"), _run(*args)
    assert daemon.returncode == 0 and replay.returncode == 0, daemon.stderr + replay.stderr
    got, want = json.loads(daemon.stdout), json.loads(replay.stdout)
    assert got["engine"] == "daemon"
    assert got["decisions"] == want["decisions"]
    assert got["cost"] == pytest.approx(want["cost"], abs=0.005)
    assert got["met_deadline"] is True


def test_engine_daemon_reads_the_signals_as_the_replay(tmp_path: Path) -> None:
    """`--information launch-probe+signals` runs the daemon with `[spot] probe` and `[spot]
    signals`, the signals the replay derives from the traces recorded as its polls would:
    the same decisions and cost as the replay, on two zones whose spot comes and goes."""
    a = _write(tmp_path, "a.json", [1, 1, 0, 0, 1, 0, 0, 0, 1, 1] + [0] * 30)
    b = _write(tmp_path, "b.json", [0, 1, 1, 0, 0, 0, 1, 0, 0, 0] + [1, 0] * 15)
    args = ("--trace", str(a), "--trace", str(b), *JOB, "--deadline-hours", "2",
            "--information", "launch-probe+signals", "--json")
    _assert_daemon_as_replay(*args)


def test_sweep_on_launch_information_meets_every_deadline() -> None:
    _need_traces()
    res = _run("--trace", str(TRACE_2022 / "us-west-2a_v100_1.json"),
               "--trace", str(TRACE_2022 / "us-west-2b_v100_1.json"),
               "--task-hours", "48", "--deadline-hours", "52", "--sweep", "--starts", "2",
               "--information", "launch", "--json")
    assert res.returncode == 0, res.stderr
    (doc,) = json.loads(res.stdout)
    assert doc["runs"] == 6
    assert doc["policies"]["auto"]["misses"] == 0
    assert doc["policies"]["auto"]["mean_cost"] >= doc["policies"]["optimum"]["mean_cost"]


def test_engine_daemon_json_on_a_hand_made_trace(tmp_path: Path) -> None:
    # Spot all the time and no deadline pressure: whatever the daemon holds, each held
    # tick is billed whole and the job ends after 6 min of restart + 1 h of work held.
    trace = _write(tmp_path, "a.json", [0] * 30)
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "3", "--engine", "daemon",
               "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert set(doc) == {"engine", "cost", "finish_hours", "met_deadline", "preemptions",
                        "decisions"}
    assert doc["engine"] == "daemon"
    assert doc["met_deadline"] is True and doc["preemptions"] == 0
    held = [d for d in doc["decisions"] if d != "none"]
    assert held and set(held) <= {"spot", "on-demand"}
    assert doc["cost"] == pytest.approx(
        sum(0.2 if d == "spot" else 0.6 for d in doc["decisions"] if d != "none"), abs=1e-5)


@pytest.mark.parametrize(("extra", "expect"), [
    (["--engine", "sim"], "--engine 'sim': choose one of replay, daemon"),
    (["--engine", "daemon", "--information", "tick"], "launch information model only"),
    (["--engine", "daemon", "--sweep"], "benchmarks/simulate_sweep.py --engine daemon"),
])
def test_engine_bad_values_exit_2(tmp_path: Path, extra: list[str], expect: str) -> None:
    trace = _write(tmp_path, "a.json", [0] * 30)
    res = _run("--trace", str(trace), *JOB, "--deadline-hours", "2", *extra)
    assert res.returncode == 2
    assert expect in res.stderr


def test_engine_daemon_probes_as_the_replay_under_launch_probe(tmp_path: Path) -> None:
    """`--information launch-probe` runs the daemon with `[spot] probe`: the same decisions
    and cost as the replay's launch-probe on a trace whose spot comes and goes (the
    replay probes spot from on-demand 3 times there)."""
    trace = _write(tmp_path, "a.json", [1, 1, 0, 0, 1, 0, 0, 0, 1, 1] + [0] * 30)
    args = ("--trace", str(trace), *JOB, "--deadline-hours", "2", "--information",
            "launch-probe", "--json")
    _assert_daemon_as_replay(*args)
