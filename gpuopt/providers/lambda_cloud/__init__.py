"""Lambda Cloud adapter: the instance-types API (prices and regions with capacity)."""

from gpuopt.providers.lambda_cloud.provider import LambdaProvider

__all__ = ["LambdaProvider"]
