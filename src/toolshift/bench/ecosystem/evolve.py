"""Sample ecosystem versions v2..vN per domain by checked, capability-preserving transformations.

Each version applies a bounded number of transformations to the previous one. A transformation of
version v acts only on implementations version v−1 had, so nothing is created and retired inside
one version unseen by any agent. A candidate is generated (new tools with composed handlers),
checked on gold inputs (`verify.Verifier`), and applied only if it passes and every base function a
task uses stays performable on its own afterwards; anything else is logged as rejected with its
reason and another candidate is drawn. A merge is drawn only from blocks of the tasks' gold paths
where one call can do it with what is known before the block (`knowledge.TaskKnowledge`). Then the
catalog is brought back within a size band of its v1 size by retiring implementations v−1 had
(overlapping interfaces, functions no task uses, old merges), and some descriptions are perturbed.
Each new tool gets its cost once (`costs`), from its declared work or its source's.
Everything a version needs to be rebuilt is in its `TransformRecord`s, so `materialise` replays
them onto the compiled domain without re-checking.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import random
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, Field

from toolshift.bench.ecosystem.catalog import DomainCatalog, Impl
from toolshift.bench.ecosystem.codecs import CODEC_NAMES
from toolshift.bench.ecosystem.costs import (
    DRAFT_WORK,
    ModelScorer,
    Work,
    declared_work,
    merged_work,
    rubric_score,
)
from toolshift.bench.ecosystem.knowledge import TaskKnowledge
from toolshift.bench.ecosystem.verify import GoldSample, Verifier
from toolshift.models import Task
from toolshift.world.state.compiler import CompiledDomain
from toolshift.world.state.tools import Tool
from toolshift.world.state.world import World
from toolshift.world.toolerror import ToolError

VERSION_SUFFIX = re.compile(r"(_v\d+)+(_\d+)?$")

TransformKind = Literal["rename_tool", "rename_param", "add_param", "format", "split", "merge", "retire"]
ONE_TO_ONE = ("rename_tool", "rename_param", "add_param", "format")

KIND_WEIGHTS: dict[str, float] = {
    "rename_tool": 0.12,
    "rename_param": 0.14,
    "add_param": 0.12,
    "format": 0.13,
    "split": 0.03,
    "merge": 0.14,
    "retire": 0.32,
}

VERB_SYNONYMS: dict[str, tuple[str, ...]] = {
    "get": ("fetch", "retrieve", "read", "lookup"),
    "list": ("browse", "enumerate", "show"),
    "search": ("find", "query", "filter"),
    "create": ("add", "register", "new"),
    "update": ("modify", "edit", "patch"),
    "delete": ("remove", "purge", "drop"),
    "approve": ("authorize", "sign_off"),
    "reject": ("decline", "deny"),
    "cancel": ("void", "revoke", "abort"),
    "close": ("resolve", "complete", "finish"),
    "assign": ("allocate", "delegate"),
    "submit": ("file", "lodge"),
    "hold": ("suspend", "freeze"),
    "release": ("unfreeze", "free"),
    "receive": ("accept", "book_in"),
    "schedule": ("plan", "book"),
    "escalate": ("raise", "elevate"),
    "issue": ("grant", "hand_out"),
    "record": ("log", "note"),
    "open": ("start", "begin"),
}
PARAM_SYNONYMS: dict[str, str] = {
    "reason": "justification",
    "status": "state",
    "name": "title",
    "email": "email_address",
    "note": "remark",
    "notes": "remarks",
    "quantity": "qty",
    "amount": "value",
    "condition": "item_condition",
    "title": "heading",
    "description": "details",
    "priority": "urgency",
    "limit": "page_size",
    "offset": "skip",
}


class EvolveConfig(BaseModel):
    """How versions are sampled (recorded in the ecosystem file)."""

    versions: int = Field(6, ge=1)
    min_transforms: int = 8
    max_transforms: int = 12
    """Accepted transformations per domain per version are drawn from [min, max]."""
    keep_one_to_one: float = 0.15
    """Chance a one-to-one or split source is kept (overlap) rather than retired (or modified in place)."""
    keep_split: float = 0.5
    keep_merge: float = 0.6
    retire_overlap_share: float = 0.6
    """When retiring, the chance of retiring an overlapping one-function interface rather than a merged one."""
    perturb_rate: float = 0.04
    """Share of a version's tools whose description is perturbed."""
    samples: int = 3
    """Gold inputs each transformation is checked on."""
    max_block: int = 3
    band_low: float = Field(0.9, gt=0, le=1)
    band_high: float = Field(1.0, gt=0, le=1)
    """Each later version's tool count is brought within [band_low, band_high] × the domain's v1 count
    by retiring implementations (the seed's catalogs shrink and stay within 799–892 tools)."""
    cost_model: str | None = None
    """Score implementations with this model (cached) instead of the declared-work rubric."""
    seed: int = 0


class TransformRecord(BaseModel):
    """One transformation, accepted or rejected: enough to rebuild it without checking again."""

    id: str
    domain: str
    version: int
    kind: TransformKind
    sources: list[str]
    """Implementation ids it transforms (or retires)."""
    new_impl: str | None = None
    new_tools: list[str] = Field(default_factory=list)
    retire_source: bool = False
    in_place: bool = False
    """A one-to-one change that keeps the tool's name: the interface is *modified*."""
    options: dict[str, Any] = Field(default_factory=dict)
    retired_tools: list[str] = Field(default_factory=list)
    samples: int = 0
    status: Literal["accepted", "rejected"] = "accepted"
    reason: str = ""

    def problem(self) -> tuple[str, str] | None:
        """(field, why) when an accepted record lacks what `apply_record` reads — a known codec, both parameter
        names, its new tools, its sources — else None: a record read from a file is checked, not found wanting
        mid-replay (issue 56)."""
        if self.status != "accepted":
            return None
        o = self.options
        if self.kind == "format" and o.get("codec") not in CODEC_NAMES:
            return "options.codec", f"{str(o.get('codec'))[:40]!r} is not one of {', '.join(CODEC_NAMES)}"
        if self.kind == "rename_param" and not all(
            isinstance(o.get(k), str) for k in ("old_param", "new_param")
        ):
            return "options", "a rename_param names options.old_param and options.new_param"
        wanted = {"split": 3, "retire": 0}.get(self.kind, 1)
        if len(self.new_tools) < wanted:
            return "new_tools", f"a {self.kind} names {wanted} new tool(s), not {len(self.new_tools)}"
        if not self.sources:
            return "sources", f"a {self.kind} names the implementations it transforms"
        return None


class Perturbation(BaseModel):
    """A description changed to be incomplete or outdated (the tool's behaviour is unchanged)."""

    tool: str
    kind: Literal["truncated", "outdated", "vague"]
    description: str


@dataclass
class VersionState:
    """One domain in one version."""

    version: int
    catalog: DomainCatalog
    records: list[TransformRecord] = field(default_factory=list)
    rejected: list[TransformRecord] = field(default_factory=list)
    perturbations: list[Perturbation] = field(default_factory=list)
    costs: dict[str, float] = field(default_factory=dict)
    band: int = 0
    """The tool count this version was brought down to (0 in v1)."""


# --- applying records (shared by sampling and materialising) --------------------------------------


def apply_record(cat: DomainCatalog, rec: TransformRecord) -> tuple[Impl | None, list[Tool]]:
    """Apply one record to `cat` in place; returns the new implementation and its new tools."""
    if rec.kind == "retire":
        rec.retired_tools = []
        for src in rec.sources:
            rec.retired_tools += cat.retire_impl(src)
        return None, []
    srcs = [cat.impls[s] for s in rec.sources]
    vid = rec.new_impl or rec.id
    o = rec.options
    if rec.kind == "rename_tool":
        impl, tools = cat.rename_tool(srcs[0], rec.new_tools[0], vid)
    elif rec.kind == "rename_param":
        impl, tools = cat.rename_param(srcs[0], o["old_param"], o["new_param"], rec.new_tools[0], vid)
    elif rec.kind == "add_param":
        impl, tools = cat.add_param(srcs[0], rec.new_tools[0], vid)
    elif rec.kind == "format":
        impl, tools = cat.format(srcs[0], o["codec"], rec.new_tools[0], vid)
    elif rec.kind == "split":
        a, b, c = rec.new_tools
        impl, tools = cat.split(srcs[0], (a, b, c), vid)
    elif rec.kind == "merge":
        impl, tools = cat.merge(srcs, rec.new_tools[0], vid)
    else:  # pragma: no cover - Literal guards this
        raise ValueError(rec.kind)
    retired: list[str] = []
    if rec.retire_source or rec.in_place:
        for sid in dict.fromkeys(s.id for s in srcs):
            retired += cat.retire_impl(sid)
    cat.add(impl, tools)
    rec.retired_tools = [t for t in retired if t not in cat.tools]
    return impl, tools


def apply_perturbation(cat: DomainCatalog, p: Perturbation) -> None:
    if p.tool in cat.tools:
        cat.tools[p.tool] = dataclasses.replace(cat.tools[p.tool], description=p.description)


# --- sampling ------------------------------------------------------------------------------------


class DomainEvolver:
    """Samples versions 2..N of one domain."""

    def __init__(
        self,
        domain: CompiledDomain,
        tasks: Sequence[Task],
        config: EvolveConfig,
        scorer: ModelScorer | None = None,
    ) -> None:
        self.domain = domain
        self.config = config
        self.scorer = scorer
        self.prefix = domain.spec.tool_prefix
        world = World(domain)
        fmap = {c.tool: c.function or c.tool for t in tasks for c in t.gold_path}
        base = DomainCatalog.base(world, fmap)
        self.verifier = Verifier(domain, tasks, base.tools)
        schemas = {n: t.input_schema for n, t in base.tools.items()}
        self.knowledge = {t.id: TaskKnowledge(t, schemas) for t in self.verifier.tasks}
        self.block_counts: Counter[tuple[str, ...]] = Counter()
        self.usable_blocks: Counter[tuple[str, ...]] = Counter()
        """Occurrences of each block where one call could do it (merges are drawn from these)."""
        for t in self.verifier.tasks:
            seq = t.base_functions
            for w in range(1, config.max_block + 1):
                for i in range(len(seq) - w + 1):
                    block = tuple(seq[i : i + w])
                    self.block_counts[block] += 1
                    if w >= 2 and self.knowledge[t.id].block_usable(i, i + w):
                        self.usable_blocks[block] += 1
        self.work: dict[str, Work] = {n: declared_work(t, domain) for n, t in base.tools.items()}
        self.cost: dict[str, float] = {n: self._score(t, self.work[n]) for n, t in base.tools.items()}
        digest = hashlib.sha256(f"{config.seed}:{domain.name}".encode()).hexdigest()
        self.rng = random.Random(int(digest[:12], 16))
        self.n1 = len(base.tools)
        self.low = max(1, math.ceil(config.band_low * self.n1))
        self.high = max(self.low, math.floor(config.band_high * self.n1))
        self._prev: set[str] = set(base.impls)
        self.versions: list[VersionState] = [VersionState(1, base, costs=self._cost_table(base))]

    def run(self) -> list[VersionState]:
        for v in range(2, self.config.versions + 1):
            self.versions.append(self.next_version(v))
        return self.versions

    # costs

    def _score(self, tool: Tool, work: Work) -> float:
        return float(self.scorer.score(tool, work) if self.scorer else rubric_score(work))

    def _cost_table(self, cat: DomainCatalog) -> dict[str, float]:
        return {t: self.cost[t] for t in sorted(cat.tools)}

    def _assign_costs(self, rec: TransformRecord, impl: Impl, cat: DomainCatalog, srcs: list[Impl]) -> None:
        """Give the new tools of an accepted transformation their work and cost, once."""
        if rec.kind in ONE_TO_ONE:
            src_tool = srcs[0].tools[0]
            self.work[impl.tools[0]] = self.work[src_tool]
            self.cost[impl.tools[0]] = self.cost[src_tool]
        elif rec.kind == "split":
            src_tool = srcs[0].tools[0]
            start, set_, commit = impl.tools
            for name in (start, set_):
                self.work[name] = DRAFT_WORK
                self.cost[name] = self._score(cat.tools[name], DRAFT_WORK)
            self.work[commit] = self.work[src_tool]
            self.cost[commit] = self.cost[src_tool]
        elif rec.kind == "merge":
            work = merged_work([self.work[p.tools[0]] for p in srcs])
            self.work[impl.tools[0]] = work
            self.cost[impl.tools[0]] = self._score(cat.tools[impl.tools[0]], work)

    # names

    def _split_name(self, name: str) -> tuple[str, str]:
        if self.prefix and name.startswith(self.prefix):
            return self.prefix, name[len(self.prefix) :]
        return "", name

    def _fresh(self, cat: DomainCatalog, wanted: str, version: int) -> str:
        wanted = VERSION_SUFFIX.sub("", wanted)
        name, k = wanted, 2
        taken = set(cat.tools) | {t for s in self.versions for t in s.catalog.tools}
        while name in taken:
            name = f"{wanted}_v{version}" if k == 2 else f"{wanted}_v{version}_{k}"
            k += 1
        return name

    def _renamed(self, cat: DomainCatalog, name: str, version: int) -> str:
        prefix, rest = self._split_name(name)
        verb, _, noun = rest.partition("_")
        options = VERB_SYNONYMS.get(verb)
        if options and noun:
            return self._fresh(cat, f"{prefix}{self.rng.choice(options)}_{noun}", version)
        verb, _, noun = rest.partition("_")
        generic = ("process", "perform", "execute")
        if verb in generic:
            return self._fresh(
                cat, f"{prefix}{self.rng.choice([g for g in generic if g != verb])}_{noun}", version
            )
        return self._fresh(cat, f"{prefix}{self.rng.choice(generic)}_{rest}", version)

    @staticmethod
    def _param_synonym(p: str) -> str:
        if p.endswith("_id"):
            return p[:-3] + "_ref"
        if p.endswith("_number"):
            return p[: -len("_number")] + "_no"
        return PARAM_SYNONYMS.get(p, p + "_value")

    # candidates: only implementations the previous version had

    def _old(self, cat: DomainCatalog) -> list[Impl]:
        return sorted((i for i in cat.impls.values() if i.id in self._prev), key=lambda i: i.id)

    def _gold_atomic(self, cat: DomainCatalog) -> list[Impl]:
        return [i for i in self._old(cat) if i.atomic and self.block_counts.get(i.covers)]

    def _retirable(self, cat: DomainCatalog) -> tuple[list[Impl], list[Impl], list[Impl]]:
        """Old implementations whose retirement keeps every required function performable:
        overlapping one-function interfaces, the interfaces of functions no task uses, merges."""
        single = cat.single_function_impls()
        required = cat.required if cat.required is not None else set(cat.base_function.values())
        overlaps, unused, merged = [], [], []
        for i in self._old(cat):
            if len(i.covers) > 1:
                merged.append(i)
            elif len(single[i.covers[0]]) > 1:
                overlaps.append(i)
            elif i.covers[0] not in required:
                unused.append(i)
        return overlaps, unused, merged

    def _candidate(self, cat: DomainCatalog, version: int, rid: str) -> TransformRecord | None:
        cfg, rng = self.config, self.rng
        kind = rng.choices(list(KIND_WEIGHTS), weights=list(KIND_WEIGHTS.values()))[0]
        rec = TransformRecord(id=rid, domain=self.domain.name, version=version, kind=kind, sources=[])  # type: ignore[arg-type]
        atomic = self._gold_atomic(cat)
        if kind == "retire":
            overlaps, _, merged = self._retirable(cat)
            pool = (
                overlaps if overlaps and (not merged or rng.random() < cfg.retire_overlap_share) else merged
            )
            if not pool:
                return None
            rec.sources = [rng.choice(pool).id]
            return rec
        if kind == "merge":
            blocks = sorted((b, n) for b, n in self.usable_blocks.items() if n > 0)
            if not blocks:
                return None
            block = rng.choices([b for b, _ in blocks], weights=[n for _, n in blocks])[0]
            parts: list[Impl] = []
            for f in block:
                options = [i for i in atomic if i.covers == (f,)]
                if not options:
                    return None
                parts.append(rng.choice(options))
            prefix = self._split_name(parts[0].tools[0])[0]
            rest = "_then_".join(self._split_name(p.tools[0])[1] for p in parts)
            if len(rest) > 64:
                rest = "workflow_" + hashlib.sha256(rest.encode()).hexdigest()[:6]
            rec.sources = [p.id for p in parts]
            rec.new_tools = [self._fresh(cat, prefix + rest, version)]
            single = cat.single_function_impls()
            retirable = all(len(single.get(p.covers[0], [])) > 1 for p in parts)
            rec.retire_source = retirable and rng.random() > cfg.keep_merge
            return rec
        if not atomic:
            return None
        src = rng.choice(atomic)
        rec.sources = [src.id]
        name = src.tools[0]
        keep = rng.random() < cfg.keep_one_to_one
        if kind == "split":
            prefix, rest = self._split_name(name)
            rec.new_tools = [
                self._fresh(cat, f"{prefix}{step}_{rest}", version) for step in ("start", "set", "commit")
            ]
            rec.retire_source = not keep
            return rec
        if kind == "rename_tool":
            rec.new_tools = [self._renamed(cat, name, version)]
            rec.retire_source = not keep
            return rec
        # rename_param / add_param / format: modified in place unless the source is kept
        rec.in_place = not keep
        rec.new_tools = [name if rec.in_place else self._fresh(cat, f"{name}_v{version}", version)]
        if kind == "rename_param":
            tool = cat.tools[name]
            params = tool.required or tool.params
            if not params:
                return None
            old = rng.choice(sorted(params))
            rec.options = {"old_param": old, "new_param": self._param_synonym(old)}
        elif kind == "format":
            rec.options = {"codec": rng.choice(CODEC_NAMES)}
        return rec

    def _samples(self, impl: Impl) -> list[GoldSample]:
        """Gold inputs to check `impl` on; for a merge only occurrences where one call can do the block."""
        found = self.verifier.occurrences(impl.covers)
        if len(impl.covers) > 1:
            found = [s for s in found if self.knowledge[s.task.id].block_usable(s.start, s.end)]
        self.rng.shuffle(found)
        return found[: self.config.samples]

    def _try(self, cat: DomainCatalog, rec: TransformRecord) -> tuple[DomainCatalog, str]:
        """Check and apply `rec` on a copy of `cat`; returns the new catalog or the rejection reason."""
        after = cat.clone()
        try:
            impl, _ = apply_record(after, rec)
        except ToolError as exc:
            return cat, f"not applicable: {exc.message}"
        srcs = [cat.impls[s] for s in rec.sources]
        if impl is not None:
            result = self.verifier.check(cat.tools, srcs, after.tools, impl, self._samples(impl))
            rec.samples = result.samples
            if not result.ok:
                return cat, result.reason
        lost = after.unreachable()
        if lost:
            return cat, f"would leave base functions unreachable: {', '.join(lost)}"
        if len(after.tools) > len(cat.tools) and self._least_size(after) > self.high:
            return cat, f"would leave the catalog above its size band ({self.high} tools)"
        if len(after.tools) < min(len(cat.tools), self.low):
            return cat, f"would leave the catalog below its size band ({self.low} tools)"
        if impl is not None:
            self._assign_costs(rec, impl, after, srcs)
        return after, ""

    def next_version(self, version: int) -> VersionState:
        prev = self.versions[-1]
        self._prev = set(prev.catalog.impls)
        cat = prev.catalog.clone()
        state = VersionState(version, cat)
        budget = self.rng.randint(self.config.min_transforms, self.config.max_transforms)
        attempts = 0
        while len(state.records) < budget and attempts < budget * 6:
            attempts += 1
            rid = f"v{version}.{attempts}"
            rec = self._candidate(cat, version, rid)
            if rec is None:
                continue
            if rec.kind != "retire":
                rec.new_impl = f"{rec.new_tools[0] if rec.kind != 'split' else rec.new_tools[-1]}@{rid}"
            new_cat, reason = self._try(cat, rec)
            if reason:
                rec.status, rec.reason = "rejected", reason
                state.rejected.append(rec)
                continue
            cat = new_cat
            state.records.append(rec)
        cat = self._shrink(cat, state)
        state.catalog = cat
        state.perturbations = self._perturb(cat, version)
        for p in state.perturbations:
            apply_perturbation(cat, p)
        state.costs = self._cost_table(cat)
        return state

    def _shrink_pool(self, cat: DomainCatalog, floor: int = 0) -> list[Impl]:
        """What the size band retires next: overlapping interfaces and unused functions before merges,
        the heaviest (most tools, a split) first, none that would take the catalog below `floor`."""
        overlaps, unused, merged = self._retirable(cat)
        room = len(cat.tools) - floor
        fits = [i for i in overlaps + unused if len(i.tools) <= room]
        pool = fits or [i for i in merged if len(i.tools) <= room]
        if not pool:
            return []
        most = max(len(i.tools) for i in pool)
        return [i for i in pool if len(i.tools) == most]

    def _least_size(self, cat: DomainCatalog) -> int:
        """The fewest tools `_shrink` could bring the catalog to (a transformation that adds tools is
        refused when even that stays above the band)."""
        sim = cat.clone()
        while pool := self._shrink_pool(sim, floor=self.low):
            sim.retire_impl(pool[0].id)
        return len(sim.tools)

    def _shrink(self, cat: DomainCatalog, state: VersionState) -> DomainCatalog:
        """Retire old implementations until the catalog is within its size band (recorded as `retire`)."""
        state.band = self.rng.randint(self.low, self.high)
        k = 0
        while len(cat.tools) > state.band:
            pool = self._shrink_pool(cat, floor=self.low)
            if not pool:
                break
            k += 1
            rec = TransformRecord(
                id=f"v{state.version}.r{k}",
                domain=self.domain.name,
                version=state.version,
                kind="retire",
                sources=[self.rng.choice(pool).id],
                options={"why": "catalog size", "band": state.band},
            )
            cat, reason = self._try(cat, rec)
            if reason:  # cannot happen for the pool above; kept as a guard
                rec.status, rec.reason = "rejected", reason
                state.rejected.append(rec)
                break
            state.records.append(rec)
        return cat

    def _perturb(self, cat: DomainCatalog, version: int) -> list[Perturbation]:
        names = sorted(cat.tools)
        k = round(len(names) * self.config.perturb_rate)
        out: list[Perturbation] = []
        for name in self.rng.sample(names, min(k, len(names))):
            tool = cat.tools[name]
            kind = self.rng.choice(("truncated", "outdated", "vague"))
            if kind == "truncated":
                text = tool.description[: max(20, len(tool.description) // 3)].rstrip() + "…"
            elif kind == "outdated":
                wraps = tool.meta.get("wraps")
                old = wraps if isinstance(wraps, str) else name
                text = f"Deprecated alias kept for compatibility; see the documentation of {old}."
            else:
                entity = tool.meta.get("entity") or "records"
                text = f"Works with {entity}."
            out.append(Perturbation(tool=name, kind=kind, description=text))  # type: ignore[arg-type]
        return out
