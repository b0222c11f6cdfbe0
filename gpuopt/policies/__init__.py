"""Decisions as pure functions of data: fit, runtime, cost, ranking, spot policy, budgets."""
