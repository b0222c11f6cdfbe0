"""Alembic migrations of the store (env.py + versions/).

HEAD is the newest revision id; bump it with every new file in versions/ (a test checks
it against Alembic's own head).
"""

HEAD = "0014_attempt_probes"
