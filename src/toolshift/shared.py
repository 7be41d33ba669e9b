"""Where the shared third-party data lives: `TOOLSHIFT_SHARED`, else beside the source checkout, else per user."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

ENV = "TOOLSHIFT_SHARED"


def source_checkout() -> Path | None:
    """The repository this package runs from (`src/toolshift` under a folder with pyproject.toml), or None for
    an installed wheel, whose files sit in a venv's site-packages."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").is_file() and (root / "src" / "toolshift").is_dir():
        return root
    return None


def shared_root() -> Path:
    """`$TOOLSHIFT_SHARED`; else `../shared` beside the source checkout; else, for an installed wheel (no
    checkout to stand beside: a path relative to the package would point into the venv),
    `$XDG_DATA_HOME/toolshift/shared` (default `~/.local/share/toolshift/shared`)."""
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    checkout = source_checkout()
    if checkout is not None:
        return checkout.parent / "shared"
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "toolshift" / "shared"


def server_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of an MCP server this process starts over stdio: the `mcp` SDK's default (HOME, PATH and
    the like, never the caller's keys), `TOOLSHIFT_SHARED` when it is set, so a toolshift world server finds
    the data this process was pointed at, and `extra` over both. The SDK's default alone drops it, and a
    τ² world served that way looked beside the checkout instead."""
    from mcp.client.stdio import get_default_environment

    env = get_default_environment()
    if os.environ.get(ENV):
        env[ENV] = os.environ[ENV]
    return {**env, **(extra or {})}
