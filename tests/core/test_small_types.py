"""Bucket schemes, places and backoff: the small shared value types of gpuopt.core."""

from __future__ import annotations

from datetime import timedelta

from gpuopt.core.backoff import Backoff
from gpuopt.core.buckets import BUCKET_PREFIXES, bucket_scheme, is_bucket_url
from gpuopt.core.places import Place


def test_bucket_urls_and_paths() -> None:
    for url in ("s3://b/k", "gs://b", "az://c/p", "https://acct.blob.core.windows.net/c",
                "http://minio:9000/b", "r2://b", "cos://b", "oci://b"):
        assert is_bucket_url(url) and bucket_scheme(url) is not None, url
    for path in ("/ckpt", "./ckpt", "ckpt", "s3:/typo", "file:///x"):
        assert not is_bucket_url(path) and bucket_scheme(path) is None, path
    assert len(set(BUCKET_PREFIXES)) == len(BUCKET_PREFIXES)


def test_a_place_has_one_spelling_of_no_zone_and_prints_like_infra() -> None:
    assert Place("aws", "us-east-1", "") == Place("aws", "us-east-1", None)
    assert hash(Place("aws", "us-east-1", "")) == hash(Place("aws", "us-east-1"))
    assert str(Place("aws", "us-east-1", "us-east-1a")) == "aws/us-east-1/us-east-1a"
    assert str(Place("gcp", "us-central1")) == "gcp/us-central1"
    assert Place("aws", "us-east-1", "us-east-1a").regional == Place("aws", "us-east-1")
    places = [Place("aws", "b", "z"), Place("aws", "b"), Place("aws", "a", "y")]
    assert [str(p) for p in sorted(places, key=lambda p: p.sort_key)] == [
        "aws/a/y", "aws/b", "aws/b/z"]


def test_backoff_grows_and_is_capped() -> None:
    b = Backoff(first=timedelta(seconds=1), factor=2, cap=timedelta(seconds=30))
    assert [b.delay(n).total_seconds() for n in range(1, 8)] == [1, 2, 4, 8, 16, 30, 30]
    assert b.delay(0) == b.delay(1) == timedelta(seconds=1)
    assert b.delay(10**6) == timedelta(seconds=30)  # no overflow far past the cap
