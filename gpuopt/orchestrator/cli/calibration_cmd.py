"""`gpuopt calibration list | export FILE | import FILE | clear`: what finished attempts
measured (peak memory, tokens/s by configuration), which `estimate` and `plan` use; a
team shares it by exporting and importing the JSON file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from gpuopt.jobs.estimate.calibration import CalibrationRecord
    from gpuopt.orchestrator.store import Store

ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Configuration file (TOML).")]
FORMAT = "gpuopt-calibration"
VERSION = 1
_TEXT = {"fingerprint": 64, "model": 128, "workload_type": 16, "method": 16, "precision": 16,
         "framework": 32, "gpu": 32}
_COUNTS = ("batch_size", "sequence_length", "gpu_count")


def register(app: typer.Typer) -> None:
    cal = typer.Typer(help="What finished runs measured, which estimate and plan use.\n\n"
                      "Example: gpuopt calibration export team.json", no_args_is_help=True)
    cal.command("list")(list_records)
    cal.command("export")(export_records)
    cal.command("import")(import_records)
    cal.command("clear")(clear_records)
    app.add_typer(cal, name="calibration")


def _store(config: Path | None, *, create: bool = False) -> Store | None:
    from gpuopt.orchestrator.config import load_config
    from gpuopt.orchestrator.store import open_store, open_store_if_exists

    url = load_config(config).database.url
    return open_store(url) if create else open_store_if_exists(url)


def _rows(config: Path | None) -> list[tuple[CalibrationRecord, datetime, str]]:
    from gpuopt.orchestrator.store.telemetry_repo import calibration_records

    store = _store(config)
    if store is None:
        return []
    try:
        with store.session() as session:
            return calibration_records(session)
    finally:
        store.close()


def _doc(record: CalibrationRecord, at: datetime, origin: str) -> dict[str, Any]:
    return {**record.to_json(), "measured_at": at.isoformat(), "origin": origin}


def list_records(
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    config: ConfigOpt = None,
) -> None:
    """The calibration records: configuration, measured peak memory and tokens/s.

    Example: gpuopt calibration list --json
    """
    rows = _rows(config)
    if as_json:
        typer.echo(json.dumps([_doc(*r) for r in rows], indent=2))
        return
    from gpuopt.orchestrator.cli.console import out_console
    from gpuopt.orchestrator.cli.tables import ID, NUM, Col, print_table

    console = out_console()
    if not rows:
        console.print("no calibration records yet: they come from finished runs on GPUs "
                      "with nvidia-smi, or `gpuopt calibration import FILE`", soft_wrap=True)
        return
    table = [[r.model, r.method, f"{r.batch_size}x{r.sequence_length}",
              f"{r.gpu_count}x{r.gpu}",
              f"{r.peak_memory_mib:,}" if r.peak_memory_mib is not None else "-",
              f"{r.tokens_per_second:,.0f}" if r.tokens_per_second is not None else "-",
              f"{at:%Y-%m-%d}", origin] for r, at, origin in rows]
    print_table(console, [Col("model", ID), Col("method"), Col("batch x seq", NUM),
                          Col("GPUs", min_width=6), Col("peak MiB", NUM), Col("tokens/s", NUM),
                          Col("measured", optional=1), Col("origin", optional=2)], table)


def export_records(
    file: Annotated[Path, typer.Argument(help="The JSON file to write.")],
    config: ConfigOpt = None,
) -> None:
    """Write every calibration record to FILE (JSON), for another installation to import.

    Example: gpuopt calibration export team.json
    """
    from gpuopt.orchestrator.cli.console import err_console

    rows = _rows(config)
    doc = {"format": FORMAT, "version": VERSION,
           "records": [_doc(r, at, origin) for r, at, origin in rows]}
    tmp = file.with_name(file.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    tmp.replace(file)
    err_console().print(f"wrote {len(rows)} record(s) to {file}")


def parse_export(text: str, where: str) -> list[tuple[CalibrationRecord, datetime]]:
    """The records of an export file; UserError (exit 2) naming the record and field."""
    from gpuopt.core.errors import UserError
    from gpuopt.jobs.estimate.calibration import CalibrationRecord
    from gpuopt.providers.hardware import GPUS

    def bad(message: str) -> UserError:
        return UserError(f"{where}: {message}", exit_code=2)

    try:
        doc = json.loads(text)
    except ValueError as err:
        raise bad(f"not JSON ({err})") from err
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise bad(f'not a calibration export (no "format": "{FORMAT}")')
    if doc.get("version") != VERSION:
        raise bad(f"version {doc.get('version')!r}: this gpuopt reads version {VERSION}")
    records = doc.get("records")
    if not isinstance(records, list):
        raise bad('"records" must be a list')
    out = []
    for i, item in enumerate(records):
        at = f"records[{i}]"
        if not isinstance(item, dict):
            raise bad(f"{at} must be an object")
        values: dict[str, Any] = {}
        for key, limit in _TEXT.items():
            v = item.get(key)
            if not isinstance(v, str) or not v or len(v) > limit:
                raise bad(f"{at}.{key} must be text of 1 to {limit} characters")
            values[key] = v
        if values["gpu"] not in GPUS:
            raise bad(f"{at}.gpu {values['gpu']!r} is not a known GPU ({', '.join(GPUS)})")
        for key in _COUNTS:
            v = item.get(key)
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= 10_000_000:
                raise bad(f"{at}.{key} must be a whole number from 1 to 10,000,000")
            values[key] = v
        peak, tps = item.get("peak_memory_mib"), item.get("tokens_per_second")
        if peak is not None and (not isinstance(peak, int) or isinstance(peak, bool)
                                 or not 1 <= peak <= 10_000_000):
            raise bad(f"{at}.peak_memory_mib must be null or MiB from 1 to 10,000,000")
        if tps is not None and (isinstance(tps, bool) or not isinstance(tps, int | float)
                                or not 0 < tps < 1e12):
            raise bad(f"{at}.tokens_per_second must be null or a positive number")
        if peak is None and tps is None:
            raise bad(f"{at} measures nothing: give peak_memory_mib or tokens_per_second")
        try:
            when = datetime.fromisoformat(str(item.get("measured_at")))
        except ValueError as err:
            raise bad(f"{at}.measured_at must be an ISO 8601 time") from err
        when = when.astimezone(UTC) if when.tzinfo else when.replace(tzinfo=UTC)
        out.append((CalibrationRecord(**values, peak_memory_mib=peak,
                                      tokens_per_second=float(tps) if tps is not None
                                      else None), when))
    return out


def import_records(
    file: Annotated[Path, typer.Argument(help="A file written by `calibration export`.")],
    config: ConfigOpt = None,
) -> None:
    """Add the records of FILE (all of them, or none when one is invalid).

    Example: gpuopt calibration import team.json
    """
    from gpuopt.core.errors import UserError
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.store.telemetry_repo import add_calibrations

    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise UserError(f"{file}: cannot read it ({err})", exit_code=2) from err
    records = parse_export(text, str(file))
    store = _store(config, create=True)
    assert store is not None
    try:
        with store.transaction() as session:
            added = add_calibrations(session, records, origin="imported")
    finally:
        store.close()
    err_console().print(f"imported {added} record(s) from {file}")


def clear_records(config: ConfigOpt = None) -> None:
    """Delete every calibration record (estimates go back to the model alone).

    Example: gpuopt calibration clear
    """
    from gpuopt.orchestrator.cli.console import err_console
    from gpuopt.orchestrator.store.telemetry_repo import clear_calibration

    store = _store(config)
    removed = 0
    if store is not None:
        try:
            with store.transaction() as session:
                removed = clear_calibration(session)
        finally:
            store.close()
    err_console().print(f"removed {removed} calibration record(s)")
