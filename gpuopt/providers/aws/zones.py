"""AWS zones SkyPilot can place a cluster in: a region's standard availability zones.

AWS also sells capacity in Local Zones (zone id ``use1-atl2-az1``, name
``us-east-1-atl-2a``) and Wavelength Zones (``use1-wl1-bos-wlz1``,
``us-east-1-wl1-bos-wlz-1``): opt-in zones an account must enable, which SkyPilot's
catalog lists but cannot target (it maps such a zone to its parent region, so a plan
pinned to one launches somewhere else). gpuopt leaves their prices out wherever a zone
is read (SkyPilot catalog files and the snapshot built from them).
"""

from __future__ import annotations

import re

# A standard zone id: region code + "-az" + digit (use1-az1, apne1-az4).
_STANDARD_ID = re.compile(r"^[a-z]{2,}[0-9]+-az[0-9]+$")


def is_standard_zone(region: str, zone: str | None) -> bool:
    """True for no zone, a standard zone id (use1-az1) or a standard zone name
    (``us-east-1a``: the region plus one letter); False for Local, Wavelength and any
    other opt-in zone (use1-atl2-az1, us-east-1-atl-2a, us-east-1-wl1-bos-wlz-1)."""
    if not zone:
        return True
    if _STANDARD_ID.match(zone):
        return True
    return len(zone) == len(region) + 1 and zone.startswith(region) and zone[-1].isalpha()
