"""AWS adapter: Pricing API (on-demand, reserved), EC2 spot prices and GPU facts.

``catalog`` lists the instance types, ``parse`` and ``offers`` are pure, ``fetch`` holds
every boto3 call, ``provider`` ties them together. boto3 is imported lazily.
"""

from typing import TYPE_CHECKING

from gpuopt.core.lazy_import import lazy_attributes

if TYPE_CHECKING:
    from gpuopt.providers.aws.provider import AwsProvider

__all__ = ["AwsProvider"]
# The adapter (and its SDK's adaptor) is imported on first use: the cloud registry
# reads this folder's capabilities module without loading the adapter.
__getattr__ = lazy_attributes(__name__, {"AwsProvider": "gpuopt.providers.aws.provider"})
