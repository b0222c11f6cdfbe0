"""Spot-availability traces from disk for `gpuopt simulate` (the engine: policies/spot)."""
