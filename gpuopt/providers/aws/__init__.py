"""AWS adapter: Pricing API (on-demand, reserved), EC2 spot prices and GPU facts.

``catalog`` lists the instance types, ``parse`` and ``offers`` are pure, ``fetch`` holds
every boto3 call, ``provider`` ties them together. boto3 is imported lazily.
"""

from gpuopt.providers.aws.provider import AwsProvider

__all__ = ["AwsProvider"]
