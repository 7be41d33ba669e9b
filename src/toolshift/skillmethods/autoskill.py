"""AutoSkill (ECNU-ICALK/AutoSkill; Yang et al., 2026, arXiv 2603.01145) as a skill-maintenance method.

Its core, as its repository runs it on agentic trajectories: one extraction call per successful trajectory, which
returns at most one candidate skill (or none, when nothing reusable is there); a candidate with the same identity
(normalised description) as a skill is merged at once; else a similarity search of the candidate against the
library, and a near-duplicate (similarity at or above the dedupe threshold, 0.4) goes to a model judge of "the
same capability?"; when it agrees (or, when the judge is not confident, when the blended similarity score says
so) a merge call writes the merged skill and its patch version is bumped (0.1.0 → 0.1.1); otherwise it is added.
The repository's separate add/merge/discard decision call is folded into the judge here. Here: the similarity is a cosine over words (the repository uses an embedding model
blended with lexical overlap); the blend's weights and the judge's fallback thresholds are the repository's.
Not here: per-turn retrieval and injection (the agent is given the library as Agent Skills, as every method's
is) and pruning by usage (it counts retrievals in deployment; maintenance never sees test episodes).
"""

from __future__ import annotations

import math
import re
from collections import Counter

from toolshift.agents.skills import AgentSkill
from toolshift.skillmethods.calls import Field
from toolshift.skillmethods.common import Step, slug, strict, summary

THRESHOLD = 0.4
"""The repository's `dedupe_similarity_threshold`."""

EXTRACT = (
    "You are AutoSkill's trajectory skill extractor. From one successful agent trajectory, extract at most one "
    "reusable skill: the workflow that made it succeed (which tools, in which order, where each argument comes "
    "from, checks). Remove one-off values (ids, names, dates). If nothing is reusable, answer reusable=no."
)
JUDGE = (
    "You are AutoSkill's capability identity judge. Decide whether the candidate skill is the same job as the "
    "existing skill (an iteration of it) or a new capability. Answer same=yes only for the same job."
)
MERGE = (
    "You are AutoSkill's skill merger. Merge the existing skill and the candidate into one skill for the same "
    "job: keep every durable rule, drop duplicates and one-off details."
)


def _words(text: str) -> Counter[str]:
    return Counter(w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) > 2)


def similarity(a: str, b: str) -> float:
    """Cosine of word counts."""
    x, y = _words(a), _words(b)
    dot = sum(x[w] * y[w] for w in x)
    norm = math.sqrt(sum(v * v for v in x.values())) * math.sqrt(sum(v * v for v in y.values()))
    return dot / norm if norm else 0.0


def merge_confidence(existing: AgentSkill, candidate: AgentSkill, sim: float) -> float:
    """The repository's blend: semantic signal normalised around the threshold (0.70), intent-signal overlap
    (0.18), name overlap (0.12)."""
    floor = max(0.0, THRESHOLD - 0.15)
    semantic = min(1.0, max(0.0, (sim - floor) / (1.0 - floor)))
    a, b = set(_words(existing.description)), set(_words(candidate.description))
    signal = len(a & b) / max(1, len(a | b))
    na, nb = set(existing.name.split("-")), set(candidate.name.split("-"))
    name = len(na & nb) / max(1, len(na | nb))
    return min(1.0, 0.70 * semantic + 0.18 * signal + 0.12 * name)


def _text(s: AgentSkill) -> str:
    return f"{s.name}: {s.description}\n{s.body}"


def _bump(skill: AgentSkill) -> str:
    major, minor, patch = (skill.front.get("metadata", {}) or {}).get("version", "0.1.0").split(".")
    return f"{major}.{minor}.{int(patch) + 1}"


def _skill(name: str, description: str, body: str, version: str, domain: str) -> AgentSkill:
    meta = {"version": version, "method": "autoskill", "domain": domain}
    return AgentSkill(name, description[:1000] or name, f"# {name}\n\n{body}\n", {}, {"metadata": meta})


def maintain(step: Step, library: list[AgentSkill]) -> list[AgentSkill]:
    """One version: every successful training episode extracted, each candidate added, merged or discarded."""
    skills = {s.name: s for s in library}
    pool = step.pool
    for ep in pool.episodes:
        task = pool.tasks[ep.task_id]
        if not strict(ep, task):  # success_only, as its trajectory channel defaults
            continue
        got = step.model.ask(
            f"extract:{ep.id}", "extract", EXTRACT, summary(ep),
            {"reusable": Field("choice", options=("yes", "no")), "name": Field(limit=48),
             "description": Field(limit=200), "instructions": Field(limit=500)},
        )  # fmt: skip
        if got["reusable"] != "yes" or not got["instructions"].strip():
            continue
        cand = _skill(slug(got["name"] or got["description"], set(skills)), got["description"],
                      got["instructions"], "0.1.0", task.domain)  # fmt: skip
        apply(step, skills, cand, ep.id)
    return list(skills.values())


def apply(step: Step, skills: dict[str, AgentSkill], cand: AgentSkill, key: str) -> str:
    """Add or merge one candidate (returns which, and the merged skill's name after a colon): a skill of the same
    identity (its normalised description) is merged at once, as the repository's fast path does; else the most
    similar skill at or above the threshold goes to the judge."""
    same = next((s for s in skills.values() if identity(s.description) == identity(cand.description)), None)
    if same is not None:
        return _merge(step, skills, same, cand, key)
    ranked = sorted(((similarity(_text(s), _text(cand)), s) for s in skills.values()), key=lambda x: -x[0])
    if ranked and ranked[0][0] >= THRESHOLD:
        sim, best = ranked[0]
        verdict = step.model.ask(
            f"judge:{key}", "judge", JUDGE,
            f"Existing skill:\n{_text(best)[:1200]}\n\nCandidate skill:\n{_text(cand)[:1200]}",
            {"same": Field("choice", options=("yes", "no")), "confidence": Field("choice", options=("high", "low"))},
        )  # fmt: skip
        score = merge_confidence(best, cand, sim)
        if verdict["confidence"] == "high":
            same = verdict["same"] == "yes"
        else:  # a judge that is not confident: the repository's deterministic backup
            same = score >= 0.82 or (score > 0.20 and score >= 0.52)
        if same:
            return _merge(step, skills, best, cand, key)
    skills[cand.name] = cand
    return "add"


def identity(description: str) -> str:
    """A description's identity: its words, lowercased, in order (the repository's normalised description)."""
    return " ".join(re.findall(r"[a-z0-9]+", description.lower()))


def _merge(step: Step, skills: dict[str, AgentSkill], best: AgentSkill, cand: AgentSkill, key: str) -> str:
    """The merge call: one skill for both, under the existing name, its patch version bumped."""
    merged = step.model.ask(
        f"merge:{key}", "merge", MERGE,
        f"Existing skill:\n{_text(best)[:1500]}\n\nCandidate skill:\n{_text(cand)[:1500]}",
        {"description": Field(limit=200), "instructions": Field(limit=600)},
    )  # fmt: skip
    domain = (best.front.get("metadata") or {}).get("domain", "")
    skills[best.name] = _skill(best.name, merged["description"] or best.description,
                               merged["instructions"] or best.body, _bump(best), domain)  # fmt: skip
    return f"merge:{best.name}"


__all__ = ["THRESHOLD", "apply", "identity", "maintain", "merge_confidence", "similarity"]
