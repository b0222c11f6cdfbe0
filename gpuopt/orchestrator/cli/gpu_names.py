"""Telling a user once which GPU a bare name means (`A100` is the 40 GB part)."""

from __future__ import annotations

# A bare name the hardware table resolves to one size of a GPU sold in several.
BARE_NAMES = {"A100": ("A100-40GB", "A100-80GB or A100-80GB-PCIe")}


def bare_name_note(name: str) -> str | None:
    meant = BARE_NAMES.get(name.strip().upper())
    if meant is None:
        return None
    return f"`{name.strip()}` means {meant[0]}; write {meant[1]} for the 80 GB parts"


def bare_gpu_notes(job_text: str) -> list[str]:
    """One note per bare GPU name in a job file's ``resources.gpus`` (none when the file
    cannot be read as YAML: the spec loader has already said why)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    try:
        doc = YAML(typ="safe", pure=True).load(job_text)
    except (YAMLError, ValueError):
        return []
    gpus = doc.get("resources", {}).get("gpus") if isinstance(doc, dict) and isinstance(
        doc.get("resources"), dict) else None
    names = [gpus] if isinstance(gpus, str) else gpus if isinstance(gpus, list) else []
    notes = [bare_name_note(n) for n in names if isinstance(n, str)]
    return list(dict.fromkeys(n for n in notes if n))
