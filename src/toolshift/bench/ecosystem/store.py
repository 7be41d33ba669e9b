"""The files of an evolved ecosystem (format `toolshift.bench-ecosystem/1`) and how a version is rebuilt from them.

Layout inside a bench build directory (docs/formats.md, "Ecosystem benchmark builds"):

    DIR/ecosystem/manifest.json          # format, id, build fingerprint, config, per-version stats
    DIR/ecosystem/domains/<d>.json       # per version: accepted transformations, perturbations,
                                         # active tools, call costs, implementations
    DIR/ecosystem/rejected.jsonl         # every rejected transformation with its reason
    DIR/ecosystem/references.jsonl       # reference paths per task × version (`toolshift bench reference`)
    DIR/ecosystem/drift.png              # reference weight movement between adjacent versions
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from toolshift.bench.build import load_manifest, read_tasks
from toolshift.bench.ecosystem.catalog import DomainCatalog
from toolshift.bench.ecosystem.evolve import (
    EvolveConfig,
    Perturbation,
    TransformRecord,
    apply_perturbation,
    apply_record,
)
from toolshift.bench.reference import Implementation
from toolshift.errors import BadInputError
from toolshift.fileio import read_bytes, read_json, write_text_atomic
from toolshift.models import Task
from toolshift.world.language.spec import load_spec
from toolshift.world.state.compiler import compile_domain
from toolshift.world.state.world import World

ECOSYSTEM_FORMAT = "toolshift.bench-ecosystem/1"
REFERENCE_FORMAT = "toolshift.bench-reference/1"


class ImplEntry(BaseModel):
    id: str
    covers: list[str]
    tools: list[str]
    kind: str


class VersionEntry(BaseModel):
    """One domain in one version, as written to `domains/<d>.json`."""

    version: int
    records: list[TransformRecord] = Field(default_factory=list)
    perturbations: list[Perturbation] = Field(default_factory=list)
    tools: list[str]
    costs: dict[str, float]
    impls: list[ImplEntry]
    modified: list[str] = Field(default_factory=list)
    """Tools whose interface changed in place in this version (same name)."""
    band: int = 0
    """The tool count this version was brought within by retirements (0 in v1)."""

    def implementations(self) -> list[Implementation]:
        """The version's implementations with costs summed from their tools' call costs."""
        return [
            Implementation(
                id=i.id,
                covers=tuple(i.covers),
                tools=tuple(i.tools),
                cost=round(sum(self.costs[t] for t in i.tools), 2),
                kind=i.kind,
            )
            for i in self.impls
        ]


class DomainHistory(BaseModel):
    format: str = ECOSYSTEM_FORMAT
    domain: str
    inputs: str = ""
    """Digest of what the history was evolved from (config, spec, tasks): a rerun reuses a matching file."""
    versions: list[VersionEntry]
    rejected: list[TransformRecord] = Field(default_factory=list)


class TransitionStats(BaseModel):
    """One row of the per-version table (the seed's Table 3)."""

    version: int
    tools: int
    implementations: int
    added: int = 0
    retired: int = 0
    modified: int = 0
    accepted: int = 0
    rejected: int = 0
    perturbed: int = 0
    by_kind: dict[str, int] = Field(default_factory=dict)


class EcosystemManifest(BaseModel):
    format: str = ECOSYSTEM_FORMAT
    id: str
    """Names this evolved ecosystem: episodes record `<id>/v<n>` as their ecosystem version."""
    build: str
    """Fingerprint of the build's tasks the ecosystem was evolved from."""
    config: EvolveConfig
    domains: list[str]
    stats: list[TransitionStats]
    rejected_by_reason: dict[str, int] = Field(default_factory=dict)
    seconds: float = 0.0


def ecosystem_dir(build: str | Path) -> Path:
    return Path(build) / "ecosystem"


def build_fingerprint(build: str | Path) -> str:
    """A hash of every domain's tasks file: an ecosystem belongs to exactly one build."""
    h = hashlib.sha256()
    for entry in load_manifest(build).domains:
        path = Path(build) / "domains" / entry.name / "tasks.jsonl"
        h.update(entry.name.encode())
        if path.is_file():
            h.update(read_bytes(path, what="task file"))
    return h.hexdigest()[:16]


def atomic_write(path: Path, text: str) -> None:
    write_text_atomic(path, text)


def _read_json(path: Path) -> Any:
    return read_json(path, what="ecosystem file")


def load_ecosystem(build: str | Path) -> EcosystemManifest:
    """The ecosystem manifest of a build; refuses one evolved from a different build."""
    path = ecosystem_dir(build) / "manifest.json"
    if not path.is_file():
        raise BadInputError("no evolved ecosystem here; run `toolshift bench evolve` first", source=str(path))
    data = _read_json(path)
    if not isinstance(data, dict) or data.get("format") != ECOSYSTEM_FORMAT:
        raise BadInputError(
            f"unknown ecosystem format {data.get('format') if isinstance(data, dict) else None!r} "
            f"(this reads {ECOSYSTEM_FORMAT!r})",
            source=str(path),
            field="format",
        )
    try:
        manifest = EcosystemManifest.model_validate(data)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None
    current = build_fingerprint(build)
    if manifest.build != current:
        raise BadInputError(
            f"ecosystem {manifest.id} was evolved from build {manifest.build}, but the tasks here are build "
            f"{current}; evolve again",
            source=str(path),
            field="build",
        )
    return manifest


def load_history(build: str | Path, domain: str) -> DomainHistory:
    path = ecosystem_dir(build) / "domains" / f"{domain}.json"
    data = _read_json(path)
    try:
        history = DomainHistory.model_validate(data)
    except ValidationError as exc:
        raise BadInputError.from_validation(exc, source=str(path)) from None
    for i, version in enumerate(history.versions):
        for j, record in enumerate(version.records):
            found = record.problem()
            if found is not None:
                raise BadInputError(
                    found[1], source=str(path), record=record.id, field=f"versions.{i}.records.{j}.{found[0]}"
                )
    return history


def domain_tasks(build: str | Path, domain: str) -> list[Task]:
    return read_tasks(Path(build) / "domains" / domain / "tasks.jsonl")


def compiled_domain(build: str | Path, domain: str):
    path = Path(build) / "domains" / domain / "spec.yaml"
    if not path.is_file():
        raise BadInputError(f"no spec for domain {domain!r} in this build", source=str(build))
    return compile_domain(load_spec(path), str(path))


def rebuild_catalog(world: World, tasks: list[Task], history: DomainHistory, version: int) -> DomainCatalog:
    """Version `version` of a domain's catalog, replayed from its records onto the compiled world."""
    if not 1 <= version <= len(history.versions):
        raise BadInputError(
            f"domain {history.domain} has versions 1..{len(history.versions)}, not {version}", field="version"
        )
    fmap = {c.tool: c.function or c.tool for t in tasks for c in t.gold_path}
    cat = DomainCatalog.base(world, fmap)
    for entry in history.versions[1:version]:
        for rec in entry.records:
            apply_record(cat, rec.model_copy(deep=True))
        for p in entry.perturbations:
            apply_perturbation(cat, p)
    want = history.versions[version - 1].tools
    if sorted(cat.tools) != sorted(want):
        raise BadInputError(
            f"replaying the records of {history.domain} v{version} does not give its recorded tools",
            field="tools",
        )
    return cat


def version_world(build: str | Path, domain: str, version: int) -> tuple[World, DomainCatalog]:
    """A fresh world of `domain` whose catalog is ecosystem version `version` (same SQLite schema as v1)."""
    world = World(compiled_domain(build, domain))
    cat = rebuild_catalog(world, domain_tasks(build, domain), load_history(build, domain), version)
    return cat.world(world), cat
