"""The API and dashboard served by the daemon's process: uvicorn on its own thread (its
own event loop), beside the scheduler; the socket is bound before the daemon says it
started, so a taken port is an error at start (exit 2), not later."""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING, Any

from gpuopt.core.errors import UserError

if TYPE_CHECKING:
    from gpuopt.orchestrator.config.model import Settings
    from gpuopt.orchestrator.store import Store

log = logging.getLogger("gpuopt.api")
STOP_GRACE_S = 5.0


class ApiServer:
    def __init__(self, settings: Settings, store: Store) -> None:
        import secrets

        import uvicorn

        from gpuopt.orchestrator.api.app import build_app
        from gpuopt.orchestrator.api.context import ApiContext
        from gpuopt.orchestrator.api.uploads_sweep import uploads_root

        api = settings.api
        host, _, port = api.address.rpartition(":")
        self.scheme = "https" if api.tls_cert else "http"
        ctx = ApiContext(store=store, settings=settings, upload_root=uploads_root(),
                         session_secret=secrets.token_bytes(32))
        ctx.session_secure = api.tls_cert is not None
        self.app = build_app(ctx)
        config = uvicorn.Config(
            self.app, host=host.strip("[]"), port=int(port), log_config=None,
            access_log=False, lifespan="off", server_header=False,
            ssl_certfile=api.tls_cert, ssl_keyfile=api.tls_key,
            timeout_keep_alive=15, limit_concurrency=512, proxy_headers=False)
        try:
            config.load()  # reads the certificate and key now: a bad pair fails at start
        except (OSError, ValueError) as err:
            raise UserError(f"[api] tls_cert / tls_key: cannot load them: {err}",
                            exit_code=2) from None
        try:
            self.sock = config.bind_socket()
        except (OSError, SystemExit) as err:
            raise UserError(f"cannot serve the API on {api.address}: {err}; set [api] "
                            "address (GPUOPT_API_ADDRESS) to a free HOST:PORT, or \"\" to "
                            "turn it off", exit_code=2) from None
        self.server = uvicorn.Server(config)
        self.address = api.address
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.sock.getsockname()[:2]
        return f"{self.scheme}://{host}:{port}"

    def start(self) -> None:
        def serve() -> None:
            try:
                self.server.run(sockets=[self.sock])
            except BaseException as err:  # logged, never kills the daemon
                log.error("the API server stopped: %s: %s", type(err).__name__, err)

        self._thread = threading.Thread(target=serve, name="gpuopt-api", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_GRACE_S)
        self.sock.close()


def start_api(settings: Settings, store: Store) -> Any:
    """The running server, or None when [api] address is "" or the server extra is
    not installed (said in the log)."""
    if not settings.api.address:
        return None
    try:
        import fastapi  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        log.warning("the HTTP API is off: install the server extra (pip install "
                    "'gpuopt[server]') or set [api] address = \"\"")
        return None
    server = ApiServer(settings, store)
    server.start()
    return server
