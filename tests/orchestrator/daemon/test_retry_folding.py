"""Third-party retry warnings are folded into one INFO line per poll with the host, not
the query (issue 29.10: urllib3's ~430-character lines with URL-encoded queries)."""

from __future__ import annotations

import io
import logging

import pytest

from tests.net import free_port


@pytest.fixture
def logged() -> io.StringIO:
    from gpuopt.orchestrator.daemon.logs import setup_logging

    stream = io.StringIO()
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    setup_logging("text", stream=stream)
    yield stream
    for h in list(root.handlers):
        root.removeHandler(h)
    for h in before[0]:
        root.addHandler(h)
    root.setLevel(before[1])


def test_urllib3_retries_become_one_info_line_per_host(logged: io.StringIO) -> None:
    import requests
    from requests.adapters import HTTPAdapter
    from urllib3.util.retry import Retry

    from gpuopt.orchestrator.daemon.logs import log_folded_retries, retry_folder

    folder = retry_folder()
    assert folder is not None
    folder.take()
    port = free_port()  # nothing listens there
    session = requests.Session()
    session.mount("http://", HTTPAdapter(max_retries=Retry(total=2, backoff_factor=0)))
    query = "q=%7B%22rentable%22%3A+%7B%22eq%22%3A+true%7D%7D"
    with pytest.raises(requests.ConnectionError):
        session.get(f"http://127.0.0.1:{port}/api/v0/bundles/?{query}", timeout=5)
    assert "Retrying" not in logged.getvalue()
    log_folded_retries(logging.getLogger("gpuopt.daemon"), "price poll vast")
    lines = logged.getvalue().strip().splitlines()
    assert len(lines) == 1, lines
    assert "INFO" in lines[0]
    assert "price poll vast: 2 connection retries to 127.0.0.1 (NewConnectionError)" in lines[0]
    assert "%7B" not in lines[0] and "bundles" not in lines[0]
    log_folded_retries(logging.getLogger("gpuopt.daemon"), "price poll vast")
    assert len(logged.getvalue().strip().splitlines()) == 1  # taken: not said twice


def test_other_urllib3_warnings_still_pass(logged: io.StringIO) -> None:
    logging.getLogger("urllib3.connectionpool").warning("Connection pool is full")
    assert "Connection pool is full" in logged.getvalue()


def test_an_unreachable_api_is_said_without_its_query() -> None:
    """The poll's failure line names the host and path, not the URL-encoded filter."""
    from gpuopt.providers.base import ProviderError
    from gpuopt.providers.http_json import request_json, session

    port = free_port()
    s = session(retry_total=1, backoff_factor=0)
    query = "q=%7B%22rentable%22%3A+%7B%22eq%22%3A+true%7D%7D"
    with pytest.raises(ProviderError) as err:
        request_json(s, "vast", "GET", f"http://127.0.0.1:{port}/api/v0/bundles/?{query}")
    text = str(err.value)
    assert text.startswith("vast: API unreachable: ")
    assert "/api/v0/bundles/?..." in text and "%7B" not in text
