#!/usr/bin/env python3
"""A tiny data-parallel "training" job over several nodes, on gpuopt's node contract.

Every node (GPUOPT_NODE_RANK of GPUOPT_NUM_NODES) computes the gradient of its share of
each minibatch; rank 0 is the master (GPUOPT_MASTER_ADDR:GPUOPT_MASTER_PORT): the other
nodes connect to it over TCP, it sums the gradients in rank order (an all-reduce by
hand, where a real job has NCCL), applies the step and sends the weights back. Rank 0
alone checkpoints (atomically, every K steps, into GPUOPT_CHECKPOINT_DIR), reports
progress and writes result.json (weights and loss as float.hex); on GPUOPT_RESUME=1 it
resumes from its checkpoint and hands the step and weights to the others. Preempted and
restarted on all nodes any number of times, it ends with bit-for-bit the result of an
undisturbed run. Pure Python, no GPU.

    python train_nodes.py --steps 600 --every 25 --sleep 0.005
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import struct
import sys
import time
from pathlib import Path

FEATURES, SAMPLES, BATCH, LEARNING_RATE = 4, 256, 8, 0.05
CONNECT_S = 60.0  # how long a node waits for the master to listen


def data() -> tuple[list[list[float]], list[float]]:
    """A fixed data set, y = w_true . x (deterministic, no random generator)."""
    xs = [[((i * 37 + f * 11) % 17) / 8.0 - 1.0 for f in range(FEATURES)]
          for i in range(SAMPLES)]
    w_true = [0.5, -1.25, 2.0, 0.75]
    return xs, [sum(w * x for w, x in zip(w_true, row, strict=True)) for row in xs]


def gradient(w: list[float], rows: list[int], xs: list[list[float]], ys: list[float]
             ) -> list[float]:
    g = [0.0] * FEATURES
    for i in rows:
        err = sum(wi * xi for wi, xi in zip(w, xs[i], strict=True)) - ys[i]
        for f in range(FEATURES):
            g[f] += 2 * err * xs[i][f] / BATCH
    return g


def send(sock: socket.socket, values: list[float]) -> None:
    sock.sendall(struct.pack(f"!{len(values)}d", *values))


def recv(sock: socket.socket, count: int) -> list[float]:
    want, buf = 8 * count, b""
    while len(buf) < want:
        chunk = sock.recv(want - len(buf))
        if not chunk:
            raise ConnectionError("a node went away")
        buf += chunk
    return list(struct.unpack(f"!{count}d", buf))


def write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--every", type=int, default=25)
    ap.add_argument("--sleep", type=float, default=0.005)
    args = ap.parse_args()
    env = os.environ
    rank, nodes = int(env["GPUOPT_NODE_RANK"]), int(env["GPUOPT_NUM_NODES"])
    addr, port = env["GPUOPT_MASTER_ADDR"], int(env["GPUOPT_MASTER_PORT"])
    ckpt_dir = Path(env["GPUOPT_CHECKPOINT_DIR"])
    ckpt = ckpt_dir / "nodes-checkpoint.json"
    xs, ys = data()

    if rank == 0:
        step, w = 0, [0.0] * FEATURES
        if env.get("GPUOPT_RESUME") == "1" and ckpt.exists():
            saved = json.loads(ckpt.read_text(encoding="utf-8"))
            step, w = saved["step"], [float.fromhex(v) for v in saved["w"]]
        print(f"node 0 attempt {env['GPUOPT_ATTEMPT']}: "
              + (f"resuming from step {step}" if step else "starting"), flush=True)
        server = socket.create_server((addr, port))
        peers: dict[int, socket.socket] = {}
        while len(peers) < nodes - 1:
            conn, _ = server.accept()
            peers[int(recv(conn, 1)[0])] = conn
        for conn in peers.values():
            send(conn, [float(step), *w])
    else:
        deadline = time.monotonic() + CONNECT_S
        while True:
            try:
                master = socket.create_connection((addr, port), timeout=CONNECT_S)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        send(master, [float(rank)])
        start = recv(master, 1 + FEATURES)
        step, w = int(start[0]), start[1:]
        print(f"node {rank} attempt {env['GPUOPT_ATTEMPT']}: "
              + (f"resuming from step {step}" if step else "starting"), flush=True)

    while step < args.steps:
        batch = [(step * BATCH + j) % SAMPLES for j in range(BATCH)]
        mine = gradient(w, batch[rank::nodes], xs, ys)
        time.sleep(args.sleep)  # the GPU's work
        if rank == 0:
            total = mine
            for r in sorted(peers):  # in rank order: the same sum every run
                theirs = recv(peers[r], FEATURES)
                total = [a + b for a, b in zip(total, theirs, strict=True)]
            w = [wi - LEARNING_RATE * gi for wi, gi in zip(w, total, strict=True)]
            for r in sorted(peers):
                send(peers[r], w)
        else:
            send(master, mine)
            w = recv(master, FEATURES)
        step += 1
        if rank == 0 and (step % args.every == 0 or step == args.steps):
            write_atomic(ckpt, json.dumps({"step": step, "w": [v.hex() for v in w]}))
            write_atomic(Path(env["GPUOPT_PROGRESS_FILE"]),
                         json.dumps({"step": step, "total": args.steps}))
    if rank == 0:
        err = sum((sum(a * b for a, b in zip(w, row, strict=True)) - y) ** 2
                  for row, y in zip(xs, ys, strict=True)) / SAMPLES
        write_atomic(ckpt_dir / "result.json", json.dumps(
            {"steps": step, "nodes": nodes, "w": [v.hex() for v in w], "loss": err.hex()}))
    print(f"node {rank}: done at step {step}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
