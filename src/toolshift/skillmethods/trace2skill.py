"""Trace2Skill (Qwen-Applications/Trace2Skill; Ni et al., 2026, arXiv 2603.25158) as a skill-maintenance method.

Its pipeline (skill_evolver/parallel_evolving_agent.py; analysis/): rollouts of the agent with the current skill
preloaded; per failed trajectory an error analyst that must validate its diagnosis against the ground truth (its
repository's analyst iterates with an `evaluate_output` tool until its minimal fix matches the gold output), per
success a one-call success analyst; each analysis becomes a patch against a frozen snapshot of the skill (MAP);
patches are merged hierarchically, `merge_batch_size` (5) at a time (REDUCE); the final patch is applied and the
result checked (APPLY). Here the skill is one skill per domain (`<domain>-procedures`, the repository deepens one
skill per benchmark); the analyst's fix is the tool call the failure lacked, chosen among the domain's tools and
checked against the ground truth the training task has, the version's reference path (a fix it lacks is refused
and the analyst asked again, `attempts` times in all; only validated diagnoses make patches); patches add
lessons to the skill's sections. Not here: three seeds with the best on the training set (one seed), and the
analyst's own tool loop (one call per attempt).
"""

from __future__ import annotations

from dataclasses import dataclass

from toolshift.agents.skills import AgentSkill
from toolshift.skillmethods.calls import Field
from toolshift.skillmethods.common import Step, strict, summary

ERROR_ANALYST = (
    "You are Trace2Skill's error analyst. The agent failed this task. Diagnose the root cause and name the one "
    "tool call it should have made (fix_tool) that leads to the expected changes. Then write the lesson for the "
    "skill so the agent does not fail this way again."
)
SUCCESS_ANALYST = (
    "You are Trace2Skill's success analyst. The agent solved this task. Write the one reusable lesson that made "
    "it succeed, for the skill."
)
MERGER = (
    "You are Trace2Skill's patch merger. Merge these lessons into one list: remove duplicates, resolve "
    "conflicts, keep each lesson on its own line."
)


@dataclass
class Settings:
    batch: int = 8
    """Pool tasks rolled out per version."""
    attempts: int = 2
    """Error-analyst attempts to validate a fix against the ground truth."""
    merge_batch_size: int = 5
    max_merge_levels: int = 5


def skill_name(domain: str) -> str:
    return f"{domain.replace('_', '-')}-procedures"


def analyse_failure(
    step: Step, ep_key: str, text: str, tools: list[str], gold: list[str], attempts: int = 2
) -> tuple[str, bool]:
    """The error analyst: its lesson and whether its fix was validated against the ground truth (`gold`, the
    tools the reference path calls). A fix the ground truth lacks is refused, and the analyst asked again."""
    feedback = ""
    for k in range(attempts):
        got = step.model.ask(
            f"error:{ep_key}:{k}", "error-analyst", ERROR_ANALYST, text + feedback,
            {"diagnosis": Field(limit=200), "fix_tool": Field("choice", options=tuple(tools)),
             "lesson": Field(limit=240)},
        )  # fmt: skip
        if got["fix_tool"] in gold:
            return got["lesson"], True
        feedback = f"\n\nYour fix ({got['fix_tool']}) does not lead to the expected changes. Try again."
    return "", False


def _merge(step: Step, lessons: list[str], key: str, s: Settings) -> list[str]:
    """REDUCE: lessons merged `merge_batch_size` at a time, level by level, until one batch is left."""
    level = 0
    while len(lessons) > s.merge_batch_size and level < s.max_merge_levels:
        groups = [lessons[i : i + s.merge_batch_size] for i in range(0, len(lessons), s.merge_batch_size)]
        lessons = []
        for g, group in enumerate(groups):
            got = step.model.ask(
                f"merge:{key}:{level}:{g}", "merge", MERGER, "\n".join(f"- {x}" for x in group),
                {"lessons": Field(limit=500)},
            )  # fmt: skip
            lessons += [x.strip(" -") for x in got["lessons"].split(" - ") if x.strip(" -")] or group[:1]
        level += 1
    return lessons


def maintain(step: Step, library: list[AgentSkill], settings: Settings | None = None) -> list[AgentSkill]:
    """Rollouts with the current skills, analyses, patches merged per domain and applied."""
    s = settings or Settings()
    pool = step.pool
    batch = sorted(pool.train, key=lambda t: step.seed(t))[: s.batch]
    eps = step.rollouts.run("rollouts", batch, library)
    lessons: dict[str, list[str]] = {}
    for ep in eps:
        task = pool.tasks[ep.task_id]
        tools = sorted(pool.tools.get(task.domain, {}))
        if strict(ep, task):
            got = step.model.ask(f"success:{ep.id}", "success-analyst", SUCCESS_ANALYST, summary(ep),
                                 {"lesson": Field(limit=240)})  # fmt: skip
            lesson, ok = got["lesson"], True
        else:
            gold = pool.gold.get(ep.task_id, [])
            lesson, ok = analyse_failure(step, ep.id, summary(ep, task, gold=True), tools, gold, s.attempts)
        if ok and lesson.strip():
            lessons.setdefault(task.domain, []).append(lesson.strip())
    skills = {x.name: x for x in library}
    for domain, found in sorted(lessons.items()):
        merged = _merge(step, found, domain, s)
        name = skill_name(domain)
        old = skills.get(name)
        body = old.body if old else f"# {domain.replace('_', ' ')}: procedures\n"
        body = (
            body.rstrip()
            + f"\n\n## Lessons (version {pool.version})\n\n"
            + "\n".join(f"- {x}" for x in merged)
            + "\n"
        )
        desc = f"How to handle {domain.replace('_', ' ')} requests: procedures and lessons from past tasks."
        skills[name] = AgentSkill(
            name, desc, body, {}, {"metadata": {"method": "trace2skill", "domain": domain}}
        )
    return list(skills.values())


__all__ = ["Settings", "analyse_failure", "maintain", "skill_name"]
