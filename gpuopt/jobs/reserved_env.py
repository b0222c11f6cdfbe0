"""Environment variable names a job may not set in ``envs:`` or ask for in ``secrets:``.

They are the names of gpuopt's own settings and of the credentials the clouds' SDKs and
SkyPilot read from the environment. A job asking for one is either asking for the
control node's credentials (before issue 26 a daemon handed its own values out) or
overriding, on the node, the identity SkyPilot set up there. The list is deliberate:
each entry names where the SDK documents that it reads the variable.

- ``GPUOPT_``: gpuopt's configuration overrides (GPUOPT_DATABASE_URL,
  GPUOPT_SMTP_PASSWORD, ...: orchestrator/config) and the checkpoint contract's own
  variables (jobs/executors/contract.py), which gpuopt sets.
- ``AWS_``: boto3/botocore read credentials and their sources from AWS_ACCESS_KEY_ID,
  AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_PROFILE, AWS_SHARED_CREDENTIALS_FILE,
  AWS_CONFIG_FILE, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN, AWS_CONTAINER_CREDENTIALS_*
  (boto3 guide "Credentials" and "Configuration: environment variables"); every one of
  botocore's settings is an AWS_ variable, so the prefix.
- Google: GOOGLE_APPLICATION_CREDENTIALS (google-auth's Application Default
  Credentials), GOOGLE_OAUTH_ACCESS_TOKEN, CLOUDSDK_* (gcloud's
  properties, e.g. CLOUDSDK_AUTH_ACCESS_TOKEN_FILE, CLOUDSDK_CONFIG), GCE_METADATA_HOST /
  GCE_METADATA_IP / GCE_METADATA_ROOT (google-auth's metadata-server address: pointing it
  elsewhere hands the token request to someone else).
- ``AZURE_``: azure-identity's EnvironmentCredential and DefaultAzureCredential read
  AZURE_CLIENT_ID, AZURE_TENANT_ID, AZURE_CLIENT_SECRET, AZURE_CLIENT_CERTIFICATE_PATH,
  AZURE_CLIENT_CERTIFICATE_PASSWORD, AZURE_USERNAME, AZURE_PASSWORD,
  AZURE_FEDERATED_TOKEN_FILE, AZURE_AUTHORITY_HOST; gpuopt reads AZURE_SUBSCRIPTION_ID
  (providers/azure). Its managed identity reads IDENTITY_ENDPOINT, IDENTITY_HEADER,
  IDENTITY_SERVER_THUMBPRINT, IMDS_ENDPOINT, MSI_ENDPOINT, MSI_SECRET.
- The API keys gpuopt's own adapters read: LAMBDA_API_KEY, RUNPOD_API_KEY, VAST_API_KEY
  (providers/lambda_cloud, runpod, vast).
- ``SKYPILOT_``: SkyPilot's own settings (SKYPILOT_API_SERVER_ENDPOINT, ...) and the
  variables it sets on every node (SKYPILOT_TASK_ID, SKYPILOT_NODE_RANK, ...).
"""

from __future__ import annotations

RESERVED_PREFIXES = ("GPUOPT_", "AWS_", "AZURE_", "CLOUDSDK_", "SKYPILOT_")
RESERVED_NAMES = frozenset({
    "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_OAUTH_ACCESS_TOKEN",
    "GCE_METADATA_HOST", "GCE_METADATA_IP", "GCE_METADATA_ROOT",
    "IDENTITY_ENDPOINT", "IDENTITY_HEADER", "IDENTITY_SERVER_THUMBPRINT", "IMDS_ENDPOINT",
    "MSI_ENDPOINT", "MSI_SECRET",
    "LAMBDA_API_KEY", "RUNPOD_API_KEY", "VAST_API_KEY",
})


def reserved_reason(name: str) -> str | None:
    """Why ``name`` is refused in a job's ``envs`` / ``secrets``, or None if it is not."""
    upper = name.upper()
    prefix = next((p for p in RESERVED_PREFIXES if upper.startswith(p)), None)
    if prefix is not None:
        owner = "gpuopt's own settings" if prefix == "GPUOPT_" else (
            "SkyPilot's settings" if prefix == "SKYPILOT_" else "a cloud SDK's credentials")
        return f"{name}: {prefix}* names are {owner}"
    if upper in RESERVED_NAMES:
        return f"{name}: the name of a cloud SDK's credential"
    return None
