"""The sampler the run wrapper starts beside the job: nvidia-smi every ``interval`` s.

    python3 telemetry.py OUT_FILE INTERVAL_S [PROGRESS_FILE]

Each tick runs nvidia-smi (timed out after at most 10 s: a hung driver never blocks the
loop), reads ``tokens`` from the progress file, folds both into the summary
(parse.Accumulator) and replaces OUT_FILE with it atomically; SIGTERM (the wrapper,
when the job's program ended) writes the last summary and exits 0. It runs at a lower
priority, writes nothing but OUT_FILE and one line on stderr the first time nvidia-smi
fails, and exits at once where nvidia-smi does not exist: the job never waits for it
and is never broken by it.

Standard library only, like parse.py, whose source precedes this one in the script
the node runs (script.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time

try:  # noqa: SIM105 (the node's Python may lack what contextlib offers on 3.11)
    from gpuopt.jobs.telemetry.parse import (
        QUERY_ARGS,
        Accumulator,
        GpuReading,
        parse_query_output,
        tokens_from_progress,
    )
except ImportError:  # the node's script: parse.py's definitions are above
    pass

MAX_CALL_S = 10.0


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _read_tokens(progress_file: str) -> int | None:
    if not progress_file:
        return None
    try:
        with open(progress_file, "rb") as f:
            raw = f.read(4097)
    except OSError:
        return None
    return tokens_from_progress(raw.decode("utf-8", errors="replace"))


def sample_once(nvidia_smi: str, timeout_s: float) -> tuple:
    """(readings, error): the GPUs' readings now, or [] and why not."""
    try:
        done = subprocess.run([nvidia_smi, *QUERY_ARGS], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return [], f"nvidia-smi did not answer within {timeout_s:g} s"
    except OSError as err:
        return [], f"nvidia-smi could not run: {err}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return [], f"nvidia-smi exited with code {done.returncode}" + (
            f": {why[-1][:200]}" if why else "")
    readings: list[GpuReading] = parse_query_output(done.stdout.decode("utf-8", "replace"))
    return readings, "" if readings else "nvidia-smi printed no GPU readings"


# Not a GpuoptError: the node runs this file as a script of its own, with no gpuopt there.
class _Stop(Exception):
    pass


def _on_term(_signum: int, _frame: object) -> None:
    raise _Stop


def run(out_file: str, interval_s: float, progress_file: str = "") -> int:
    nvidia_smi = shutil.which("nvidia-smi")
    if nvidia_smi is None:
        return 0
    signal.signal(signal.SIGTERM, _on_term)
    with contextlib.suppress(OSError):
        os.nice(10)
    acc = Accumulator(interval_s)
    timeout_s = min(MAX_CALL_S, max(1.0, interval_s))
    warned = False
    try:
        while True:
            started = time.time()
            readings, error = sample_once(nvidia_smi, timeout_s)
            if error and not warned:
                print(f"[gpuopt] telemetry: {error} (logged once; sampling goes on)",
                      file=sys.stderr, flush=True)
                warned = True
            if readings:
                acc.add(started, readings, _read_tokens(progress_file))
                _write_atomic(out_file, json.dumps(acc.to_json(), separators=(",", ":")))
            time.sleep(max(0.0, interval_s - (time.time() - started)))
    except _Stop:
        pass
    finally:
        if acc.samples:
            with contextlib.suppress(OSError):
                _write_atomic(out_file, json.dumps(acc.to_json(), separators=(",", ":")))
    return 0


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: telemetry.py OUT_FILE INTERVAL_S [PROGRESS_FILE]", file=sys.stderr)
        return 2
    try:
        interval = max(0.05, float(argv[2]))
    except ValueError:
        return 2
    return run(argv[1], interval, argv[3] if len(argv) > 3 else "")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
