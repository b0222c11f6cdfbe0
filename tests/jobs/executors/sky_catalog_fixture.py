"""A small SkyPilot catalog cache in SkyPilot's real format (catalogs/v8, as
``sky/catalog/data_fetchers/fetch_{aws,gcp}.py`` write it and ``sky.catalog`` reads it).

AWS: zone *ids* in vms.csv, mapped to zone names by ``aws/az_mappings-<hash>.csv``; CPU
rows of SkyPilot's default families (m6i, c6i) and GPU rows. GCP: VM rows (no accelerator)
and accelerator rows (empty InstanceType, the GPU's own price), which SkyPilot adds up.
Azure: regional rows, no zones. Nebius: the recorded rows of the public catalog file
(tests/providers/skypilot_catalog/catalog_v8/nebius/vms.csv), so a plan that picks a
catalog-only cloud finds SkyPilot's catalog for it cached.
Prices are SkyPilot-shaped, not current.
common/accelerators.csv: the rows of skypilot-org/skypilot-catalog's
catalogs/v8/common/accelerators.csv for the GPUs gpuopt places (SkyPilot canonicalises
accelerator names with it); common/metadata.csv: the columns SkyPilot reads from it
(``sky/utils/accelerator_registry.py``: GPU, MemoryGB, Manufacturer).
"""

from __future__ import annotations

from pathlib import Path

from gpuopt.jobs.executors.sky_catalog import CATALOG_SCHEMA_VERSION, catalog_columns

_A10G = ("\"{'Gpus': [{'Name': 'A10G', 'Manufacturer': 'NVIDIA', 'Count': 1, "
         "'MemoryInfo': {'SizeInMiB': 24576}}], 'TotalGpuMemoryInMiB': 24576}\"")

AWS_VMS = ",".join(catalog_columns()["aws"]) + "\n" + "".join(
    f"{row}\n" for zone in ("use1-az1", "use1-az2", "use1-az4") for row in (
        f"m6i.large,,,2.0,8.0,,0.096,0.0368,us-east-1,{zone},x86_64,,,,,",
        f"m6i.2xlarge,,,8.0,32.0,,0.384,0.1556,us-east-1,{zone},x86_64,,,,,",
        f"c6i.2xlarge,,,8.0,16.0,,0.34,0.1379,us-east-1,{zone},x86_64,,,,,",
        f"g5.xlarge,A10G,1.0,4.0,16.0,{_A10G},1.006,0.4557,us-east-1,{zone},x86_64,"
        "nvme-ssd,True,250,1,",
    )
)
# aws_user_hash 'default': what SkyPilot keeps for an account it cannot identify
AWS_AZ_MAPPINGS = (
    "AvailabilityZoneName,AvailabilityZone\n"
    "us-east-1a,use1-az1\nus-east-1b,use1-az2\nus-east-1c,use1-az4\n"
    "us-west-2a,usw2-az2\nus-west-2b,usw2-az1\nus-west-2c,usw2-az3\n"
)

GCP_VMS = ",".join(catalog_columns()["gcp"]) + "\n" + "".join(
    f"{row}\n" for zone in ("us-central1-a", "us-central1-b") for row in (
        f"n2-standard-8,8.0,32.0,,,,us-central1,{zone},0.388472,0.09442",
        f"n1-standard-4,4.0,15.0,,,,us-central1,{zone},0.189999,0.04",
        f"n1-standard-8,8.0,30.0,,,,us-central1,{zone},0.379998,0.08",
        f"g2-standard-4,4.0,16.0,,,,us-central1,{zone},0.146994,0.05878",
        f"a2-highgpu-1g,12.0,85.0,,,,us-central1,{zone},0.74885,0.2246",
        f",,,T4,1,T4,us-central1,{zone},0.35,0.14",
        f",,,T4,2,T4,us-central1,{zone},0.7,0.28",
        f",,,L4,1,L4,us-central1,{zone},0.5599,0.224",
        f",,,A100,1,A100,us-central1,{zone},2.933908,0.9208",
    )
) + "".join(  # where gpuopt's snapshot places qlora-7b (deploy/examples): an A100 in Europe
    f"{row}\n" for zone in ("europe-west4-a", "europe-west4-b") for row in (
        f"a2-highgpu-1g,12.0,85.0,,,,europe-west4,{zone},0.82419,0.24725",
        f",,,A100,1,A100,europe-west4,{zone},3.229345,1.01361",
    )
) + "".join(  # and where the broadened snapshot places it now: me-west1 (the A2 host and
    # A100 rows of skypilot-org/skypilot-catalog catalogs/v8/gcp/vms.csv, commit 006059e0)
    f"{row}\n" for zone in ("me-west1-a", "me-west1-c") for row in (
        f"a2-highgpu-1g,12.0,85.0,,,,me-west1,{zone},0.81342,0.33516",
        f",,,A100,1,A100,me-west1,{zone},3.2273,1.058",
    )
)

AZURE_VMS = ",".join(catalog_columns()["azure"]) + "\n" + "".join(
    f"{row}\n" for region in ("eastus", "westus2") for row in (
        f'Standard_D8s_v5,,,8.0,32.0,,0.384,0.0768,{region},"V1,V2"',
        f'Standard_NC4as_T4_v3,T4,1.0,4.0,28.0,T4,0.526,0.0526,{region},"V1,V2"',
    )
)


COMMON_ACCELERATORS = (
    "AcceleratorName,Clouds\n"
    "A10,\"['Azure', 'Lambda', 'OCI']\"\n"
    "A100,\"['AWS', 'Azure', 'Cudo', 'GCP', 'Lambda', 'OCI', 'PrimeIntellect', 'Seeweb', "
    "'Vast']\"\n"
    "A100-80GB,\"['AWS', 'Azure', 'GCP', 'Lambda', 'OCI', 'Paperspace', 'PrimeIntellect', "
    "'RunPod', 'scp']\"\n"
    "A10G,['AWS']\n"
    "A40,\"['Cudo', 'RunPod', 'Vast']\"\n"
    "A6000,\"['Lambda', 'PrimeIntellect']\"\n"
    "B200,\"['AWS', 'Lambda', 'PrimeIntellect', 'RunPod', 'nebius']\"\n"
    "H100,\"['AWS', 'Azure', 'DO', 'GCP', 'Hyperbolic', 'Lambda', 'OCI', 'Paperspace', "
    "'PrimeIntellect', 'RunPod', 'Seeweb', 'Vast', 'nebius']\"\n"
    "H100-MEGA,['GCP']\n"
    "H200,\"['AWS', 'GCP', 'OCI', 'PrimeIntellect', 'Seeweb', 'Vast', 'nebius']\"\n"
    "L4,\"['AWS', 'GCP', 'RunPod', 'Seeweb']\"\n"
    "L40S,\"['AWS', 'Cudo', 'OCI', 'PrimeIntellect', 'RunPod', 'Seeweb', 'Vast', "
    "'nebius']\"\n"
    "RTX4090,\"['RunPod', 'Vast']\"\n"
    "T4,\"['AWS', 'Azure', 'GCP']\"\n"
    "V100,\"['AWS', 'Azure', 'Cudo', 'GCP', 'IBM', 'Lambda', 'OCI', 'Paperspace', "
    "'PrimeIntellect', 'Vast']\"\n"
    "V100-32GB,\"['AWS', 'Azure', 'Paperspace', 'scp']\"\n"
)
COMMON_METADATA = (
    "GPU,MemoryGB,Manufacturer\n"
    "A10G,24,NVIDIA\nA100,40,NVIDIA\nA100-80GB,80,NVIDIA\nH100,80,NVIDIA\n"
    "L4,24,NVIDIA\nT4,16,NVIDIA\nV100,16,NVIDIA\n"
)


def write_skypilot_cache(home: Path) -> Path:
    """Writes the cache under ``home/.sky/catalogs/v8`` (SkyPilot's default place)."""
    root = home / ".sky" / "catalogs" / CATALOG_SCHEMA_VERSION
    nebius = (Path(__file__).parents[2] / "providers" / "skypilot_catalog" / "catalog_v8"
              / "nebius" / "vms.csv").read_text(encoding="utf-8")
    for rel, text in (("nebius/vms.csv", nebius), ("aws/vms.csv", AWS_VMS),
                      ("aws/az_mappings-default.csv", AWS_AZ_MAPPINGS),
                      ("gcp/vms.csv", GCP_VMS), ("azure/vms.csv", AZURE_VMS),
                      ("common/accelerators.csv", COMMON_ACCELERATORS),
                      ("common/metadata.csv", COMMON_METADATA)):
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
