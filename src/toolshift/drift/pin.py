"""`toolshift drift pin`: each server version's integrity hash and declared dependencies, asked of its registry once.

npm: `npm view <package>@<version> dist.integrity dependencies --json`. PyPI: the wheel `pip download --no-deps`
fetches, hashed here (SHA-256), with the `Requires-Dist` lines of its metadata. The held dependencies of D361
are decided from what each version declares.
"""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from toolshift.drift.install import (
    MCP_HELD,
    ZOD_HELD,
    InstallError,
    Pins,
    ServerPins,
    VersionPin,
    _pip,
    _run,
    npm,
)
from toolshift.drift.servers import SERVERS, ServerSpec


def npm_hold(dependencies: dict[str, str]) -> dict[str, str]:
    """zod held to 3 where the version converts zod schemas with `zod-to-json-schema` and leaves zod unnamed."""
    if "zod-to-json-schema" in dependencies and "zod" not in dependencies:
        return {"zod": ZOD_HELD}
    return {}


def pip_hold(requires: list[str]) -> dict[str, str]:
    """`mcp<2` where the version's requirement on the SDK has no upper bound."""
    for req in requires:
        name = re.match(r"^\s*([A-Za-z0-9_.-]+)", req)
        if name and name.group(1).lower() == "mcp":
            spec = req.split(";", 1)[0]
            return {} if "<" in spec else {"mcp": MCP_HELD.removeprefix("mcp")}
    return {}


def pin_npm(spec: ServerSpec, version: str) -> VersionPin:
    out = _run(
        [npm(), "view", f"{spec.package}@{version}", "dist.integrity", "dependencies", "--json"],
        Path.cwd(),
        f"{spec.package}@{version} (npm view)",
    )
    data = json.loads(out or "{}")
    integrity = data.get("dist.integrity") if isinstance(data, dict) else None
    if not isinstance(integrity, str):
        raise InstallError(f"npm view gave no integrity for {spec.package}@{version}")
    deps = data.get("dependencies") or {}
    return VersionPin(
        version=version,
        integrity=integrity,
        requires=[f"{k}@{v}" for k, v in sorted(deps.items())],
        hold=npm_hold(deps),
    )


def pin_pypi(spec: ServerSpec, version: str) -> VersionPin:
    with tempfile.TemporaryDirectory(prefix="toolshift-pin-") as tmp:
        what = f"{spec.package}=={version}"
        _run(
            _pip("download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", tmp, what), Path(tmp), what
        )
        wheels = sorted(Path(tmp).glob("*.whl"))
        if len(wheels) != 1:
            raise InstallError(f"{what}: pip downloaded {len(wheels)} wheels, expected one")
        data = wheels[0].read_bytes()
        with zipfile.ZipFile(wheels[0]) as zf:
            meta = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
            text = zf.read(meta).decode("utf-8", "replace")
    requires = [ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("Requires-Dist:")]
    return VersionPin(
        version=version,
        integrity="sha256:" + hashlib.sha256(data).hexdigest(),
        wheel=wheels[0].name,
        requires=requires,
        hold=pip_hold(requires),
    )


def pin_all(keys: list[str], progress: Callable[[str], None] | None = None, workers: int = 6) -> Pins:
    """Pins for every version of the named servers (the registries asked in parallel)."""
    jobs = [(SERVERS[k], v) for k in keys for v in SERVERS[k].versions]

    def one(job: tuple[ServerSpec, str]) -> VersionPin:
        spec, version = job
        pin = pin_npm(spec, version) if spec.registry == "npm" else pin_pypi(spec, version)
        if progress:
            progress(f"{spec.key} {version}")
        return pin

    with ThreadPoolExecutor(max_workers=workers) as pool:
        pins = list(pool.map(one, jobs))
    out: dict[str, ServerPins] = {}
    for (spec, _), pin in zip(jobs, pins, strict=True):
        out.setdefault(spec.key, ServerPins(package=spec.package, registry=spec.registry, versions=[]))
        out[spec.key].versions.append(pin)
    return Pins(servers=out)
