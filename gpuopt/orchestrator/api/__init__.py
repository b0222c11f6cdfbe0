"""The team server: the HTTP API under /api/v1/ and the dashboard, served by the daemon
(api/server.py) beside its scheduler. FastAPI and uvicorn (the ``server`` extra) are
imported only here, and only when the daemon starts the server or a test builds it."""
