"""Prices with a clock and a database: the poller and the current-offers query."""
