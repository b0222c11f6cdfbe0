"""Database URLs shown to people never carry the password."""

from __future__ import annotations

from gpuopt.orchestrator.store.url import shown_url


def test_password_is_masked_and_the_rest_kept() -> None:
    assert shown_url("postgresql+psycopg://gpuopt:s3cret@db:5432/gpuopt?sslmode=require") == (
        "postgresql+psycopg://gpuopt:***@db:5432/gpuopt?sslmode=require"
    )
    assert "s3cret" not in shown_url("postgresql://u:s3cret@h/d")


def test_urls_without_a_password_are_unchanged() -> None:
    for url in ("sqlite:////var/lib/gpuopt/gpuopt.db", "postgresql+psycopg://postgres@127.0.0.1/test",
                "postgresql://h/d"):
        assert shown_url(url) == url


def test_password_query_parameters_are_masked() -> None:
    shown = shown_url("postgresql+psycopg://u:pw1@db/app?sslmode=require&password=pw2"
                      "&sslpassword=pw3")
    assert "pw1" not in shown and "pw2" not in shown and "pw3" not in shown
    assert shown == ("postgresql+psycopg://u:***@db/app?password=***&sslmode=require"
                     "&sslpassword=***")
    assert "pw" not in shown_url("postgresql://u:pw@h:notaport/d?password=pw")
