"""gpuopt's configuration: one TOML file plus GPUOPT_* environment overrides.

``load_config(path)`` returns the validated :class:`Settings`; errors are
:class:`ConfigError` (a UserError, exit code 2) naming the file/key or variable to fix.
See ``load.py`` for the environment mapping and ``render.py`` for ``config show/init``.
"""

from __future__ import annotations

from gpuopt.orchestrator.config.load import ConfigError, load_config, load_config_with_sources
from gpuopt.orchestrator.config.model import (
    CloudsConfig,
    DaemonConfig,
    DatabaseConfig,
    ExecutorKind,
    PlacementConfig,
    ReportConfig,
    ReservedCapacity,
    Settings,
    SmtpConfig,
)

__all__ = [
    "CloudsConfig",
    "ConfigError",
    "DaemonConfig",
    "DatabaseConfig",
    "ExecutorKind",
    "PlacementConfig",
    "ReportConfig",
    "ReservedCapacity",
    "Settings",
    "SmtpConfig",
    "load_config",
    "load_config_with_sources",
]
