"""gpuopt's core: the few value types and rules every layer shares.

It sits below ``providers`` (imported as ``gpuopt.core``) and imports nothing of
gpuopt: the user-error type (errors), money in micro-dollars and the one attempt-cost
rule (money), durations (durations), bucket URL schemes (buckets), a place in a cloud
(places) and bounded exponential backoff (backoff).
"""
