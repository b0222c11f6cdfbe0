"""Where gpuopt keeps its files: config, data (SQLite), logs, attempt workspaces.

``GPUOPT_HOME`` puts everything under one directory (tests, demos, containers);
otherwise the platform's user directories are used (platformdirs).
"""

from __future__ import annotations

import os
from pathlib import Path


def _home_override() -> Path | None:
    home = os.environ.get("GPUOPT_HOME")
    return Path(home).expanduser() if home else None


def config_dir() -> Path:
    home = _home_override()
    if home is not None:
        return home
    import platformdirs

    return Path(platformdirs.user_config_dir("gpuopt"))


def data_dir() -> Path:
    home = _home_override()
    if home is not None:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir("gpuopt"))


def default_config_file() -> Path:
    return config_dir() / "config.toml"


def default_sqlite_path() -> Path:
    return data_dir() / "gpuopt.db"


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (mode 0700 for new directories) and return it."""
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path
