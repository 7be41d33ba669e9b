"""Find domain specs by name (built-in folders) or path, and compile each once per process."""

from __future__ import annotations

import difflib
import threading
from pathlib import Path

from toolshift.errors import BadInputError
from toolshift.fileio import require_regular
from toolshift.world.language.spec import DomainSpec, load_spec
from toolshift.world.state.compiler import CompiledDomain, compile_domain

PACKAGE = Path(__file__).resolve().parents[2]
DOMAIN_DIRS: tuple[Path, ...] = (
    PACKAGE / "world" / "domains",
    PACKAGE / "bench" / "domains",
    PACKAGE / "world" / "tau2" / "specs",
)
"""Built-in specs: the three hand-written worlds, then the benchmark's generated domains."""

_cache: dict[tuple[str, int | None], CompiledDomain] = {}
_lock = threading.Lock()


def builtin_domains() -> dict[str, Path]:
    """Built-in domain name (the file stem) → spec path; the world folder wins on a name clash."""
    found: dict[str, Path] = {}
    for folder in DOMAIN_DIRS:
        if folder.is_dir():
            for path in sorted(folder.glob("*.yaml")):
                found.setdefault(path.stem, path)
    return found


def world_domains() -> list[str]:
    """The hand-written domains shipped in toolshift/world/domains."""
    folder = DOMAIN_DIRS[0]
    return sorted(p.stem for p in folder.glob("*.yaml")) if folder.is_dir() else []


def resolve_spec_path(name_or_path: str | Path) -> Path:
    """A built-in name or a path to a YAML file; unknown names suggest close ones."""
    text = str(name_or_path)
    path = Path(text)
    if text.endswith((".yaml", ".yml")) or path.is_file() or "/" in text:
        require_regular(path, what="domain spec file")
        return path
    known = builtin_domains()
    if text in known:
        return known[text]
    close = difflib.get_close_matches(text, list(known), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else f" (built-in: {', '.join(sorted(known))})"
    raise BadInputError(f"unknown domain {text!r}{hint}")


def load_domain_spec(name_or_path: str | Path) -> DomainSpec:
    return load_spec(resolve_spec_path(name_or_path))


def load_domain(name_or_path: str | Path, *, seed: int | None = None, fresh: bool = False) -> CompiledDomain:
    """The compiled domain (spec, tables, seeded template, tools); cached per resolved path and seed."""
    path = resolve_spec_path(name_or_path).resolve()
    key = (f"{path}:{path.stat().st_mtime_ns}", seed)
    with _lock:
        if not fresh and key in _cache:
            return _cache[key]
    compiled = compile_domain(load_spec(path), str(path), seed=seed)
    with _lock:
        _cache[key] = compiled
    return compiled
