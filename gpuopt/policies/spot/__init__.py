"""Spot / on-demand / wait decisions under a deadline, and the trace replay that judges them."""
