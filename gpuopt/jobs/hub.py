"""A model's config.json from the Hugging Face Hub, for a ``model: {name: org/model}``
that the built-in table does not have.

I/O at the edge: the spec loader calls :func:`fetch_hub_config` while validating a job
file (estimate, plan, submit), once per job; huggingface_hub caches the file (its
HF_HUB_CACHE / HF_HOME) and answers from the cache when the Hub cannot be reached or
HF_HUB_OFFLINE=1. Gated models (Llama, Gemma) need a token: huggingface_hub reads
HF_TOKEN (or the one `hf auth login` saved). HF_ENDPOINT points it at a mirror.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gpuopt.core.errors import GpuoptError

# The Hub's repo id grammar (huggingface_hub.utils.validate_repo_id): one namespace, a
# name of letters, digits, '-', '_', '.'; at most 96 characters.
HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$")
CONFIG_FILE = "config.json"
TIMEOUT_S = 10.0


class HubError(GpuoptError, ValueError):
    """The config.json could not be had; the message names the model and what to do."""


@dataclass(frozen=True, slots=True)
class HubConfig:
    repo_id: str
    revision: str | None  # the commit the Hub served (X-Repo-Commit), when known
    data: bytes  # the config.json as served


def looks_like_hub_id(name: str) -> bool:
    return bool(HUB_ID.match(name.strip())) and ".." not in name and "--" not in name


def _alternative(repo_id: str) -> str:
    return (f"or download https://huggingface.co/{repo_id}/blob/main/config.json and give "
            "`model: {config: path/to/config.json}` instead")


def _unreachable_reason(repo_id: str, revision: str | None,
                        endpoint: str | None) -> str | None:
    """Why the Hub cannot be reached (one HEAD of the config.json, no retries), or None
    when it answered (whatever it answered: the download then says it precisely) or
    HF_HUB_OFFLINE is set. huggingface_hub's download retries a refused connection five
    times with warnings and then fails on a closed client; asked once here, an offline
    machine gets one clean error."""
    import huggingface_hub
    from huggingface_hub import constants
    from huggingface_hub.utils import HfHubHTTPError

    if constants.HF_HUB_OFFLINE:  # the library reads only its cache: no retries
        return None
    url = huggingface_hub.hf_hub_url(repo_id, CONFIG_FILE, revision=revision,
                                     endpoint=endpoint)
    try:
        with _quiet_hub_logs():
            huggingface_hub.get_hf_file_metadata(url, timeout=TIMEOUT_S)
    except HfHubHTTPError:
        return None  # it answered: gated, missing, ...
    except Exception as exc:  # no answer: a refused connection, a timeout, DNS
        return _first_cause(exc)
    return None


@contextmanager
def _quiet_hub_logs() -> Iterator[None]:
    """huggingface_hub's retry warnings ("Retrying in 1s [Retry 1/5]") kept off the
    terminal while gpuopt asks it; the outcome is said once, by gpuopt."""
    import logging

    hub_log = logging.getLogger("huggingface_hub")
    before = hub_log.level
    hub_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        hub_log.setLevel(before)


def _first_cause(exc: BaseException) -> str:
    """The first error of a chain (a refused connection), not the library's last one
    ("Cannot send a request, as the client has been closed")."""
    seen: list[BaseException] = [exc]
    while (nxt := seen[-1].__cause__ or seen[-1].__context__) is not None and len(seen) < 10:
        seen.append(nxt)
    for e in reversed(seen):
        text = str(e).splitlines()[0] if str(e) else ""
        if text and "client has been closed" not in text:
            return text
    return type(exc).__name__


def fetch_hub_config(repo_id: str, revision: str | None = None) -> HubConfig:
    """Download (or read from the cache) ``repo_id``'s config.json.

    Raises HubError when the model is unknown, gated, has no config.json, or the Hub
    cannot be reached and nothing is cached."""
    try:
        import huggingface_hub
        from huggingface_hub.utils import (
            EntryNotFoundError,
            GatedRepoError,
            HFValidationError,
            LocalEntryNotFoundError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )
    except ImportError:
        raise HubError(f"{repo_id} is not in the built-in table and reading it from the "
                       "Hugging Face Hub needs huggingface_hub (pip install huggingface_hub); "
                       f"{_alternative(repo_id)}") from None
    endpoint = os.environ.get("HF_ENDPOINT") or None

    def download(cached_only: bool) -> str:
        return str(huggingface_hub.hf_hub_download(
            repo_id, CONFIG_FILE, revision=revision, endpoint=endpoint,
            etag_timeout=TIMEOUT_S, library_name="gpuopt", local_files_only=cached_only))

    def unreachable(why: str) -> HubError:
        return HubError(f"cannot reach the Hugging Face Hub to read {repo_id}'s config.json"
                        f" ({why[:160]}), and it is not cached; connect, "
                        f"{_alternative(repo_id)}")

    offline = _unreachable_reason(repo_id, revision, endpoint)
    try:
        if offline is not None:  # fail once, from the cache or cleanly: no library retries
            try:
                path = download(cached_only=True)
            except Exception:  # not cached
                raise unreachable(offline) from None
        else:
            with _quiet_hub_logs():
                path = download(cached_only=False)
    except HubError:
        raise
    except GatedRepoError:
        raise HubError(f"{repo_id} is a gated model: accept its license on "
                       f"https://huggingface.co/{repo_id} and set HF_TOKEN to a token of "
                       f"that account, {_alternative(repo_id)}") from None
    except RevisionNotFoundError:
        raise HubError(f"{repo_id} has no revision {revision!r} on the Hub") from None
    except RepositoryNotFoundError:
        raise HubError(f"{repo_id}: no such model on the Hugging Face Hub (or it is private: "
                       f"set HF_TOKEN), {_alternative(repo_id)}") from None
    except LocalEntryNotFoundError:
        # The Hub could not be reached (or HF_HUB_OFFLINE=1) and the file is not cached;
        # a subclass of EntryNotFoundError, so caught before it.
        raise unreachable("offline") from None
    except EntryNotFoundError:
        raise HubError(f"{repo_id} has no config.json on the Hub (a GGUF-only or non-"
                       f"transformers repo?); give the base model's id, "
                       f"{_alternative(repo_id)}") from None
    except HFValidationError as exc:
        raise HubError(f"{repo_id!r} is not a Hub model id: {exc}") from None
    except Exception as exc:  # connection and HTTP errors, and library quirks
        # (huggingface_hub 1.x can raise RuntimeError "client has been closed" when it
        # retries after a refused connection): whatever it was, the cache may still have it.
        try:
            path = download(cached_only=True)
        except Exception:  # not cached either
            raise unreachable(_first_cause(exc)) from None
    from gpuopt.jobs.bounded_read import UnreadableFile, read_bounded
    from gpuopt.jobs.hfconfig import MAX_CONFIG_BYTES

    file = Path(str(path))
    try:
        data = read_bounded(file, MAX_CONFIG_BYTES)
    except (OSError, UnreadableFile) as exc:
        raise HubError(f"cannot read the cached config.json of {repo_id}: {exc}") from None
    # snapshots/<commit>/config.json: the commit the file came from
    commit = file.parent.name if file.parent.parent.name == "snapshots" else None
    return HubConfig(repo_id=repo_id, revision=commit, data=data)

