"""The watch middleware: the gateway notices its backend's catalog change and has Steward re-check its skills.

A real server is upgraded under a running gateway in two ways: a new process (the gateway starts one per client
session, so the next session after an upgrade meets the new version) or `notifications/tools/list_changed` on a
live session. Either way the watch middleware reads the backend's listing — on each session's first request and
on each list change — and compares its fingerprint (the tools' names, descriptions, schemas and annotations) with
the last version it recorded. A new one is recorded as the next catalog version in the log
(`toolshift.catalog-log/1`, written atomically) with what the server said it is, and, with a Steward library,
`toolshift steward check`'s verdict on every skill (D366); with `maintain` (the default) the library is then
brought to the new catalog by incremental maintenance with no episodes (its activity, rename and deprecation
passes: D365), in a worker thread, while the gateway goes on serving. No restart of the gateway is needed.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio

from toolshift.errors import BadInputError
from toolshift.gateway.chain import GatewaySession, Middleware
from toolshift.gateway.config import GatewayConfig

LOG_FORMAT = "toolshift.catalog-log/1"


def catalog_fingerprint(tools: list[dict[str, Any]]) -> str:
    """`sha256:<16 hex>` over the tools' names, descriptions and schemas, in name order: equal exactly when
    an agent would be shown the same catalog."""
    keep = sorted(
        (
            {k: t.get(k) for k in ("name", "description", "inputSchema", "outputSchema", "annotations")}
            for t in tools
        ),
        key=lambda t: str(t["name"]),
    )
    return "sha256:" + hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def load_log(path: Path) -> dict[str, Any]:
    from toolshift.fileio import read_json

    raw = read_json(path, what="catalog log")
    if (
        not isinstance(raw, dict)
        or raw.get("format") != LOG_FORMAT
        or not isinstance(raw.get("versions"), list)
    ):
        raise BadInputError(f"not a {LOG_FORMAT} file", source=str(path), field="format")
    return raw


class WatchMiddleware(Middleware):
    name = "watch"

    def __init__(self, config: GatewayConfig) -> None:
        assert config.watch is not None
        if len(config.backends) != 1:
            raise BadInputError("middleware watch fronts exactly one backend (one catalog)", field="watch")
        self.config = config.watch
        self.backend = config.backends[0].name
        self.domain = config.watch.domain or self.backend
        self.log = load_log(self.config.log) if self.config.log.exists() else {
            "format": LOG_FORMAT, "backend": self.backend, "versions": []
        }  # fmt: skip
        self._lock = anyio.Lock()
        self.counts = {"listings_seen": 0, "catalog_changes": 0}

    async def open(self, session: GatewaySession) -> None:
        await self._see(session, "session")

    async def tools_changed(self, session: GatewaySession) -> None:
        await self._see(session, "list_changed")

    async def _see(self, session: GatewaySession, how: str) -> None:
        handle = session.backends.get(self.backend)
        if handle is None:
            return
        tools = [
            t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in await handle.list_tools()
        ]
        fingerprint = catalog_fingerprint(tools)
        self.counts["listings_seen"] += 1
        async with self._lock:
            versions = self.log["versions"]
            if versions and versions[-1]["fingerprint"] == fingerprint:
                return
            info = getattr(handle.client, "server_info", None) if handle.client is not None else None
            entry: dict[str, Any] = {
                "version": len(versions) + 1,
                "fingerprint": fingerprint,
                "server": {"name": getattr(info, "name", None), "version": getattr(info, "version", None)},
                "seen": datetime.now(UTC).isoformat(timespec="seconds"),
                "how": how,
                "tools": tools,
            }
            if self.config.library is not None:
                entry.update(await anyio.to_thread.run_sync(self._steward, tools, len(versions) > 0))
            versions.append(entry)
            self.counts["catalog_changes"] += 1
            await anyio.to_thread.run_sync(self._save)

    def _steward(self, tools: list[dict[str, Any]], upgrade: bool) -> dict[str, Any]:
        """Steward's check of the library against the new catalog, then (an upgrade, `maintain`) its maintenance."""
        from collections import Counter

        from toolshift.steward.check import catalog_from_tools, check_library
        from toolshift.steward.library import Library
        from toolshift.steward.maintain import Maintainer

        assert self.config.library is not None
        with Library.open(self.config.library) as lib:
            catalog = catalog_from_tools(self.domain, tools, lib.catalog_version + 1)
            checks = check_library(lib, catalog, self.domain)
            out: dict[str, Any] = {
                "check": {
                    "counts": dict(sorted(Counter(c.status for c in checks).items())),
                    "skills": [c.as_dict() for c in checks if c.status != "ok"],
                }
            }
            if upgrade and self.config.maintain:
                work = Maintainer(lib, templates=True).maintain(catalog, [])
                out["maintained"] = {
                    "catalog_version": catalog.version,
                    "edits": work.edits,
                    "by_op": work.by_op,
                }
        return out

    def _save(self) -> None:
        from toolshift.fileio import write_text_atomic

        write_text_atomic(self.config.log, json.dumps(self.log, indent=1, sort_keys=True) + "\n")

    def metrics(self) -> dict[str, Any]:
        versions = self.log["versions"]
        last = versions[-1] if versions else {}
        broken = (last.get("check") or {}).get("counts", {}).get("broken", 0)
        return {**self.counts, "catalog_version": len(versions), "skills_broken": broken}
