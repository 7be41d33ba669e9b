"""EvoSkill (sentient-agi/EvoSkill, Apache-2.0; Alzubi et al., 2026, arXiv 2603.02766) as a skill-maintenance method.

Its loop (src/loop/runner.py): the current program (here: a library of Agent Skills) is run on training samples
drawn round-robin over categories (here: domains); a sample scoring under 0.8 is a failure (here: not a strict
success); a proposer, given the failures with their ground truth, the feedback history of earlier proposals and
the existing skills, chooses to create a skill or edit one; a generator writes that one SKILL.md; the child
program is scored on a validation set; the best `frontier_size` (3) programs are kept; the loop stops after
`no_improvement_limit` rounds without a better validation score. Here the proposer and generator are one model
call each (the repository runs them as tool-using coding agents), the rounds per version are capped
(`max_rounds`), and a new version starts its frontier from the previous version's best library, scored on that
version's validation set.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolshift.agents.skills import AgentSkill
from toolshift.skillmethods.calls import Field
from toolshift.skillmethods.common import Step, slug, strict, summary

FAIL_BELOW = 0.8
PROPOSER = (
    "You are EvoSkill's skill proposer. An agent with the skills listed failed the tasks shown (each with the "
    "changes it should have made). Propose ONE skill to create, or ONE existing skill to edit, that would have "
    "prevented these failures. Say which tools, in which order, and where each argument comes from."
)
GENERATOR = (
    "You are EvoSkill's skill generator. Write the skill described by the proposal as a SKILL.md: a one-line "
    "description of when to use it, and instructions the agent follows step by step."
)


@dataclass
class Settings:
    samples: int = 8
    """Training samples per round (round-robin over domains)."""
    frontier_size: int = 3
    no_improvement_limit: int = 2
    max_rounds: int = 3


def _sample(step: Step, round_: int, n: int) -> list[str]:
    """`n` pool tasks, round-robin over domains, a different slice each round."""
    by_domain: dict[str, list[str]] = {}
    for t in step.pool.train:
        by_domain.setdefault(step.pool.tasks[t].domain, []).append(t)
    order = [t for k in range(max(map(len, by_domain.values()), default=0))
             for d in sorted(by_domain) if k < len(by_domain[d]) for t in [by_domain[d][k]]]  # fmt: skip
    start = (round_ * n) % max(1, len(order))
    return (order[start:] + order[:start])[:n]


def propose(step: Step, parent: list[AgentSkill], failures: str, history: list[str], key: str) -> AgentSkill:
    """One proposer call and one generator call: the child's one new or edited skill."""
    names = [s.name for s in parent]
    listing = "\n".join(f"- {s.name}: {s.description}" for s in parent) or "(no skills yet)"
    user = f"Existing skills:\n{listing}\n\nEarlier proposals:\n" + ("\n".join(history[-5:]) or "(none)")
    user += f"\n\nFailures:\n{failures}"
    prop = step.model.ask(
        f"propose:{key}", "propose", PROPOSER, user,
        {"action": Field("choice", options=("create", "edit") if names else ("create",)),
         "target": Field("choice", options=(*names, "new") if names else ("new",)),
         "proposal": Field(limit=300)},
    )  # fmt: skip
    edit = prop["action"] == "edit" and prop["target"] in names
    old = next((s for s in parent if s.name == prop["target"]), None) if edit else None
    before = f"\n\nThe skill as it is now:\n{old.description}\n{old.body[:800]}" if old else ""
    gen = step.model.ask(
        f"generate:{key}", "generate", GENERATOR, f"Proposal: {prop['proposal']}{before}",
        {"description": Field(limit=200), "instructions": Field(limit=600)},
    )  # fmt: skip
    name = old.name if old else slug(gen["description"] or prop["proposal"], set(names))
    meta = {"method": "evoskill", "proposal": prop["proposal"][:300]}
    return AgentSkill(
        name, gen["description"] or name, f"# {name}\n\n{gen['instructions']}\n", {}, {"metadata": meta}
    )


def maintain(step: Step, library: list[AgentSkill], settings: Settings | None = None) -> list[AgentSkill]:
    """Rounds of sample → failures → propose → generate → validate, from the previous version's library."""
    s = settings or Settings()
    pool = step.pool
    val = step.rollouts.run("val-r0", pool.val, library)
    frontier: list[tuple[float, int, list[AgentSkill]]] = [(step.score(val), 0, library)]
    best, stale, history = frontier[0][0], 0, []
    for r in range(1, s.max_rounds + 1):
        _, parent_id, parent = frontier[(r - 1) % len(frontier)]
        eps = step.rollouts.run(f"train-r{r}-p{parent_id}", _sample(step, r, s.samples), parent)
        failed = [e for e in eps if float(strict(e, pool.tasks[e.task_id])) < FAIL_BELOW]
        if not failed:
            stale += 1
            if stale >= s.no_improvement_limit:
                break
            continue
        text = "\n\n".join(summary(e, pool.tasks[e.task_id], gold=True, limit=500) for e in failed[:4])
        skill = propose(step, parent, text, history, f"r{r}")
        child = [x for x in parent if x.name != skill.name] + [skill]
        score = step.score(step.rollouts.run(f"val-r{r}", pool.val, child))
        kept = len(frontier) < s.frontier_size or score > min(f[0] for f in frontier)
        history.append(f"round {r}: {skill.name} ({'kept' if kept else 'discarded'}, validation {score:.2f})")
        if kept:
            frontier = sorted([*frontier, (score, r, child)], key=lambda f: (-f[0], f[1]))[: s.frontier_size]
        if score > best:
            best, stale = score, 0
        else:
            stale += 1
            if stale >= s.no_improvement_limit:
                break
    return max(frontier, key=lambda f: (f[0], -f[1]))[2]


__all__ = ["Settings", "maintain", "propose"]
