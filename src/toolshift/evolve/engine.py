"""The evolution loop: seeds evaluated, then steps of propose → parse → verify → solve → score → feedback.

Step s evolves seed lineage s mod R (R seeds) in generation s // R + 1. Its random choices come from a
generator seeded by the run seed and s alone, and the archive it sees is exactly the records of the seeds
and of the steps before it, so a resumed run makes the same choices. A proposal is saved before it is
evaluated and a program's record after, so a kill loses at most the attempts of the program under way
(and those already finished are kept in its episode file).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from toolshift.agents.executor import Executor, NodeProgress
from toolshift.evolve.archive import Cost, Mutation, ProgramRecord, choose_inspirations, choose_parent
from toolshift.evolve.diffs import make_diff
from toolshift.evolve.edits import Edit, EditError, edit_json
from toolshift.evolve.feedback import diff_attempt, feedback_messages, summarise, task_failure_mode
from toolshift.evolve.fitness import score
from toolshift.evolve.judge import model_labels
from toolshift.evolve.modelcalls import ModelCallFailed, complete
from toolshift.evolve.program import ProgramError, parse_program, render_program, spec_from_task
from toolshift.evolve.render import revise, score_task
from toolshift.evolve.solver import attempt_record, solve
from toolshift.evolve.store import Checkpoint, EvolveConfig, ProposalRecord, RunStore, generation_stats
from toolshift.evolve.structural import Lineage, StructuralProposer
from toolshift.evolve.taxonomy import task_features
from toolshift.evolve.verify import Rejected, VerifiedTask, verify
from toolshift.evolve.worlds import is_external_domain, write_tools
from toolshift.models import Task
from toolshift.traces.episode import Episode


@dataclass
class Events:
    """What the loop reports as it goes (the CLI draws progress bars from these)."""

    program_started: Callable[[str, int], None] = lambda pid, attempts: None
    attempt_done: Callable[[str, Episode], None] = lambda pid, episode: None
    program_done: Callable[[ProgramRecord], None] = lambda record: None


def content_fingerprint(v: VerifiedTask) -> str:
    """What makes two tasks the same task, whatever their ids: the user's side, the calls, Δgold."""
    t = v.task
    body = {
        "domain": t.domain,
        "request": t.public_request,
        "instruction": t.instruction.model_dump(mode="json"),
        "setup": [(c.tool, c.arguments) for c in v.initial_state],
        "gold": [(c.tool, c.arguments) for c in t.gold_path],
        "expected": [c.model_dump(mode="json") for c in t.expected_changes],
    }
    if t.turns:  # a BFCL child may differ from its parent only in how the turns are grouped
        body["turns"] = [(x.text, x.gold_calls) for x in t.turns]
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()[:16]


def step_rng(seed: int, step: int) -> random.Random:
    digest = hashlib.sha256(f"evolve:{seed}:step:{step}".encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def child_id(root: str, step: int) -> str:
    return f"{root}.s{step:04d}"


@dataclass
class Engine:
    store: RunStore
    config: EvolveConfig
    events: Events = field(default_factory=Events)
    structural: StructuralProposer = field(default_factory=StructuralProposer)
    roots: dict[str, Task] = field(default_factory=dict)
    """The seed tasks by id (what a lineage's programs are verified and judged against)."""
    executor: Executor | None = None
    """Where the solver's attempts run (None or local: this process); proposing and selecting stay here."""
    nodes: NodeProgress | None = None
    _rewriter: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.structural.moves = self.config.moves

    def rewriter(self):  # type: ignore[no-untyped-def]
        """The model that paraphrases a child's intent: the proposer model, else the judge model, else none."""
        cfg = self.config
        spec = cfg.proposer if cfg.proposer != "structural" else (cfg.judge if cfg.judge != "rules" else None)
        if spec is None:
            return None
        if not self._rewriter:
            from toolshift.bench.instructions import model_rewriter

            self._rewriter.append(model_rewriter(spec, seed=cfg.seed))
        return self._rewriter[0]

    # --- evaluation -------------------------------------------------------------------------------

    def _rejected(self, base: dict, stage: str, reason: str, costs: dict[str, Cost]) -> ProgramRecord:
        return ProgramRecord(**base, status="rejected", stage=stage, reason=reason, costs=costs)

    def evaluate(
        self,
        pid: str,
        root: str,
        domain: str,
        program: str,
        mutation: Mutation,
        *,
        parent: str | None,
        generation: int,
        step: int | None,
        proposer_cost: Cost | None,
        known: dict[str, str],
    ) -> ProgramRecord:
        """Parse, verify, solve, score and explain one program; never raises for the program's faults."""
        base = dict(id=pid, root=root, parent=parent, generation=generation, step=step, domain=domain,
                    program=program, mutation=mutation)  # fmt: skip
        costs: dict[str, Cost] = {}
        if proposer_cost is not None:
            costs["proposer"] = proposer_cost
        started = time.perf_counter()
        try:
            got_domain, spec = parse_program(program)
            if got_domain != domain:
                raise ProgramError(f"the program is for domain {got_domain!r}, its lineage is {domain!r}")
        except ProgramError as exc:
            return self._rejected(base, "parse", str(exc), costs)
        root_task = self.roots.get(root)
        try:
            verified = verify(pid, domain, spec, root=root_task)
        except Rejected as exc:
            costs["verify"] = Cost(seconds=time.perf_counter() - started)
            return self._rejected(base, exc.stage, exc.reason, costs)
        costs["verify"] = Cost(seconds=time.perf_counter() - started)
        rubric = score_task(verified.task)
        base.update(rubric_failed=rubric.failed, rubric_why=rubric.reason())
        if not rubric.ok and pid != root:  # a seed is scored as it is; a child must read as people write
            return self._rejected(base, "rubric", rubric.reason(), costs)
        fp = content_fingerprint(verified)
        if fp in known:
            return self._rejected(base, "duplicate", f"the same task as {known[fp]}", costs)
        task = verified.task
        solver = self.config.solver
        self.events.program_started(pid, solver.attempts)
        t0 = time.perf_counter()
        episodes = solve(
            verified,
            solver,
            self.store.episodes_path(pid),
            on_attempt=lambda e: self.events.attempt_done(pid, e),
            executor=self.executor,
            nodes=self.nodes,
        )
        attempts = [attempt_record(e, task, solver.partial_credit) for e in episodes]
        costs["solver"] = Cost(
            calls=sum(a.turns for a in attempts),
            prompt_tokens=sum(a.prompt_tokens for a in attempts),
            completion_tokens=sum(a.completion_tokens for a in attempts),
            cost=sum(a.cost for a in attempts if a.cost is not None)
            if any(a.cost is not None for a in attempts)
            else None,
            seconds=time.perf_counter() - t0,
        )
        judged = [a for a in attempts if a.score is not None]
        extra = dict(task=task, initial_state=verified.initial_state, attempts=attempts)
        if 2 * len(judged) < len(attempts):
            why = Counter(f"{a.termination} ({a.charged_to})" for a in attempts if a.score is None)
            reasons = ", ".join(f"{k}: {n}" for k, n in why.most_common(3))
            return ProgramRecord(**base, **extra, status="rejected", stage="solve", costs=costs,
                                 reason=f"only {len(judged)} of {len(attempts)} attempts were judged ({reasons})")  # fmt: skip
        # solved means strict success: Δgold ⊆ Δagent and no collateral write (D117)
        fit = score(
            [a.score or 0.0 for a in judged],
            [bool(a.strict_success) for a in judged],
            [float(a.tool_calls) for a in judged if a.strict_success],
        )
        sr_completion = sum(bool(a.success) for a in judged) / len(judged)
        writes = write_tools(domain, root_task)
        features = task_features(task, writes)
        failed = [
            e for e, a in zip(episodes, attempts, strict=True) if a.score is not None and not a.strict_success
        ]
        diffs = [diff_attempt(e, task, writes) for e in failed]
        summary = summarise(diffs, len(judged))
        mode = task_failure_mode(diffs, task, features)
        labels = dict(feedback=summary, feedback_by="rules", features=features, features_by="rules",
                      failure_mode=mode, failure_by="rules")  # fmt: skip
        self._model_feedback(task, diffs, len(judged), labels, costs)
        return ProgramRecord(
            **base, **extra, **labels, status="evaluated", costs=costs, completion=fit.completion,
            sr_completion=sr_completion, length=fit.length, metrics=fit.raw, feasible=fit.feasible, variance=fit.variance,
        )  # fmt: skip

    def _model_feedback(
        self, task: Task, diffs: list, judged: int, labels: dict, costs: dict[str, Cost]
    ) -> None:
        cfg = self.config
        if cfg.feedback != "rules" and diffs:
            try:
                text, cost = complete(
                    cfg.feedback, feedback_messages(task, diffs, judged), timeout=cfg.model_timeout,
                    seed=cfg.seed, base_url=cfg.base_url,
                )  # fmt: skip
                costs["feedback"] = cost
                if text:
                    labels.update(feedback=text[:1500], feedback_by=cfg.feedback)
            except ModelCallFailed as exc:
                labels["feedback"] += f" (feedback model: {exc})"
        if cfg.labeler != "rules":
            try:
                features, mode, cost = model_labels(
                    cfg.labeler, task, labels["feedback"], diffs, timeout=cfg.model_timeout, seed=cfg.seed
                )
                costs["labels"] = cost
                labels.update(
                    features=features, features_by=cfg.labeler, failure_mode=mode, failure_by=cfg.labeler
                )
            except ModelCallFailed:
                pass  # the rules' labels stay, and say they are the rules'

    # --- the loop ---------------------------------------------------------------------------------

    def seed_record(self, task: Task, known: dict[str, str]) -> ProgramRecord:
        spec = spec_from_task(task.public_request, task.instruction, task.gold_path, turns=task.turns)
        program = render_program(task.domain, spec)
        return self.evaluate(
            task.id, task.id, task.domain, program, Mutation(proposer="seed", kind="seed"),
            parent=None, generation=0, step=None, proposer_cost=None, known=known,
        )  # fmt: skip

    def lineage(self, parent: ProgramRecord, by_id: dict[str, ProgramRecord]) -> Lineage:
        edits: list[tuple[str, Edit]] = []
        node: ProgramRecord | None = parent
        while node is not None:
            raw = node.mutation.added.get("edit") if node.mutation.proposer == "structural" else None
            if raw and node.mutation.operator:
                edits.append((node.mutation.operator, Edit.model_validate(raw)))
            node = by_id.get(node.parent) if node.parent else None
        return Lineage(edits)

    def propose(self, step: int, root: str, archive: list[ProgramRecord]) -> ProposalRecord:
        rng = step_rng(self.config.seed, step)
        parent, why = choose_parent(archive, root, rng)
        inspirations = choose_inspirations(archive, parent, rng, self.config.inspirations)
        base = dict(step=step, root=root, parent=parent.id, parent_why=why,
                    inspirations=[r.id for r, _ in inspirations])  # fmt: skip
        started = time.perf_counter()
        if parent.domain == "bfcl" and parent.task is not None:
            return self._propose_turns(base, parent, archive, rng, started)
        if is_external_domain(parent.domain):
            mutation = Mutation(proposer="structural", kind="structural", description="no change")
            return ProposalRecord(**base, mutation=mutation, cost=Cost(seconds=time.perf_counter() - started),
                                  error=f"{parent.domain} tasks are judged by a check the benchmark wrote for the "
                                  "task as given, so they are evaluated as given (no children)")  # fmt: skip
        if self.config.proposer == "structural":
            by_id = {r.id: r for r in archive}
            favoured = Counter(r.mutation.operator for r, _ in inspirations if r.mutation.operator)
            try:
                assert parent.task is not None
                _, spec = parse_program(parent.program)
                held = {r.program for r in archive if r.program}
                made = self.structural.propose(
                    parent.task, spec, parent.completion if parent.feasible else None,
                    self.lineage(parent, by_id), rng, favoured=dict(favoured),
                    known=lambda child: render_program(parent.domain, child) in held,
                )  # fmt: skip
            except (EditError, ProgramError) as exc:
                mutation = Mutation(proposer="structural", kind="structural", description="no change")
                return ProposalRecord(**base, error=str(exc), mutation=mutation,
                                      cost=Cost(seconds=time.perf_counter() - started))  # fmt: skip
            revised, notes = revise(made.spec, self.rewriter())
            program = render_program(parent.domain, revised)
            description = made.description + (f" (writer: {'; '.join(notes)})" if notes else "")
            mutation = Mutation(
                proposer="structural", kind="structural", operator=made.operator, description=description,
                diff=_recorded_diff(parent.program, program), added={"edit": edit_json(made.edit)},
            )  # fmt: skip
            return ProposalRecord(**base, program=program, mutation=mutation,
                                  cost=Cost(seconds=time.perf_counter() - started))  # fmt: skip
        from toolshift.evolve.model_proposer import describe_response, propose_with_model

        spec_name = self.config.proposer
        try:
            program, kind, response, cost = propose_with_model(
                spec_name, parent, [r for r, _ in inspirations], timeout=self.config.model_timeout,
                seed=self.config.seed * 100_003 + step, base_url=self.config.base_url,
                max_tokens=self.config.max_tokens,
            )  # fmt: skip
        except (ProgramError, ModelCallFailed) as exc:
            response = getattr(exc, "response", "")
            mutation = Mutation(proposer=f"model:{spec_name}", kind="diff", description="no usable change",
                                diff=response)  # fmt: skip
            cost = getattr(exc, "cost", None) or Cost(calls=1, seconds=time.perf_counter() - started)
            return ProposalRecord(**base, error=str(exc), mutation=mutation, cost=cost)
        description = describe_response(response)
        try:  # the model's child goes through the same writer as a structural one
            _, child = parse_program(program)
            revised, notes = revise(child, self.rewriter())
            if notes:
                program = render_program(parent.domain, revised)
                description += f" (writer: {'; '.join(notes)})"
        except ProgramError:
            pass  # rejected at the parse stage, with its reason
        mutation = Mutation(
            proposer=f"model:{spec_name}", kind=kind, description=description,  # type: ignore[arg-type]
            diff=response if kind == "diff" else _recorded_diff(parent.program, program),
        )  # fmt: skip
        return ProposalRecord(**base, program=program, mutation=mutation, cost=cost)

    def _propose_turns(self, base: dict, parent: ProgramRecord, archive: list[ProgramRecord], rng: random.Random,
                       started: float) -> ProposalRecord:  # fmt: skip
        """A BFCL child: the entry's turns regrouped (`toolshift.evolve.turns`), whatever the proposer."""
        from toolshift.evolve.turns import propose_turns

        root = self.roots[parent.root]
        held = {r.program for r in archive if r.program}
        try:
            _, spec = parse_program(parent.program)
            made = propose_turns(
                spec, root, parent.completion if parent.feasible else None, rng,
                known=lambda child: render_program(parent.domain, child) in held,
            )  # fmt: skip
        except (EditError, ProgramError) as exc:
            mutation = Mutation(proposer="structural", kind="structural", description="no change")
            return ProposalRecord(**base, error=str(exc), mutation=mutation,
                                  cost=Cost(seconds=time.perf_counter() - started))  # fmt: skip
        program = render_program(parent.domain, made.spec)
        mutation = Mutation(proposer="structural", kind="structural", operator=made.operator,
                            description=made.description, diff=_recorded_diff(parent.program, program))  # fmt: skip
        return ProposalRecord(**base, program=program, mutation=mutation,
                              cost=Cost(seconds=time.perf_counter() - started))  # fmt: skip

    def run_step(
        self, step: int, roots: list[str], archive: list[ProgramRecord], known: dict[str, str]
    ) -> ProgramRecord:
        root = roots[step % len(roots)]
        generation = step // len(roots) + 1
        proposal = self.store.proposal(step)
        if proposal is None:
            proposal = self.propose(step, root, archive)
            self.store.save_proposal(proposal)
        by_id = {r.id: r for r in archive}
        domain = by_id[proposal.parent].domain
        pid = child_id(root, step)
        if proposal.error is not None or proposal.program is None:
            return ProgramRecord(
                id=pid, root=root, parent=proposal.parent, generation=generation, step=step, domain=domain,
                mutation=proposal.mutation, status="rejected", stage="propose", reason=proposal.error,
                costs={"proposer": proposal.cost},
            )  # fmt: skip
        return self.evaluate(
            pid, root, domain, proposal.program, proposal.mutation, parent=proposal.parent,
            generation=generation, step=step, proposer_cost=proposal.cost, known=known,
        )  # fmt: skip

    def run(self, *, max_steps: int | None = None) -> list[ProgramRecord]:
        """Evaluate missing seeds, then the remaining steps (at most `max_steps` of them now)."""
        seeds = self.store.seeds()
        self.roots = {t.id: t for t in seeds}
        archive = self.store.records()
        known = {self._fingerprint(r): r.id for r in archive if r.task is not None}
        done = {r.id for r in archive}
        for task in seeds:
            if task.id in done:
                continue
            record = self.seed_record(task, known)
            self._keep(record, archive, known)
        roots = [t.id for t in seeds if any(r.id == t.id and r.evaluated for r in archive)]
        total = self.config.generations * len(roots)
        next_step = max((r.step for r in archive if r.step is not None), default=-1) + 1
        last = total if max_steps is None else min(total, next_step + max_steps)
        for step in range(next_step, last):
            record = self.run_step(step, roots, archive, known)
            self._keep(record, archive, known)
        self._checkpoint(archive, total, len(seeds))
        return archive

    def _fingerprint(self, r: ProgramRecord) -> str:
        assert r.task is not None
        return content_fingerprint(VerifiedTask(task=r.task, initial_state=list(r.initial_state)))

    def _keep(self, record: ProgramRecord, archive: list[ProgramRecord], known: dict[str, str]) -> None:
        self.store.save(record)
        archive.append(record)
        if record.task is not None and record.status == "evaluated":
            known.setdefault(self._fingerprint(record), record.id)
        roots = {r.root for r in archive if r.step is None and r.evaluated}
        self._checkpoint(
            archive, self.config.generations * len(roots), sum(1 for r in archive if r.step is None)
        )
        self.events.program_done(record)

    def _checkpoint(self, archive: list[ProgramRecord], total: int, seeds: int) -> None:
        self.store.save_checkpoint(
            Checkpoint(
                updated=datetime.now(UTC).isoformat(timespec="seconds"),
                steps_total=total,
                steps_done=sum(1 for r in archive if r.step is not None),
                seeds=seeds,
                programs=len(archive),
                generations=generation_stats(archive),
            )
        )


def _recorded_diff(old: str, new: str) -> str:
    """The child as a diff of its parent, for the record; "" where no SEARCH/REPLACE block can say it."""
    try:
        return make_diff(old, new)
    except ProgramError:
        return ""
