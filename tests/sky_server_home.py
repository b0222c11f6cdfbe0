"""Prepare a throwaway HOME for a SkyPilot API server (run with HOME set; see sky_server).

``python -m tests.sky_server_home prepare AWS GCP Azure``: the catalog cache (SkyPilot's real
format, gpuopt's snapshot exported into it), credentials files shaped like the clouds'
own, ``~/.sky/config.yaml`` allowing those clouds, and those clouds enabled for compute
in SkyPilot's state database, written by SkyPilot's own ``global_user_state``.
``... enable AWS GCP Azure`` (server running): waits for the server's boot-time cloud
check and enables the clouds again (that check cannot reach the clouds from here).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpuopt.jobs.executors.sky_catalog import sync_catalogs
from gpuopt.providers.snapshot import load_snapshot
from tests.jobs.executors.sky_catalog_fixture import write_skypilot_cache

# The example keys of AWS's own documentation (they authenticate nowhere).
AWS_CREDENTIALS = ("[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
                   "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n")
AWS_CONFIG = "[default]\nregion = us-east-1\n"
# gcloud's application-default credentials of a user login (authorized_user)
GCP_ADC = {"client_id": "764086051850-6qr4p6gpi6hn506pt8ejuq83di341hur.apps."
           "googleusercontent.com", "client_secret": "d-FL95Q19q7MQmFpd7hHD0Ty",
           "refresh_token": "1//0example-refresh-token", "type": "authorized_user"}
GCP_CONFIG = "[core]\nproject = gpuopt-test-project\naccount = tester@example.com\n"


def write_credentials(home: Path) -> None:
    for rel, text in ((".aws/credentials", AWS_CREDENTIALS), (".aws/config", AWS_CONFIG),
                      (".config/gcloud/application_default_credentials.json",
                       json.dumps(GCP_ADC, indent=2)),
                      (".config/gcloud/configurations/config_default", GCP_CONFIG),
                      (".config/gcloud/active_config", "default")):
        path = home / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def enable_clouds(home: Path, names: list[str]) -> None:
    """SkyPilot's config allows exactly these clouds and its state DB has them enabled:
    what a successful ``sky check`` leaves behind (the cached list the API server reads)."""
    config = home / ".sky" / "config.yaml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text("allowed_clouds:\n" + "".join(f"  - {n.lower()}\n" for n in names),
                      encoding="utf-8")
    from sky import global_user_state
    from sky.clouds import CloudCapability

    workspace = "default"
    allowed = [n.lower() for n in names]
    global_user_state.set_allowed_clouds(allowed, workspace)
    global_user_state.set_enabled_clouds(list(names), CloudCapability.COMPUTE, workspace)
    global_user_state.set_enabled_clouds(list(names), CloudCapability.STORAGE, workspace)


BOOT_CHECK = "skypilot-server-on-boot-check"  # sky.server.constants.ON_BOOT_CHECK_REQUEST_ID


def main(command: str, names: list[str]) -> int:
    home = Path.home()
    if command == "prepare":
        write_skypilot_cache(home)
        sync_catalogs(list(load_snapshot().offers))
        write_credentials(home)
        enable_clouds(home, names)
        return 0
    # "enable", once the server runs: its boot-time `sky check` asks the clouds, fails
    # offline and records no cloud enabled; wait for it, then enable them again.
    from sky.server import constants

    from gpuopt.jobs.executors import sky_sdk

    assert constants.ON_BOOT_CHECK_REQUEST_ID == BOOT_CHECK
    sky_sdk.get(BOOT_CHECK)
    enable_clouds(home, names)
    print(json.dumps(sky_sdk.enabled_clouds()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2:]))


