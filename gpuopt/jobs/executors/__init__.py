"""Executors start, watch and stop one attempt of a job (see base.Executor)."""
