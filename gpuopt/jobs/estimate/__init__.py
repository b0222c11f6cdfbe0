"""Estimation of a workload on hardware: memory (memory/), fit (fit.py), speed (runtime.py).

Pure functions of the job spec and the GPU table: no prices, no clock, no I/O. The
policies (placement, ranking) ask these questions and decide from the answers.
"""
