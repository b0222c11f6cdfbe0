#!/usr/bin/env python3
"""A tiny, deterministic "training" job that follows gpuopt's checkpoint contract.

Linear regression by minibatch SGD in pure Python (no GPU, no numpy). It checkpoints
the weights, the step AND the random generator's state atomically every K steps into
$GPUOPT_CHECKPOINT_DIR, resumes from there when GPUOPT_RESUME=1, reports progress in
$GPUOPT_PROGRESS_FILE, and writes its final weights and loss (exact, as float.hex) to
$GPUOPT_CHECKPOINT_DIR/result.json. Preempted and resumed any number of times, it ends
with bit-for-bit the same result as an uninterrupted run.

    python train_counter.py --steps 300 --every 20 --sleep 0.01
    (or TRAIN_STEPS / TRAIN_CHECKPOINT_EVERY / TRAIN_SLEEP / TRAIN_SEED)
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

FEATURES = 4
SAMPLES = 256
BATCH = 8
LEARNING_RATE = 0.05


def make_data(seed: int) -> tuple[list[list[float]], list[float]]:
    """A fixed data set: y = w_true . x + noise (its own generator, never checkpointed)."""
    rng = random.Random(seed * 7919 + 1)
    w_true = [rng.uniform(-2, 2) for _ in range(FEATURES)]
    xs = [[rng.gauss(0, 1) for _ in range(FEATURES)] for _ in range(SAMPLES)]
    ys = [sum(w * x for w, x in zip(w_true, row, strict=True)) + rng.gauss(0, 0.1) for row in xs]
    return xs, ys


def loss(w: list[float], xs: list[list[float]], ys: list[float]) -> float:
    total = 0.0
    for row, y in zip(xs, ys, strict=True):
        err = sum(wi * xi for wi, xi in zip(w, row, strict=True)) - y
        total += err * err
    return total / len(xs)


def write_atomic(path: Path, text: str, *, durable: bool = True) -> None:
    """Write to a temporary file, fsync it, rename it over ``path``, fsync the directory.

    A preemption at any instant leaves either the old file or the new one, never half."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        if durable:
            os.fsync(f.fileno())
    os.replace(tmp, path)
    if durable:
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def save_checkpoint(path: Path, step: int, w: list[float], rng: random.Random) -> None:
    version, internal, gauss_next = rng.getstate()
    state = {
        "step": step,
        "w": [x.hex() for x in w],
        "rng": [version, list(internal), gauss_next],
    }
    write_atomic(path, json.dumps(state))


def load_checkpoint(path: Path) -> tuple[int, list[float], random.Random]:
    state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    rng = random.Random()
    version, internal, gauss_next = state["rng"]
    rng.setstate((version, tuple(internal), gauss_next))
    return int(state["step"]), [float.fromhex(x) for x in state["w"]], rng


def parse_args(argv: list[str]) -> argparse.Namespace:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=int(env.get("TRAIN_STEPS", "300")))
    parser.add_argument(
        "--every", type=int, default=int(env.get("TRAIN_CHECKPOINT_EVERY", "20")),
        help="checkpoint every N steps",
    )
    parser.add_argument("--sleep", type=float, default=float(env.get("TRAIN_SLEEP", "0.01")))
    parser.add_argument("--seed", type=int, default=int(env.get("TRAIN_SEED", "1234")))
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    ckpt_dir = Path(os.environ.get("GPUOPT_CHECKPOINT_DIR", "./checkpoints"))
    ckpt_dir.mkdir(parents=True, exist_ok=True)
    ckpt = ckpt_dir / "checkpoint.json"
    progress_env = os.environ.get("GPUOPT_PROGRESS_FILE")
    progress = Path(progress_env) if progress_env else None
    attempt = os.environ.get("GPUOPT_ATTEMPT", "1")

    xs, ys = make_data(args.seed)
    if os.environ.get("GPUOPT_RESUME") == "1" and ckpt.exists():
        step, w, rng = load_checkpoint(ckpt)
        print(f"attempt {attempt}: resuming from step {step}", flush=True)
    else:
        step, w, rng = 0, [0.0] * FEATURES, random.Random(args.seed)
        print(f"attempt {attempt}: starting from scratch", flush=True)

    while step < args.steps:
        batch = [rng.randrange(SAMPLES) for _ in range(BATCH)]
        grad = [0.0] * FEATURES
        for i in batch:
            err = sum(wi * xi for wi, xi in zip(w, xs[i], strict=True)) - ys[i]
            for j in range(FEATURES):
                grad[j] += 2.0 * err * xs[i][j] / BATCH
        w = [wi - LEARNING_RATE * gi for wi, gi in zip(w, grad, strict=True)]
        step += 1
        if step % args.every == 0 or step == args.steps:
            save_checkpoint(ckpt, step, w, rng)
        if progress is not None:
            write_atomic(progress, json.dumps({"step": step, "total": args.steps}), durable=False)
        if step % 50 == 0:
            print(f"step {step}/{args.steps} loss {loss(w, xs, ys):.6f}", flush=True)
        if args.sleep:
            time.sleep(args.sleep)

    final = {"steps": step, "w": [x.hex() for x in w], "loss": loss(w, xs, ys).hex()}
    write_atomic(ckpt_dir / "result.json", json.dumps(final, sort_keys=True))
    print(f"done: loss {float.fromhex(final['loss']):.6f} weights {w!r}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
