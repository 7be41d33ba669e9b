"""`toolshift bench evolve`: evolve every domain of a build to N versions and write the ecosystem files."""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from toolshift.bench.build import load_manifest
from toolshift.bench.ecosystem.costs import ModelScorer
from toolshift.bench.ecosystem.evolve import DomainEvolver, EvolveConfig, VersionState
from toolshift.bench.ecosystem.store import (
    DomainHistory,
    EcosystemManifest,
    ImplEntry,
    TransitionStats,
    VersionEntry,
    atomic_write,
    build_fingerprint,
    compiled_domain,
    domain_tasks,
    ecosystem_dir,
)
from toolshift.errors import BadInputError
from toolshift.fileio import read_bytes, read_text

COST_CACHE = "cost-scores.json"
"""Model cost scores, cached by model and prompt inside DIR/ecosystem/ (`--cost-model`)."""


def domain_inputs(build: str | Path, domain: str, config: EvolveConfig) -> str:
    """What a domain's evolution depends on: the config, its spec and its tasks."""
    h = hashlib.sha256(config.model_dump_json().encode())
    for part in ("spec.yaml", "tasks.jsonl"):
        h.update(read_bytes(Path(build) / "domains" / domain / part, what="build file"))
    return h.hexdigest()[:16]


def _reusable(path: Path, inputs: str) -> DomainHistory | None:
    if not path.is_file():
        return None
    try:
        history = DomainHistory.model_validate_json(read_text(path, what="domain history"))
    except (BadInputError, ValueError):
        return None
    return history if history.inputs == inputs else None


def history_of(domain: str, states: list[VersionState]) -> DomainHistory:
    entries = []
    for s in states:
        modified = sorted(
            {r.new_tools[0] for r in s.records if r.in_place and r.new_tools[0] in s.catalog.tools}
        )
        entries.append(
            VersionEntry(
                version=s.version,
                records=s.records,
                perturbations=s.perturbations,
                tools=sorted(s.catalog.tools),
                costs=s.costs,
                impls=[
                    ImplEntry(id=i.id, covers=list(i.covers), tools=list(i.tools), kind=i.kind)
                    for i in sorted(s.catalog.impls.values(), key=lambda i: i.id)
                ],
                modified=modified,
                band=s.band,
            )
        )
    return DomainHistory(domain=domain, versions=entries, rejected=[r for s in states for r in s.rejected])


def reason_category(reason: str) -> str:
    """A rejection reason without its task-specific details, for counting."""
    for prefix in (
        "capability lost",
        "state change differs",
        "output differs",
        "output cannot be decoded",
        "would leave base functions unreachable",
        "would leave the catalog above its size band",
        "would leave the catalog below its size band",
        "not applicable",
        "no gold inputs",
        "the source fails",
    ):
        if reason.startswith(prefix):
            return prefix
    return reason.split(":")[0]


def transition_stats(
    histories: list[DomainHistory], versions: int, rejected: dict[int, int]
) -> list[TransitionStats]:
    rows: list[TransitionStats] = []
    for v in range(1, versions + 1):
        tools = impls = added = retired = modified = accepted = perturbed = 0
        kinds: Counter[str] = Counter()
        for h in histories:
            cur = h.versions[v - 1]
            tools += len(cur.tools)
            impls += len(cur.impls)
            perturbed += len(cur.perturbations)
            accepted += len(cur.records)
            kinds.update(r.kind for r in cur.records)
            if v > 1:
                prev = set(h.versions[v - 2].tools)
                now = set(cur.tools)
                added += len(now - prev)
                retired += len(prev - now)
                modified += len(set(cur.modified) & prev)
        rows.append(
            TransitionStats(
                version=v,
                tools=tools,
                implementations=impls,
                added=added,
                retired=retired,
                modified=modified,
                accepted=accepted,
                rejected=rejected.get(v, 0),
                perturbed=perturbed,
                by_kind=dict(sorted(kinds.items())),
            )
        )
    return rows


def evolve_build(
    build: str | Path,
    config: EvolveConfig,
    *,
    domains: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> EcosystemManifest:
    """Evolve the build's domains to `config.versions` versions; write the ecosystem files; return the manifest."""
    start = time.perf_counter()
    manifest = load_manifest(build)
    names = [e.name for e in manifest.domains if e.tasks > 0]
    if domains:
        unknown = sorted(set(domains) - set(names))
        if unknown:
            raise BadInputError(f"not domains of this build: {', '.join(unknown)}", source=str(build))
        names = [n for n in names if n in domains]
    out = ecosystem_dir(build)
    histories: list[DomainHistory] = []
    rejected_lines: list[str] = []
    rejected_by_version: Counter[int] = Counter()
    by_reason: Counter[str] = Counter()
    scorer = ModelScorer(config.cost_model, out / COST_CACHE) if config.cost_model else None
    for name in names:
        path = out / "domains" / f"{name}.json"
        inputs = domain_inputs(build, name, config)
        history = _reusable(path, inputs)
        if history is None:  # resumable: a domain evolved from the same inputs is not evolved again
            evolver = DomainEvolver(compiled_domain(build, name), domain_tasks(build, name), config, scorer)
            history = history_of(name, evolver.run())
            history.inputs = inputs
            if scorer is not None:
                scorer.save()  # scores are kept before the history that uses them
            atomic_write(path, history.model_dump_json(indent=1) + "\n")
        histories.append(history)
        for r in history.rejected:
            rejected_lines.append(r.model_dump_json())
            rejected_by_version[r.version] += 1
            by_reason[reason_category(r.reason)] += 1
        if progress:
            progress(name)
    atomic_write(out / "rejected.jsonl", "".join(line + "\n" for line in rejected_lines))
    fingerprint = build_fingerprint(build)
    body = f"{fingerprint}:{config.model_dump_json()}:{','.join(names)}"
    eco = EcosystemManifest(
        id="eco-" + hashlib.sha256(body.encode()).hexdigest()[:10],
        build=fingerprint,
        config=config,
        domains=names,
        stats=transition_stats(histories, config.versions, dict(rejected_by_version)),
        rejected_by_reason=dict(by_reason.most_common()),
        seconds=round(time.perf_counter() - start, 2),
    )
    atomic_write(out / "manifest.json", eco.model_dump_json(indent=1) + "\n")
    return eco
