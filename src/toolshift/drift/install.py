"""Each published version of a server installed in isolation into a cache, pinned by version and integrity hash.

npm versions go to `<cache>/npm/<package>@<version>/` (their own `node_modules` and lockfile; the package's
tarball must carry the integrity npm's registry gave when the history was pinned); PyPI versions to
`<cache>/pypi/<package>@<version>/site` by `pip install --target` from the wheel whose SHA-256 was pinned,
started with this interpreter isolated from toolshift's own packages (`-I -S`, only that folder on the path).
A version's folder is built beside its final name and renamed into place once `installed.json` is written, so
a killed install leaves nothing that looks installed. The held dependencies (D361) come from the pins.

The pins (`pins.json` beside this module, `toolshift.drift-pins/1`) are made once by `toolshift drift pin`,
which asks each registry through its own client: npm's `dist.integrity` and dependencies per version, and the
SHA-256 of the wheel `pip download` fetched with the requirements its metadata declares.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from toolshift.drift.servers import SERVERS, ServerSpec, check_version
from toolshift.errors import BadInputError, ToolshiftError
from toolshift.fileio import read_json, write_text_atomic

PINS_FORMAT = "toolshift.drift-pins/1"
INSTALLED = "installed.json"
CACHE_ENV = "TOOLSHIFT_DRIFT_CACHE"
INSTALL_TIMEOUT = 600.0
ZOD_HELD = "^3.25.0"
MCP_HELD = "mcp<2"


class VersionPin(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: str
    integrity: str = Field(pattern=r"^(sha512-[A-Za-z0-9+/=]{20,}|sha256:[0-9a-f]{64})$")
    """npm's `dist.integrity` (SRI, sha512) or the wheel's `sha256:<hex>`."""
    wheel: str | None = None
    """PyPI: the wheel's file name."""
    requires: list[str] = Field(default_factory=list)
    """What the version declares it needs (npm `dependencies`, PyPI `Requires-Dist`)."""
    hold: dict[str, str] = Field(default_factory=dict)
    """Dependencies held to the major its code was written against (D361): npm override or pip constraint."""


class ServerPins(BaseModel):
    model_config = ConfigDict(extra="forbid")

    package: str
    registry: str
    versions: list[VersionPin]


class Pins(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = PINS_FORMAT
    servers: dict[str, ServerPins]

    def pin(self, key: str, version: str) -> VersionPin:
        found = self.servers.get(key)
        pin = next((p for p in found.versions if p.version == version), None) if found else None
        if pin is None:
            raise BadInputError(f"{key} {version} is not pinned (run `toolshift drift pin`)", field="version")
        return pin


PINS_PATH = Path(__file__).with_name("pins.json")


def load_pins(path: Path = PINS_PATH) -> Pins:
    raw = read_json(path, what="drift pins")
    if not isinstance(raw, dict) or raw.get("format") != PINS_FORMAT:
        raise BadInputError(f"not a {PINS_FORMAT} file", source=str(path), field="format")
    try:
        return Pins.model_validate(raw)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None


def cache_root() -> Path:
    """`$TOOLSHIFT_DRIFT_CACHE`, else `.cache/drift` in a source checkout, else `~/.cache/toolshift/drift`."""
    from toolshift.shared import source_checkout

    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    checkout = source_checkout()
    if checkout is not None:
        return checkout / ".cache" / "drift"
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "toolshift" / "drift"


class InstallError(ToolshiftError):
    """A version could not be installed (no npm or pip, the registry refused, an integrity mismatch)."""


@dataclass(frozen=True)
class Installed:
    """One installed version: where it lives and how to start it."""

    spec: ServerSpec
    version: str
    folder: Path
    entry: str
    """npm: the bin script, relative to the folder; PyPI: `module:function` of the console script."""
    lock: str
    """A digest of the resolved dependency tree (`sha256:<16 hex>`), so a re-resolved install shows."""

    def command(self, sandbox: Path) -> tuple[list[str], dict[str, str]]:
        """The argv and extra environment that start this version on `sandbox`."""
        args = [a.replace("{sandbox}", str(sandbox)) for a in self.spec.args]
        env = {k: v.replace("{sandbox}", str(sandbox)) for k, v in self.spec.env.items()}
        if self.spec.registry == "npm":
            node = shutil.which("node")
            if node is None:
                raise InstallError("node is not on PATH: npm servers cannot start")
            return [node, str(self._script(sandbox)), *args], env
        module, _, func = self.entry.partition(":")
        boot = (
            f"import sys; sys.path[:0] = [{str(self.folder / 'site')!r}]; sys.argv[0] = {self.spec.package!r}; "
            f"from {module} import {func} as main; sys.exit(main())"
        )
        return [sys.executable, "-I", "-S", "-c", boot, *args], env

    def _script(self, sandbox: Path) -> Path:
        """The script to start: the installed one, or for a version that keeps its state beside its script
        (D368) a copy of its package folder beside the sandbox, sharing the install's `node_modules`, whose
        state file is a link into the sandbox."""
        script = self.folder / self.entry
        if self.spec.script_state is None:
            return script
        name, variable = self.spec.script_state
        if f"process.env.{variable}" in script.read_text(encoding="utf-8", errors="replace"):
            return script
        package = self.folder / "node_modules" / self.spec.package
        launch = sandbox.with_name(sandbox.name + ".launch")
        if not launch.exists():
            shutil.copytree(
                package, launch, symlinks=True, ignore=shutil.ignore_patterns(name, "node_modules")
            )
            (launch / "node_modules").symlink_to(self.folder / "node_modules", target_is_directory=True)
        copied = launch / script.relative_to(package)
        state = copied.parent / name
        if not state.is_symlink():
            state.symlink_to(sandbox / Path(self.spec.env.get(variable, name)).name)
        return copied


def version_folder(spec: ServerSpec, version: str, root: Path | None = None) -> Path:
    return (root or cache_root()) / spec.registry / f"{spec.slug}@{version}"


def installed(spec: ServerSpec, version: str, root: Path | None = None) -> Installed | None:
    """The version as installed in the cache, or None when it is not (a partial folder is not installed)."""
    folder = version_folder(spec, version, root)
    stamp = folder / INSTALLED
    if not stamp.is_file():
        return None
    raw = read_json(stamp, what="install stamp")
    if not isinstance(raw, dict) or raw.get("version") != version or not isinstance(raw.get("entry"), str):
        raise BadInputError("not an install stamp of this version", source=str(stamp))
    return Installed(spec, version, folder, raw["entry"], str(raw.get("lock", "")))


def install(key: str, version: str, *, pins: Pins | None = None, root: Path | None = None) -> Installed:
    """Install one version into the cache (a no-op when it is there); raises `InstallError` saying why not."""
    spec = SERVERS[key]
    check_version(spec, version)
    done = installed(spec, version, root)
    if done is not None:
        return done
    pin = (pins or load_pins()).pin(key, version)
    final = version_folder(spec, version, root)
    work = final.with_name(f".{final.name}.partial-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    try:
        if spec.registry == "npm":
            entry, lock = _npm_install(spec, pin, work)
        else:
            entry, lock = _pip_install(spec, pin, work)
        stamp = {"package": spec.package, "version": version, "integrity": pin.integrity, "hold": pin.hold}
        write_text_atomic(work / INSTALLED, json.dumps({**stamp, "entry": entry, "lock": lock}, indent=1))
        try:
            work.rename(final)
        except OSError:  # another installer finished first: theirs stands
            if installed(spec, version, root) is None:
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    result = installed(spec, version, root)
    assert result is not None
    return result


def _run(argv: list[str], cwd: Path, what: str) -> str:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise InstallError(f"{argv[0]} is not installed: cannot install {what}") from None
    except subprocess.TimeoutExpired:
        raise InstallError(f"installing {what} took longer than {INSTALL_TIMEOUT:g} s") from None
    if done.returncode != 0:
        tail = " ".join((done.stderr or done.stdout).strip().splitlines()[-3:])[:400]
        raise InstallError(f"installing {what} failed (exit {done.returncode}): {tail}")
    return done.stdout


def npm() -> str:
    found = shutil.which("npm")
    if found is None:
        raise InstallError("npm is not on PATH: npm servers cannot be installed")
    return found


def _npm_install(spec: ServerSpec, pin: VersionPin, work: Path) -> tuple[str, str]:
    what = f"{spec.package}@{pin.version}"
    manifest: dict[str, Any] = {"private": True}
    if pin.hold:
        manifest["overrides"] = dict(pin.hold)
    (work / "package.json").write_text(json.dumps(manifest), encoding="utf-8")
    _run(
        [
            npm(),
            "install",
            "--save-exact",
            "--no-audit",
            "--no-fund",
            "--ignore-scripts",
            "--loglevel=error",
            what,
        ],
        work,
        what,
    )
    lock = read_json(work / "package-lock.json", what="npm lockfile")
    packages = lock.get("packages", {}) if isinstance(lock, dict) else {}
    mine = packages.get(f"node_modules/{spec.package}", {})
    if mine.get("version") != pin.version or mine.get("integrity") != pin.integrity:
        raise InstallError(
            f"{what}: npm installed {mine.get('version')} with integrity {mine.get('integrity')}, "
            f"not the pinned {pin.integrity}"
        )
    meta = read_json(work / "node_modules" / spec.package / "package.json", what="package manifest")
    bins = meta.get("bin")
    entry = bins if isinstance(bins, str) else next(iter(bins.values())) if isinstance(bins, dict) else None
    if not entry:
        raise InstallError(f"{what} names no bin script in its package.json")
    tree = sorted(
        (k, str(v.get("version")), str(v.get("integrity")))
        for k, v in packages.items()
        if k and isinstance(v, dict)
    )
    return f"node_modules/{spec.package}/{entry}", _digest(tree)


def _pip(*args: str) -> list[str]:
    return [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input", *args]


def _pip_install(spec: ServerSpec, pin: VersionPin, work: Path) -> tuple[str, str]:
    what = f"{spec.package}=={pin.version}"
    wheels = work / "wheel"
    _run(_pip("download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", str(wheels), what), work, what)
    found = sorted(wheels.glob("*.whl"))
    if len(found) != 1:
        raise InstallError(f"{what}: pip downloaded {len(found)} wheels, expected one")
    got = "sha256:" + hashlib.sha256(found[0].read_bytes()).hexdigest()
    if got != pin.integrity:
        raise InstallError(f"{what}: the wheel's {got} is not the pinned {pin.integrity}")
    constraints = work / "constraints.txt"
    constraints.write_text("".join(f"{k}{v}\n" for k, v in pin.hold.items()), encoding="utf-8")
    _run(
        _pip("install", "--quiet", "--no-warn-conflicts", "--no-warn-script-location", "--target",
             str(work / "site"), "-c", str(constraints), str(found[0])),
        work,
        what,
    )  # fmt: skip
    dist = next((work / "site").glob(f"{_dist_name(spec.package)}-{pin.version}.dist-info"), None)
    if dist is None:
        raise InstallError(f"{what}: no dist-info after installing")
    entry = _console_script(dist / "entry_points.txt")
    tree = sorted(p.name for p in (work / "site").glob("*.dist-info"))
    shutil.rmtree(wheels, ignore_errors=True)
    return entry, _digest(tree)


def _dist_name(package: str) -> str:
    return re.sub(r"[-_.]+", "_", package).lower()


def _console_script(path: Path) -> str:
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    section = text.split("[console_scripts]", 1)[1].split("\n[", 1)[0] if "[console_scripts]" in text else ""
    for line in section.splitlines():
        _, _, target = line.partition("=")
        if target.strip() and ":" in target:
            return target.strip()
    raise InstallError(f"{path}: the package declares no console script")


def _digest(value: Any) -> str:
    return "sha256:" + hashlib.sha256(json.dumps(value).encode()).hexdigest()[:16]


def uninstall(key: str, version: str, root: Path | None = None) -> None:
    with contextlib.suppress(FileNotFoundError):
        shutil.rmtree(version_folder(SERVERS[key], version, root))
