"""Reads the measurement corpus (jobs/estimate/measurements/*.toml) from the package:
the file I/O that jobs/estimate/corpus.py, being pure, leaves to its caller."""

from __future__ import annotations

from pathlib import Path

from gpuopt.jobs.estimate.corpus import Measurement, parse_source


def corpus_dir() -> Path:
    return Path(__file__).parent / "estimate" / "measurements"


def load_corpus(directory: Path | None = None) -> tuple[Measurement, ...]:
    """Every row of every source file, in file-name order."""
    rows: list[Measurement] = []
    for path in sorted((directory or corpus_dir()).glob("*.toml")):
        rows.extend(parse_source(path.read_text(encoding="utf-8"), path.name))
    return tuple(rows)
