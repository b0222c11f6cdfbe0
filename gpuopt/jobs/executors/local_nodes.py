"""A multi-node attempt on the local executor: N processes on this machine, one per node.

Each runs the job's ``run`` with the contract's node variables (jobs/executors/contract.py)
as SkyPilot's nodes would have them: its own GPUOPT_NODE_RANK, GPUOPT_NUM_NODES = N, and
every node's address 127.0.0.1 with rank 0 the master on a port free on loopback. They
are started by NODES (below), which the attempt's wrapper runs in place of ``bash
run.sh``: inside the attempt's supervisor, cgroup and cookie like any process of a
one-node attempt, so a stop or an injected preemption takes every node down and waits
until none is left. The attempt's exit code is 0 when every node exits 0; else the
first node's to fail, and the others are stopped then (as one failed node fails a
SkyPilot job).
"""

from __future__ import annotations

import socket

from gpuopt.jobs.executors.contract import node_env

LOOPBACK = "127.0.0.1"


def free_loopback_port() -> int:
    """A TCP port nothing listens on now, on 127.0.0.1 (the master's rendezvous)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        port: int = s.getsockname()[1]
        return port


def local_node_env(nodes: int, master_port: int) -> dict[str, str]:
    """The node variables every process shares (NODES sets each one's rank)."""
    return node_env(0, [LOOPBACK] * nodes, master_port)


# python -I nodes.py N RUN_SCRIPT: starts N `bash RUN_SCRIPT`, GPUOPT_NODE_RANK 0..N-1.
NODES = r'''import os, signal, subprocess, sys, time
GRACE = 10.0
n, script = int(sys.argv[1]), sys.argv[2]
procs = [subprocess.Popen(["bash", script], stdin=subprocess.DEVNULL,
                          env=dict(os.environ, GPUOPT_NODE_RANK=str(rank)))
         for rank in range(n)]
stop_at = []


def stop_others(signum=None, frame=None):
    if not stop_at:
        stop_at.append(time.monotonic())
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)


for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(sig, stop_others)
code, left = 0, set(range(n))
while left:
    for rank in sorted(left):
        rc = procs[rank].poll()
        if rc is None:
            continue
        left.discard(rank)
        if rc != 0 and code == 0:
            code = rc if rc > 0 else 128 - rc
            print(f"[gpuopt] node {rank} exited with code {code}: stopping the other nodes",
                  flush=True)
            stop_others()
    if stop_at and time.monotonic() - stop_at[0] > GRACE:
        for p in procs:
            if p.poll() is None:
                p.kill()
    time.sleep(0.05)
sys.exit(code)
'''
