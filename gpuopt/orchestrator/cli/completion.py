"""Shell completion of option values (`gpuopt --install-completion`): GPU names, clouds,
regions, markets and job ids. Each function is called by the shell at a TAB with what
was typed so far; it must answer fast and never fail (an error completes nothing)."""

from __future__ import annotations

from collections.abc import Iterable


def _matching(values: Iterable[str], incomplete: str) -> list[str]:
    low = incomplete.lower()
    return sorted({v for v in values if v.lower().startswith(low)})


def complete_gpu(incomplete: str) -> list[str]:
    """GPU models of the hardware table (`estimate --gpu` takes NAME[:COUNT])."""
    from gpuopt.providers.hardware import GPUS

    name, sep, _ = incomplete.partition(":")
    if sep:  # NAME: -> the counts a node may have
        return [f"{name}:{n}" for n in (1, 2, 4, 8) if f"{name}:{n}".startswith(incomplete)]
    return _matching(GPUS, incomplete)


def complete_cloud(incomplete: str) -> list[str]:
    from gpuopt.providers.clouds import cloud_names

    return _matching(cloud_names(), incomplete)


def complete_market(incomplete: str) -> list[str]:
    from gpuopt.providers.offer import Market

    return _matching((m.value for m in Market), incomplete)


def complete_region(incomplete: str) -> list[str]:
    """Regions (and zones) the embedded snapshot and the store's latest prices name."""
    try:
        from gpuopt.providers.snapshot import load_snapshot

        offers = load_snapshot().offers
        return _matching({o.region for o in offers} | {o.zone for o in offers if o.zone},
                         incomplete)
    except Exception:  # completion never fails the shell
        return []


def complete_job_id(incomplete: str) -> list[str]:
    """The ids of the store's jobs, newest first, that start with what was typed."""
    try:
        from gpuopt.orchestrator.config import load_config
        from gpuopt.orchestrator.store import open_store_if_exists
        from gpuopt.orchestrator.store.jobs_repo import list_jobs

        store = open_store_if_exists(load_config(None).database.url)
        if store is None:
            return []
        try:
            with store.session() as session:
                ids = [j.id for j in list_jobs(session, limit=200)]
        finally:
            store.close()
    except Exception:  # completion never fails the shell
        return []
    return [i for i in reversed(ids) if i.startswith(incomplete)]
