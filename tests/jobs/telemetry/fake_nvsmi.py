"""A fake ``nvidia-smi`` for tests: an executable on PATH that answers
``--query-gpu=... --format=csv,noheader,nounits`` in the real format (one line per GPU,
fields in the order asked, ", " between them, ``[N/A]`` for what a GPU cannot report)."""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence
from pathlib import Path

# index, memory.used MiB, memory.total MiB, utilization.gpu %, power.draw W
Row = tuple[int, int, int, int, float | None]


def _line(row: Row) -> str:
    index, used, total, util, power = row
    return f"{index}, {used}, {total}, {util}, {'[N/A]' if power is None else f'{power:.2f}'}"


def install_fake_nvidia_smi(bin_dir: Path, rows: Sequence[Row], *, hang: bool = False,
                            exit_code: int = 0) -> Path:
    """Write ``bin_dir/nvidia-smi``; it checks it was asked the query gpuopt asks."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    out = "\n".join(_line(r) for r in rows)
    body = "exec sleep 600\n" if hang else ""  # exec: the timeout's kill reaches it
    script = bin_dir / "nvidia-smi"
    script.write_text(
        "#!/bin/sh\n"
        'case "$*" in *--query-gpu=index,memory.used,memory.total,utilization.gpu,power.draw*'
        "--format=csv,noheader,nounits*) ;; *) echo \"unexpected: $*\" >&2; exit 9;; esac\n"
        f"{body}"
        + (f"echo 'NVIDIA-SMI has failed' >&2; exit {exit_code}\n" if exit_code else "")
        + f"cat <<'EOF'\n{out}\nEOF\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def path_with(bin_dir: Path) -> str:
    return f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
