"""A job spec as stored at submit: the validated spec as JSON, its architecture resolved.

``resolved_json(spec)`` is written once, at submit, from the one read of the job file;
``spec_from_json(text)`` gives the same :class:`JobSpec` back without reading any file:
the model's numbers (from a built-in name, a Hugging Face ``config.json`` or ``params``)
are stored as the :class:`Architecture` they resolved to, and paths the submit already
checked (``workdir``, ``model.config``) are kept as they were then, not checked again.
So the daemon never needs the submitter's files, and a job file or config.json edited
or deleted after submit changes nothing about the job.

Only the keys the user gave are stored (``exclude_unset``), so validation rules that
depend on which keys were written (``type: inference`` refusing ``method``) read the
stored spec as they read the file. Durations are stored as seconds, amounts as decimal
strings, times as ISO 8601 with their offset.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

from gpuopt.core.errors import GpuoptError
from gpuopt.jobs.architectures import Architecture
from gpuopt.jobs.spec import JobSpec, ModelSpec

FORMAT = 1
_ARCH_FIELDS = tuple(f.name for f in dataclasses.fields(Architecture) if f.init)


class StoredSpecError(GpuoptError, ValueError):
    """The stored text is not a resolved spec this version reads; the message says why."""


def _encode(value: Any) -> Any:
    if isinstance(value, timedelta):
        return value.total_seconds()
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot store {type(value).__name__} in a resolved spec")


def architecture_json(arch: Architecture) -> dict[str, Any]:
    return {name: getattr(arch, name) for name in _ARCH_FIELDS}


def resolved_json(spec: JobSpec) -> str:
    """The validated ``spec`` with its model's architecture, as one JSON document."""
    doc = {
        "format": FORMAT,
        "spec": spec.model_dump(mode="python", exclude_unset=True),
        "architecture": architecture_json(spec.resolved_model()),
    }
    return json.dumps(doc, default=_encode, sort_keys=True, separators=(",", ":"))


def spec_from_json(text: str) -> JobSpec:
    """The spec ``resolved_json`` stored; reads no file (see the module docstring).

    Raises StoredSpecError when ``text`` is not a stored spec of a known format."""
    try:
        doc = json.loads(text)
        if doc.get("format") != FORMAT:
            raise StoredSpecError(f"stored spec format {doc.get('format')!r}, "
                                  f"this version reads {FORMAT}")
        data = dict(doc["spec"])
        arch = Architecture(**{k: doc["architecture"][k] for k in _ARCH_FIELDS
                               if k in doc["architecture"]})
        model_data = dict(data.pop("model"))
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        if isinstance(exc, StoredSpecError):
            raise
        raise StoredSpecError(f"not a stored spec: {type(exc).__name__}: {exc}") from None
    if model_data.get("config") is not None:
        model_data["config"] = Path(model_data["config"])
    # Built without validation: it validated at submit, and its config.json (if any) is
    # the submitter's file; the architecture it resolved to is stored beside it.
    model = ModelSpec.model_construct(_fields_set=set(model_data), **model_data)
    model._arch = arch
    return JobSpec.model_validate({**data, "model": model}, context={"stored": True})
