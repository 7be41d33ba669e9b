"""The final dataset: per seed task, its programs with the highest completion-rate variance (ties kept),
then the trivial-failure judge. Every program not kept gets its reason.

Written to `OUT/final/`: `selection.json` (`toolshift.evolve-selection/1`, every decision with its
reason), `evolved.jsonl` (`toolshift.evolved-tasks/1`: the kept tasks with their starting state and
scores) and `tasks.jsonl` (`toolshift.tasks/1`: the kept tasks that need no starting state, ready for
`toolshift run --tasks`). Judge verdicts are cached in `final/judged.json` by program id.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from toolshift.evolve.archive import Cost, ProgramRecord
from toolshift.evolve.feedback import diff_attempt
from toolshift.evolve.judge import Verdict, model_verdict, rule_verdict
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.evolve.worlds import write_tools
from toolshift.fileio import read_json, read_text
from toolshift.models import GoldCall, Task
from toolshift.taskfile import write_tasks
from toolshift.traces.store import iter_episodes, write_text_atomic

SELECTION_FORMAT = "toolshift.evolve-selection/1"
EVOLVED_FORMAT = "toolshift.evolved-tasks/1"
TIE = 1e-12


class Decision(BaseModel):
    id: str
    decision: Literal["kept", "rejected"]
    reason: str
    completion: float | None = None
    variance: float | None = None
    generation: int = 0


class RootSelection(BaseModel):
    root: str
    best_variance: float | None = None
    kept: list[str] = Field(default_factory=list)
    decisions: list[Decision] = Field(default_factory=list)


class Selection(BaseModel):
    format: Literal["toolshift.evolve-selection/1"] = SELECTION_FORMAT
    judge: str
    roots: list[RootSelection]
    kept: int = 0
    judge_cost: Cost = Field(default_factory=Cost)


class EvolvedTask(BaseModel):
    """One task of the final dataset (`toolshift.evolved-tasks/1`, one a line after a header)."""

    task: Task
    initial_state: list[GoldCall] = Field(default_factory=list)
    root: str
    program: str
    generation: int
    completion: float
    variance: float
    length: float
    features: list[str] = Field(default_factory=list)
    failure_mode: str | None = None


def _verdict(store: RunStore, config: EvolveConfig, r: ProgramRecord, cache: dict[str, dict]) -> Verdict:
    if r.id in cache and cache[r.id].get("by") == config.judge:
        c = cache[r.id]
        return Verdict(bool(c["trivial"]), str(c["reason"]), str(c["by"]), Cost())
    assert r.task is not None
    writes = write_tools(r.domain, r.task)
    path = store.episodes_path(r.id)
    # the failed attempts: those not strictly successful (older records: by SR, their only verdict)
    wanted = {
        a.trial for a in r.attempts if (a.success if a.strict_success is None else a.strict_success) is False
    }
    episodes = [e for e in iter_episodes(path, skip_bad=True) if e.trial in wanted] if path.exists() else []
    diffs = [diff_attempt(e, r.task, writes) for e in episodes]
    if config.judge == "rules":
        verdict = rule_verdict(diffs)
    else:
        verdict = model_verdict(
            config.judge, r.task, r.feedback, diffs, timeout=config.model_timeout, seed=config.seed
        )
    cache[r.id] = {"trivial": verdict.trivial, "reason": verdict.reason, "by": verdict.by}
    return verdict


def select(store: RunStore, records: list[ProgramRecord] | None = None) -> Selection:
    """Choose, judge and write the final dataset of a run folder."""
    config = store.config()
    records = store.records() if records is None else records
    final = store.folder / "final"
    final.mkdir(parents=True, exist_ok=True)
    cache_path = final / "judged.json"
    cache: dict[str, dict] = read_json(cache_path, what="judge cache") if cache_path.is_file() else {}
    roots = [r.id for r in records if r.step is None]
    out: list[RootSelection] = []
    kept_records: list[ProgramRecord] = []
    judge_cost = Cost()
    for root in roots:
        lineage = [r for r in records if r.root == root]
        sel = RootSelection(root=root)
        candidates = [r for r in lineage if r.evaluated and r.feasible]
        best = max((r.variance or 0.0 for r in candidates), default=None)
        sel.best_variance = best
        for r in lineage:
            base = dict(id=r.id, completion=r.completion, variance=r.variance, generation=r.generation)
            if not r.evaluated:
                sel.decisions.append(Decision(**base, decision="rejected", reason=f"{r.stage}: {r.reason}"))
                continue
            if not r.feasible:
                n = len(r.attempts)
                sel.decisions.append(
                    Decision(**base, decision="rejected", reason=f"infeasible: no perfect attempt in {n}")
                )
                continue
            assert best is not None
            if (r.variance or 0.0) < best - TIE:
                sel.decisions.append(
                    Decision(
                        **base,
                        decision="rejected",
                        reason=f"variance {r.variance:.3f} below the lineage's best {best:.3f}",
                    )
                )
                continue
            verdict = _verdict(store, config, r, cache)
            judge_cost = judge_cost.add(verdict.cost)
            if verdict.trivial:
                sel.decisions.append(
                    Decision(
                        **base,
                        decision="rejected",
                        reason=f"judge ({verdict.by}): trivial failures: {verdict.reason}",
                    )
                )
                continue
            sel.decisions.append(
                Decision(
                    **base,
                    decision="kept",
                    reason=f"highest variance {best:.3f}; judge ({verdict.by}): {verdict.reason}",
                )
            )
            sel.kept.append(r.id)
            kept_records.append(r)
        out.append(sel)
    write_text_atomic(cache_path, json.dumps(cache, indent=1, sort_keys=True) + "\n")
    selection = Selection(judge=config.judge, roots=out, kept=len(kept_records), judge_cost=judge_cost)
    write_text_atomic(final / "selection.json", selection.model_dump_json(indent=1) + "\n")
    evolved = [
        EvolvedTask(
            task=r.task,
            initial_state=r.initial_state,
            root=r.root,
            program=r.id,
            generation=r.generation,
            completion=r.completion or 0.0,
            variance=r.variance or 0.0,
            length=r.length or 0.0,
            features=r.features,
            failure_mode=r.failure_mode,
        )
        for r in kept_records
        if r.task is not None
    ]
    lines = [json.dumps({"format": EVOLVED_FORMAT})] + [e.model_dump_json() for e in evolved]
    write_text_atomic(final / "evolved.jsonl", "\n".join(lines) + "\n")
    write_tasks(final / "tasks.jsonl", [e.task for e in evolved if not e.initial_state])
    return selection


def read_selection(folder: Path) -> Selection | None:
    path = folder / "final" / "selection.json"
    if not path.is_file():
        return None
    return Selection.model_validate_json(read_text(path, what="selection"))
