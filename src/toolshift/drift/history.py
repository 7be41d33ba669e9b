"""The catalog history of the real servers: every published version installed, started and listed over MCP.

File `toolshift.drift-history/1` (docs/formats.md, "Real drift"): per server its package and registry, and per
version (published order) the pin it was installed by, the digest of the dependency tree it resolved to,
what it said on connecting (server name and version, protocol version) and its `tools/list` as the wire
gave it; or the error that kept it from listing. Resumable: a version already listed is not installed again.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.drift.install import Installed, InstallError, install, load_pins
from toolshift.drift.listing import catalog_fingerprint, list_catalog
from toolshift.drift.seeds import fresh_sandbox
from toolshift.drift.servers import SERVERS
from toolshift.errors import BadInputError
from toolshift.fileio import read_json, write_text_atomic

HISTORY_FORMAT = "toolshift.drift-history/1"


class VersionListing(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    integrity: str
    hold: dict[str, str] = Field(default_factory=dict)
    lock: str = ""
    server_name: str = ""
    server_version: str = ""
    protocol: str = ""
    fingerprint: str = ""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    error: str | None = None

    def tool(self, name: str) -> dict[str, Any] | None:
        return next((t for t in self.tools if t.get("name") == name), None)

    def names(self) -> list[str]:
        return [str(t.get("name")) for t in self.tools]


class ServerHistory(BaseModel):
    model_config = ConfigDict(extra="forbid")

    package: str
    registry: str
    versions: list[VersionListing]

    def listed(self) -> list[VersionListing]:
        """The versions that listed (in published order)."""
        return [v for v in self.versions if v.error is None]

    def at(self, version: str) -> VersionListing:
        found = next((v for v in self.versions if v.version == version), None)
        if found is None:
            raise BadInputError(f"{self.package} {version} is not in the history", field="version")
        return found


class History(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = HISTORY_FORMAT
    servers: dict[str, ServerHistory] = Field(default_factory=dict)


def load_history(path: Path) -> History:
    raw = read_json(path, what="drift history")
    if not isinstance(raw, dict) or raw.get("format") != HISTORY_FORMAT:
        raise BadInputError(f"not a {HISTORY_FORMAT} file", source=str(path), field="format")
    try:
        return History.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None


def save_history(history: History, path: Path) -> None:
    write_text_atomic(path, json.dumps(history.model_dump(mode="json"), indent=1, sort_keys=True) + "\n")


def list_version(inst: Installed) -> VersionListing:
    """Start one installed version on a fresh sandbox of its kind and read its listing."""
    tmp = Path(tempfile.mkdtemp(prefix="toolshift-drift-"))
    try:
        sandbox = fresh_sandbox(inst.spec.state, tmp / "sandbox")
        listing = asyncio.run(list_catalog(inst, sandbox))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return VersionListing(
        version=inst.version,
        integrity="",
        lock=inst.lock,
        server_name=listing.server_name,
        server_version=listing.server_version,
        protocol=listing.protocol,
        fingerprint=catalog_fingerprint(listing.tools),
        tools=listing.tools,
    )


def build_history(
    path: Path,
    keys: list[str],
    *,
    progress: Callable[[str], None] | None = None,
    workers: int = 3,
) -> History:
    """List every version of the named servers into `path` (kept between runs: a listed version is not redone)."""
    pins = load_pins()
    history = load_history(path) if path.exists() else History()
    todo: list[tuple[str, str]] = []
    for key in keys:
        spec = SERVERS[key]
        have = history.servers.get(key)
        done = {v.version: v for v in (have.versions if have else []) if v.error is None}
        history.servers[key] = ServerHistory(
            package=spec.package,
            registry=spec.registry,
            versions=[done.get(v) or VersionListing(version=v, integrity="") for v in spec.versions],
        )
        todo += [(key, v) for v in spec.versions if v not in done]

    def one(job: tuple[str, str]) -> tuple[str, str, VersionListing]:
        key, version = job
        pin = pins.pin(key, version)
        try:
            listed = list_version(install(key, version, pins=pins))
        except (InstallError, BadInputError, OSError) as exc:
            listed = VersionListing(version=version, integrity="", error=str(exc)[:500])
        except Exception as exc:  # the server started but would not list: that is the finding, kept as such
            from toolshift.gateway.backends import root_cause

            listed = VersionListing(version=version, integrity="", error=root_cause(exc)[:500])
        listed.integrity, listed.hold = pin.integrity, dict(pin.hold)
        if progress:
            progress(f"{key} {version}")
        return key, version, listed

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for key, version, listed in pool.map(one, todo):
            entries = history.servers[key].versions
            entries[[v.version for v in entries].index(version)] = listed
            save_history(history, path)
    return history
