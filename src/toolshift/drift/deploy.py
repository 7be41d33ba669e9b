"""A deployment upgraded under a running gateway: the watch middleware sees each new version and Steward re-checks.

The gateway fronts one real server through a stable path (`current`, a link the operator moves to the new
install, as an in-place upgrade does); it starts a server process per client session, so the first session after
the link moves meets the new version. One gateway runs through every station in order, one client session per
station, with the watch middleware logging each catalog and re-checking (and maintaining) a copy of Steward's
library learned on the first station. The gateway is never restarted.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

from toolshift.drift.install import Installed, install, load_pins


def point(current: Path, target: Path) -> None:
    """Move the link `current` to `target` atomically (a new link renamed over the old)."""
    tmp = current.with_name(current.name + ".next")
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    tmp.symlink_to(target, target_is_directory=True)
    os.replace(tmp, current)


async def watch_upgrades(
    server: str, versions: list[str], folder: Path, library: Path | None = None, sandbox: Path | None = None
) -> dict[str, Any]:
    """Serve `versions` of `server` in turn behind one gateway with the watch middleware; the catalog log."""
    from toolshift.drift.seeds import fresh_sandbox
    from toolshift.gateway.build import build_gateway
    from toolshift.gateway.config import BackendConfig, GatewayConfig, WatchConfig
    from toolshift.gateway.server import GatewayServer, in_memory_client
    from toolshift.gateway.watch import load_log

    pins = load_pins()
    insts = [install(server, v, pins=pins) for v in versions]
    if server == "memory":
        raise ValueError(
            "the memory server's oldest versions keep their graph beside their script: not linkable"
        )
    folder.mkdir(parents=True, exist_ok=True)
    if sandbox is None:
        if (folder / "sandbox").exists():  # a run made again: the deployment starts over on a fresh sandbox
            shutil.rmtree(folder / "sandbox")
        sandbox = fresh_sandbox(insts[0].spec.state, folder / "sandbox")
    current = folder / "current"
    point(current, insts[0].folder)
    stable = Installed(insts[0].spec, "current", current, insts[0].entry, "")
    command, env = stable.command(sandbox)
    log = folder / "catalog-log.json"
    if log.exists():
        log.unlink()
    if library is not None:
        shutil.copyfile(library, folder / "library.sqlite")
    config = GatewayConfig(
        backends=[BackendConfig(name=server, command=command, env=env)],
        middleware=["watch"],
        watch=WatchConfig(log=log, library=folder / "library.sqlite" if library else None, domain=server),
        idle_timeout=None,
    )
    gateway = build_gateway(config)
    front = GatewayServer(gateway)
    async with gateway.running():
        for inst in insts:
            point(current, inst.folder)
            async with in_memory_client(front) as client:
                await client.list_tools()
    return load_log(log)
