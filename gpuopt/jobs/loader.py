"""Read job.yaml into a :class:`JobSpec`; every problem becomes ``file:line path: fix``.

ruamel.yaml's round-trip loader keeps the line of every key, so pydantic's error
locations can be mapped back to the line the user has to edit.
"""

from __future__ import annotations

import contextlib
import difflib
import types
import typing
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from gpuopt.core.errors import GpuoptError
from gpuopt.core.safe_text import control_problem
from gpuopt.jobs.bounded_read import UnreadableFile, read_bounded
from gpuopt.jobs.errors import SpecError
from gpuopt.jobs.spec import JobSpec

_MAX_ERRORS = 20
# A job file is a page of YAML. Aliases are expanded by _plain, so a few hundred bytes of
# nested aliases ("billion laughs") could stand for billions of values: the expanded
# document is bounded too, in values (scalars + containers) and in characters.
MAX_SPEC_BYTES = 1 << 20
MAX_VALUES = 100_000
MAX_CHARS = 4 * MAX_SPEC_BYTES


Purpose = Literal["plan", "estimate"]


def load_job_spec(path: str | Path, purpose: Purpose | None = None,
                  now: datetime | None = None) -> JobSpec:
    """Read and validate a job file. ``purpose="plan"`` also requires the amount of work
    (tokens / requests); ``now`` (aware) rejects an absolute deadline already past."""
    path = Path(path)
    return parse_job_spec(read_job_file(path), str(path), base_dir=path.resolve().parent,
                          purpose=purpose, now=now)


def read_job_file(path: Path) -> str:
    """The text of a job file (bounded, UTF-8); SpecError says why it cannot be read.
    ``submit`` reads the file once with this and validates and stores that same text."""
    try:
        return read_bounded(path, MAX_SPEC_BYTES).decode("utf-8")
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path}: is a directory, expected a job.yaml file") from None
    except UnreadableFile as exc:
        raise SpecError(f"{exc}; expected a job.yaml file") from None
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read: {exc.strerror or exc}") from None


def parse_job_spec(text: str, filename: str, base_dir: Path | None = None,
                   purpose: Purpose | None = None, now: datetime | None = None,
                   hub_configs: Mapping[str, Any] | None = None,
                   stored: bool = False, uploaded_workdir: Path | None = None) -> JobSpec:
    """Validate YAML text; relative `model.config` paths resolve against ``base_dir``
    (default: the directory of ``filename``). ``purpose`` and ``now``: see load_job_spec.

    A `model.name` that is a Hugging Face Hub id not in the table is read from the Hub
    (jobs/hub.py), unless ``hub_configs`` holds its config.json already (by id: bytes,
    text or the parsed mapping; e.g. what a stored job recorded from
    ``spec.model.hub_source()``). ``stored``: the text of a job an older version stored,
    read as it is even with control characters (escaped wherever it is shown).
    ``uploaded_workdir``: a remote submitter's ``workdir`` as unpacked on this machine
    (the HTTP API); it stands for the path the file names."""
    if base_dir is None:
        base_dir = Path(filename).resolve().parent
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError(f"{filename}:1: the file is larger than {MAX_SPEC_BYTES:,} characters")
    doc = _load_yaml(text, filename)
    if doc is None:
        raise SpecError(f"{filename}:1: the file is empty; a job needs `model` and `workload`")
    if not isinstance(doc, Mapping):
        raise SpecError(
            f"{filename}:{_line_of(doc, ()) or 1}: the document must be a mapping "
            f"(key: value), not a {_kind(doc)}"
        )
    budget = _Budget()
    try:
        data = _plain(doc, 0, budget, (), refuse_control=not stored)
    except _TooDeep:
        raise SpecError(f"{filename}:1: the document nests too deeply") from None
    except _TooBig:
        raise SpecError(
            f"{filename}:1: the document expands to more than {MAX_VALUES:,} values or "
            f"{MAX_CHARS:,} characters (check its aliases, *name)") from None
    except _NulFound as nul:
        line = _line_of(doc, nul.loc) or 1
        path = ".".join(_show(p) for p in nul.loc) or "(document)"
        raise SpecError(f"{filename}:{line} {path}: contains a NUL character (\\0); "
                        "remove it") from None
    except _ControlFound as bad:
        line = _line_of(doc, bad.loc) or 1
        path = ".".join(_show(p) for p in bad.loc) or "(document)"
        raise SpecError(f"{filename}:{line} {path}: {bad.problem}") from None
    try:
        context: dict[str, Any] = {"base_dir": base_dir, "stored_text": stored}
        if hub_configs:
            context["hub_configs"] = dict(hub_configs)
        if uploaded_workdir is not None:
            context["uploaded_workdir"] = uploaded_workdir
        spec = JobSpec.model_validate(data, context=context)
    except ValidationError as exc:
        found = [_describe(err, doc, filename) for err in exc.errors()[:_MAX_ERRORS]]
        ordered = sorted(dict.fromkeys(found), key=lambda item: item[0])
        raise SpecError([text for _, text in ordered]) from None
    problems = _stated_inputs(spec, purpose, now)
    if problems:
        raise SpecError([f"{filename}:{_line_of(doc, loc) or 1} {'.'.join(loc)}: {why}"
                         for loc, why in problems])
    return spec


def _stated_inputs(spec: JobSpec, purpose: Purpose | None,
                   now: datetime | None) -> list[tuple[tuple[str, ...], str]]:
    """Inputs a purpose needs that the file leaves out, and a deadline already past."""
    out: list[tuple[tuple[str, ...], str]] = []
    w = spec.workload
    if purpose == "plan":
        if w.type == "finetune" and w.total_tokens is None:
            out.append((("workload",), "planning a fine-tune needs the amount of work: give "
                        "`tokens` (e.g. 120m), or `epochs` with `dataset_tokens`"))
        if w.type == "inference" and w.requests is None:
            out.append((("workload",), "planning inference needs the amount of work: give "
                        "`requests` (the number of prompts to run)"))
    if w.type == "finetune" and w.method != "full":
        from gpuopt.jobs.modules import module_names, unknown_targets

        arch = spec.resolved_model()
        bad = unknown_targets(arch, w.lora_targets)
        if bad:
            out.append((("workload", "lora_targets"),
                        f"{', '.join(bad)}: not a module of {arch.name}; its linear modules "
                        f"are {', '.join(module_names(arch))} (or all-linear)"))
    if w.type == "finetune" and w.model_parallel > 1:
        from gpuopt.jobs.parallelism import parallel_problems

        out.extend((("workload", field), why)
                   for field, why in parallel_problems(spec.resolved_model(), w))
    if now is not None and isinstance(spec.deadline, datetime) and spec.deadline <= now:
        out.append((("deadline",), f"{spec.deadline.isoformat()} is already past (it is "
                    f"{now.astimezone(UTC).isoformat(timespec='seconds')} now)"))
    return out


def _load_yaml(text: str, filename: str) -> Any:
    from ruamel.yaml import YAML
    from ruamel.yaml.error import MarkedYAMLError, YAMLError

    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    try:
        return yaml.load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        what = exc.problem or exc.context or "invalid YAML"
        raise SpecError(f"{filename}:{line}: not valid YAML: {what}") from None
    except (YAMLError, ValueError, TypeError, RecursionError, OverflowError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise SpecError(f"{filename}:1: not valid YAML: {first}") from None


class _TooDeep(GpuoptError):
    pass


class _TooBig(GpuoptError):
    pass


class _NulFound(GpuoptError):
    def __init__(self, loc: tuple[Any, ...]) -> None:
        self.loc = loc


class _ControlFound(GpuoptError):
    def __init__(self, loc: tuple[Any, ...], problem: str) -> None:
        self.loc, self.problem = loc, problem


# The values that are scripts or free text and may span lines (TAB, LF, CR); every other
# string of a job file, keys included, is one line (core/safe_text.py).
_MULTILINE = (("run",), ("setup",))
_MULTILINE_UNDER = (("envs",),)


def _multiline(loc: tuple[Any, ...]) -> bool:
    return loc in _MULTILINE or (len(loc) == 2 and loc[:1] in _MULTILINE_UNDER)


class _Budget:
    """What is left of MAX_VALUES / MAX_CHARS while _plain expands the document."""

    def __init__(self) -> None:
        self.values = MAX_VALUES
        self.chars = MAX_CHARS

    def spend(self, chars: int) -> None:
        self.values -= 1
        self.chars -= chars
        if self.values < 0 or self.chars < 0:
            raise _TooBig


def _plain(node: Any, depth: int, budget: _Budget, loc: tuple[Any, ...],
           refuse_control: bool = True) -> Any:
    """ruamel's Commented* containers -> dicts/lists (cycles from aliases cut by depth;
    expansion bounded by ``budget``); a NUL anywhere is refused (no database stores it),
    and so is any terminal control character (core/safe_text.py)."""
    if depth > 50:
        raise _TooDeep
    if isinstance(node, Mapping):
        budget.spend(0)
        out: dict[Any, Any] = {}
        for k, v in node.items():
            key = _key(k)
            _check_text(key, budget, (*loc, key), refuse_control, key=True)
            out[key] = _plain(v, depth + 1, budget, (*loc, key), refuse_control)
        return out
    if isinstance(node, list | tuple):
        budget.spend(0)
        return [_plain(v, depth + 1, budget, (*loc, i), refuse_control)
                for i, v in enumerate(node)]
    if isinstance(node, str):
        _check_text(node, budget, loc, refuse_control)
        return str(node)  # ScalarString subclasses -> str
    budget.spend(8)
    return node


def _check_text(text: Any, budget: _Budget, loc: tuple[Any, ...], refuse_control: bool,
                key: bool = False) -> None:
    if isinstance(text, str):
        budget.spend(len(text))
        if "\x00" in text:
            raise _NulFound(loc)
        if not refuse_control:
            return
        problem = control_problem(text, multiline=not key and _multiline(loc))
        if problem is not None:
            raise _ControlFound(loc, problem)


def _key(key: Any) -> Any:
    return key if isinstance(key, str | int) and not isinstance(key, bool) else str(key)


def _kind(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return "list"
    return "scalar value" if not isinstance(value, Mapping) else "mapping"


def _line_of(doc: Any, loc: tuple[Any, ...]) -> int | None:
    """1-based line of the deepest part of ``loc`` present in the YAML tree."""
    node, line = doc, None
    lc = getattr(node, "lc", None)
    if lc is not None and isinstance(lc.line, int):
        line = lc.line + 1
    for part in loc:
        lc = getattr(node, "lc", None)
        if isinstance(node, Mapping):
            match = next((k for k in node if _key(k) == part), None)
            if match is None:
                break
            if lc is not None:
                with contextlib.suppress(KeyError, TypeError, IndexError, ValueError):
                    line = int(lc.key(match)[0]) + 1
            node = node[match]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            if lc is not None:
                with contextlib.suppress(KeyError, TypeError, IndexError, ValueError):
                    line = int(lc.item(part)[0]) + 1
            node = node[part]
        else:
            break
    return line


def _model_class(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, typing.Annotated):
        for arg in typing.get_args(annotation):
            found = _model_class(arg)
            if found is not None:
                return found
    return None


def _dict_value_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a ``dict[str, ... | Model]`` field's values, if any."""
    if typing.get_origin(annotation) is dict:
        return _model_class(typing.get_args(annotation)[1])
    return None


def _clean_loc(loc: tuple[Any, ...]) -> tuple[tuple[Any, ...], type[BaseModel] | None]:
    """Drop pydantic's union/validator tags; return the path and the model owning its end."""
    cls: type[BaseModel] | None = JobSpec
    out: list[Any] = []
    keyed: type[BaseModel] | None = None  # the next user key indexes a dict of this model
    for i, part in enumerate(loc):
        if keyed is not None:
            if _is_user_key(part):
                out.append(part)
                cls, keyed = keyed, None
            continue
        if cls is not None and isinstance(part, str) and part in cls.model_fields:
            out.append(part)
            owner = cls
            annotation = owner.model_fields[part].annotation
            cls = _model_class(annotation)
            if cls is None and len(out) < len(loc):
                keyed = _dict_value_model(annotation)
                if keyed is not None:
                    continue
                # a dict/list field: keep keys/indexes that follow verbatim
                rest = [p for p in loc[i + 1 :] if isinstance(p, int) or _is_user_key(p)]
                return tuple(out + rest[:1]), owner
        elif cls is not None and isinstance(part, str) and not _is_tag(part):
            out.append(part)  # an unknown key the user wrote
            return tuple(out), cls
    return tuple(out), cls


def _is_tag(part: str) -> bool:
    return "[" in part or part in {"str", "int", "float", "bool", "dict", "list", "none",
                                   "timedelta", "datetime", "decimal", "constrained-str"}


def _is_user_key(part: Any) -> bool:
    return isinstance(part, str) and not _is_tag(part)


def _message(err: Any, loc: tuple[Any, ...], owner: type[BaseModel] | None) -> str:
    kind, ctx = err.get("type", ""), err.get("ctx") or {}
    if kind == "extra_forbidden":
        fields = list(owner.model_fields) if owner is not None else []
        close = difflib.get_close_matches(str(loc[-1]) if loc else "", fields, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return f"unknown key{hint}"
    if kind == "missing":
        return "is required"
    simple = {
        "greater_than_equal": lambda: f"must be >= {ctx.get('ge')}",
        "greater_than": lambda: f"must be > {ctx.get('gt')}",
        "less_than_equal": lambda: f"must be <= {ctx.get('le')}",
        "less_than": lambda: f"must be < {ctx.get('lt')}",
        "literal_error": lambda: f"must be one of {ctx.get('expected')}",
        "int_type": lambda: "must be a whole number",
        "int_parsing": lambda: "must be a whole number",
        "int_from_float": lambda: "must be a whole number",
        "float_type": lambda: "must be a number",
        "float_parsing": lambda: "must be a number",
        "bool_type": lambda: "must be true or false",
        "bool_parsing": lambda: "must be true or false",
        "string_type": lambda: "must be a string",
        "string_too_short": lambda: "must not be empty",
        "string_too_long": lambda: f"must be at most {ctx.get('max_length')} characters",
        "dict_type": lambda: "must be a mapping (key: value)",
        "model_type": lambda: "must be a mapping (key: value)",
        "model_attributes_type": lambda: "must be a mapping (key: value)",
        "list_type": lambda: "must be a list",
        "tuple_type": lambda: "must be a list",
    }
    if kind in simple:
        return simple[kind]()
    msg = str(err.get("msg", "is invalid"))
    return msg.removeprefix("Value error, ").removeprefix("Assertion failed, ")


def _show(part: Any) -> str:
    text = str(part)
    if text and text.isprintable() and " " not in text and "." not in text:
        return text
    return repr(text)


def _describe(err: Any, doc: Any, filename: str) -> tuple[int, str]:
    raw = tuple(err.get("loc", ()))
    loc, owner = _clean_loc(raw)
    line = _line_of(doc, loc) or 1
    path = ".".join(_show(p) for p in loc) or "(document)"
    return line, f"{filename}:{line} {path}: {_message(err, loc, owner)}"


def key_line(text: str, loc: tuple[Any, ...]) -> int | None:
    """1-based line of ``loc`` (e.g. ``("checkpoint", "dir")``) in job.yaml ``text``: for
    checks made after the spec validated (``submit``'s executor checks)."""
    try:
        return _line_of(_load_yaml(text, "<job>"), loc)
    except SpecError:
        return None
