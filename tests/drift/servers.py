"""The real server versions tests/drift runs on, installed by `make test` (`toolshift drift install --tests`)."""

from __future__ import annotations

import asyncio
import shutil
from functools import cache

import pytest

from toolshift.drift.history import VersionListing, list_version
from toolshift.drift.install import Installed, InstallError, install, installed
from toolshift.drift.servers import SERVERS


def real(server: str, version: str) -> Installed:
    """The installed version, installed now if the cache lacks it; the test skips, saying why, where npm or pip
    cannot install it (no network, no npm, no node)."""
    spec = SERVERS[server]
    if spec.registry == "npm" and (shutil.which("npm") is None or shutil.which("node") is None):
        pytest.skip(
            "npm and node are needed for the npm MCP servers (make test installs them where npm exists)"
        )
    done = installed(spec, version)
    if done is not None:
        return done
    try:
        return install(server, version)
    except InstallError as exc:
        pytest.skip(f"{spec.package}@{version} could not be installed: {exc}")


def run(coro):
    return asyncio.run(coro)


@cache
def listing(server: str, version: str) -> VersionListing:
    """The version's `tools/list` over MCP, read once per test session (a listing of one installed version does
    not change; every test that needs it shares the one read)."""
    return list_version(real(server, version))
