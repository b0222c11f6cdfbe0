"""Bucket URL schemes: which checkpoint or mount locations are object storage, not a
path on the node. The one list every layer asks (the orchestrator, the local executor
and the SkyPilot task builder must agree, or a checkpoint is a bucket to one and a
node-local directory to another)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class BucketScheme:
    prefix: str  # "s3://"
    store: str  # what it names
    # SkyPilot's sky.Storage takes it as a source (sky/data/storage.py: s3, gs, r2, cos,
    # oci and https://<account>.blob.core.windows.net/<container> for Azure).
    skypilot_mounts: bool


BUCKET_SCHEMES: tuple[BucketScheme, ...] = (
    BucketScheme("s3://", "AWS S3", True),
    BucketScheme("gs://", "Google Cloud Storage", True),
    BucketScheme("r2://", "Cloudflare R2", True),
    BucketScheme("az://", "Azure Blob Storage", False),
    BucketScheme("https://", "HTTPS object storage (Azure Blob)", True),
    BucketScheme("http://", "HTTP object storage", False),
    BucketScheme("cos://", "IBM Cloud Object Storage", True),
    BucketScheme("oci://", "OCI Object Storage", True),
)
BUCKET_PREFIXES: tuple[str, ...] = tuple(s.prefix for s in BUCKET_SCHEMES)


def bucket_scheme(location: str) -> BucketScheme | None:
    """The scheme of a bucket URL; None for a path."""
    for scheme in BUCKET_SCHEMES:
        if location.startswith(scheme.prefix):
            return scheme
    return None


def is_bucket_url(location: str) -> bool:
    return location.startswith(BUCKET_PREFIXES)
