"""SkillOpt (microsoft/SkillOpt, MIT, PyPI `skillopt`; Yang et al., 2026, arXiv 2605.23904) as a skill-maintenance method.

SkillOpt trains one markdown skill like weights (skillopt/engine/trainer.py): each step rolls out a batch with
the skill, reflects on minibatches of trajectories into edit patches (`append`, `insert_after`, `replace`,
`delete`), aggregates them, selects at most `learning_rate` edits, applies them, and accepts the candidate only if
its score on a selection split strictly improves (the gate). The package's own `apply_patch`
(`skillopt.optimizer.skill`) and `evaluate_gate` (`skillopt.evaluation.gate`) do the Update and Gate steps here
(the `skillopt` extra). Its trainer is not run whole: the PyPI wheel (0.2.0) ships none of its prompt files
(`load_prompt("analyst_error")` raises FileNotFoundError), and its chat backends need an HTTP endpoint, where the
embedded model served over chat completions (`toolshift model serve`) answers as the customer-service agent it is
(a reply of at most 160 characters, here a question), never with SkillOpt's JSON patch; so its reflect and rank
calls are made here through `MethodModel` (one edit per minibatch call; a ranking call picks the first edit kept). Not here: epochs' slow update and the meta-skill
memory. The skill is given to the agent as one Agent Skill; a new version starts from the previous version's
skill (the repository's "transfer learning: seed skill").
"""

from __future__ import annotations

from dataclasses import dataclass

from toolshift.agents.skills import AgentSkill
from toolshift.errors import BadInputError
from toolshift.skillmethods.calls import Field
from toolshift.skillmethods.common import Step, summary

NAME = "operating-guide"
DESCRIPTION = "How to handle any customer request with the tools: read it before acting."
SEED = "# Operating guide\n\nFollow the customer's request step by step with the tools you are given.\n"
REFLECT_FAIL = (
    "You are SkillOpt's error analyst. The agent used the skill below and failed these tasks. Propose ONE edit to "
    "the skill that fixes the failures: op (append, insert_after, replace, delete), target (a line of the skill "
    "for insert_after, replace or delete), content (the new text)."
)
REFLECT_OK = (
    "You are SkillOpt's success analyst. The agent used the skill below and solved these tasks. Propose ONE edit "
    "that keeps what worked: op, target (a line of the skill), content."
)
RANK = "You are SkillOpt's edit ranker. Which edit should be applied first? Answer with its number."


@dataclass
class Settings:
    steps: int = 2
    batch_size: int = 8
    minibatch_size: int = 4
    learning_rate: int = 2
    failure_only: bool = False


def _package() -> tuple[object, object]:
    try:
        from skillopt.evaluation.gate import evaluate_gate
        from skillopt.optimizer.skill import apply_patch
    except ImportError as exc:
        raise BadInputError(
            f"SkillOpt runs its own update and gate: install the skillopt extra (pip install 'toolshift[skillopt]'): {exc}",
            field="methods",
        ) from None
    return apply_patch, evaluate_gate


def document(library: list[AgentSkill]) -> str:
    skill = next((s for s in library if s.name == NAME), None)
    return skill.body if skill is not None else SEED


def as_library(text: str) -> list[AgentSkill]:
    return [AgentSkill(NAME, DESCRIPTION, text, {}, {"metadata": {"method": "skillopt"}})]


def reflect(step: Step, skill: str, episodes: list, key: str, s: Settings) -> list[dict[str, str]]:
    """Reflect: one edit per minibatch of failures (and, unless `failure_only`, of successes)."""
    from toolshift.skillmethods.common import strict

    pool = step.pool
    fails = [e for e in episodes if not strict(e, pool.tasks[e.task_id])]
    oks = [] if s.failure_only else [e for e in episodes if strict(e, pool.tasks[e.task_id])]
    edits = []
    for kind, eps, system in (("fail", fails, REFLECT_FAIL), ("ok", oks, REFLECT_OK)):
        for m in range(0, len(eps), s.minibatch_size):
            mini = eps[m : m + s.minibatch_size]
            text = "\n\n".join(
                summary(e, pool.tasks[e.task_id], gold=kind == "fail", limit=450) for e in mini
            )
            got = step.model.ask(
                f"reflect:{key}:{kind}:{m}", f"reflect-{kind}", system, f"Skill:\n{skill[:1500]}\n\nTasks:\n{text}",
                {"op": Field("choice", options=("append", "insert_after", "replace", "delete")),
                 "target": Field(limit=100), "content": Field(limit=300)},
            )  # fmt: skip
            edits.append(got)
    return edits


def select(step: Step, edits: list[dict[str, str]], key: str, s: Settings) -> list[dict[str, str]]:
    """Select: at most `learning_rate` edits, the one the ranker puts first leading."""
    if len(edits) <= s.learning_rate:
        return edits
    listing = "\n".join(
        f"{k + 1}. {e['op']} {e['target'][:60]!r}: {e['content'][:120]}" for k, e in enumerate(edits)
    )
    got = step.model.ask(f"rank:{key}", "rank", RANK, listing,
                         {"first": Field("choice", options=tuple(str(k + 1) for k in range(len(edits))))})  # fmt: skip
    first = int(got["first"]) - 1
    return [edits[first], *[e for k, e in enumerate(edits) if k != first]][: s.learning_rate]


def gate(candidate: str, cand_score: float, current: str, current_score: float, step_no: int) -> bool:
    """The package's gate: accept only a strictly better score on the selection split."""
    _, evaluate_gate = _package()
    result = evaluate_gate(candidate, cand_score, current, current_score, current, current_score, 0, step_no)  # type: ignore[operator]
    return result.action != "reject"


def maintain(step: Step, library: list[AgentSkill], settings: Settings | None = None) -> list[AgentSkill]:
    """Steps of rollout → reflect → select → update → gate, from the previous version's skill."""
    s = settings or Settings()
    apply_patch, _ = _package()
    pool = step.pool
    current = document(library)
    score = step.score(step.rollouts.run("select-s0", pool.val, as_library(current)))
    order = sorted(pool.train, key=lambda t: step.seed(t))
    for n in range(1, s.steps + 1):
        batch = [
            order[(n - 1) * s.batch_size + k]
            for k in range(s.batch_size)
            if (n - 1) * s.batch_size + k < len(order)
        ]
        if not batch:
            break
        eps = step.rollouts.run(f"train-s{n}", batch, as_library(current))
        edits = select(step, reflect(step, current, eps, f"s{n}", s), f"s{n}", s)
        candidate = apply_patch(
            current,
            {"edits": [{"op": e["op"], "target": e["target"], "content": e["content"]} for e in edits]},
        )  # type: ignore[operator]
        if candidate == current:
            continue
        cand = step.score(step.rollouts.run(f"select-s{n}", pool.val, as_library(candidate)))
        if gate(candidate, cand, current, score, n):
            current, score = candidate, cand
    return as_library(current)


__all__ = ["NAME", "Settings", "as_library", "document", "gate", "maintain", "reflect", "select"]
