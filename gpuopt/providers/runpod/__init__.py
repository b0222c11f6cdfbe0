"""RunPod adapter: the GraphQL ``gpuTypes`` catalog, secure and community clouds apart."""

from gpuopt.providers.runpod.provider import RunPodProvider

__all__ = ["RunPodProvider"]
