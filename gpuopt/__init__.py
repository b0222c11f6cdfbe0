"""gpuopt: place GPU jobs where finishing them costs least.

The layers live in the repository's top-level folders and are installed under this
one import root (``gpuopt.core``, ``gpuopt.providers``, ``gpuopt.jobs``,
``gpuopt.policies``, ``gpuopt.orchestrator``); the entries of this folder are links to
those folders, so the published layout stays at the repository root while nothing
generic lands in site-packages. Imports point down only: orchestrator > policies >
jobs > providers > core (the contract in .importlinter).
"""
