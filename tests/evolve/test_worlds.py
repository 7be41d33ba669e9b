"""Seeds from other benchmarks, evolved and judged by those benchmarks' own rules: τ²-bench airline and
retail (τ²'s reward, tool calls replayed by `toolshift.world.tau2.evaluator`) and BFCL multi-turn (BFCL's
`multi_turn_checker` on the entry's regrouped turns)."""

from __future__ import annotations

import random

import pytest

from toolshift.evolve.archive import Mutation
from toolshift.evolve.edits import apply_edit
from toolshift.evolve.engine import Engine
from toolshift.evolve.program import parse_program, render_program, spec_from_task
from toolshift.evolve.seeds import world_seeds
from toolshift.evolve.solver import SolverConfig
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.evolve.structural import Lineage, StructuralProposer
from toolshift.evolve.turns import regrouped
from toolshift.evolve.verify import verify
from toolshift.traces.store import iter_episodes


def _engine(tmp_path, seeds, q: float = 1.0, attempts: int = 2) -> Engine:
    store = RunStore(tmp_path / "run")
    config = EvolveConfig(
        seed=0, generations=1, solver=SolverConfig(model=f"noisy-oracle:{q}", attempts=attempts, max_turns=40)
    )
    store.create(config, seeds)
    e = Engine(store, store.config())
    e.roots = {t.id: t for t in seeds}
    return e


def _child(e: Engine, root, spec, step: int):
    return e.evaluate(
        f"{root.id}.s{step:04d}", root.id, root.domain, render_program(root.domain, spec),
        Mutation(proposer="structural", kind="structural"), parent=root.id, generation=1, step=step,
        proposer_cost=None, known={},
    )  # fmt: skip


@pytest.fixture(scope="module")
def airline():
    from toolshift.world.tau2.domains import tau2_world

    why = tau2_world("tau2-airline").unavailable()
    if why:
        pytest.skip(f"tau2-airline unavailable: {why}")
    return world_seeds("tau2-airline", 6, seed=0, calls=set(range(4, 10)))


def test_tau2_seeds_keep_their_judge_and_criteria_under_unique_ids(airline):
    assert len(airline) == 6 and len({t.id for t in airline}) == 6
    for t in airline:
        assert t.id.startswith("tau2-airline-") and t.domain == "tau2-airline"
        assert t.judge == "tau2-evaluator" and t.criteria is not None and t.expected_changes
        assert 4 <= len(t.gold_path) <= 9


def test_a_tau2_child_is_judged_by_tau2s_reward_on_its_own_ground_truth(tmp_path, airline):
    from toolshift.world.tau2.evaluator import Call, evaluate

    proposer = StructuralProposer()
    for root in airline:
        spec = spec_from_task(root.public_request, root.instruction, root.gold_path)
        parent = verify(root.id, root.domain, spec, root=root).task
        assert parent.criteria == root.criteria  # a seed keeps τ²'s own criteria
        made = proposer.reveal_identifier(
            proposer.scene(root.domain), parent, spec, Lineage(), random.Random(0)
        )
        if made is not None:
            break
    else:
        pytest.fail("reveal_identifier applied to none of the airline seeds")
    child_spec = apply_edit(spec, made[0])
    child = verify(f"{root.id}.s0000", root.domain, child_spec, root=root).task
    assert child.judge == "tau2-evaluator" and len(child.gold_path) < len(parent.gold_path)
    assert [a.name for a in child.criteria.actions] == [c.tool for c in child.gold_path]
    assert "NL_ASSERTION" not in child.criteria.reward_basis
    # τ²'s own evaluator: the child's ground truth earns 1.0, the same path without its last write 0.0
    calls = [Call(c.tool, dict(c.arguments)) for c in child.gold_path]
    said = child.criteria.communicate_info or []
    assert evaluate(child, calls, [" ".join(said)], "agent_stop")["reward"] == 1.0
    last_write = max(i for i, c in enumerate(child.gold_path) if c.tool in proposer.scene(root.domain).writes)
    cut = calls[:last_write] + calls[last_write + 1 :]
    assert evaluate(child, cut, [" ".join(said)], "agent_stop")["reward"] == 0.0
    # through the loop: the instrument's attempts are judged by τ²'s reward
    e = _engine(tmp_path, [root])
    record = _child(e, root, child_spec, 0)
    assert record.evaluated and record.completion == 1.0, record.reason
    episodes = list(iter_episodes(e.store.episodes_path(record.id)))
    assert episodes and all(ep.outcome.judged_by == "tau2-reward" for ep in episodes)


@pytest.fixture(scope="module")
def bfcl_seeds():
    pytest.importorskip("bfcl_eval", reason="bfcl-eval is not installed (make extras)")
    return world_seeds("bfcl", 3, seed=0, calls=set(range(5, 9)))


def test_bfcl_seeds_and_a_dropped_turn_child_are_judged_by_bfcls_checker(tmp_path, bfcl_seeds):
    root = next(t for t in bfcl_seeds if len(t.turns) >= 3)
    assert root.judge == "bfcl-multi-turn-checker" and root.domain == "bfcl"
    e = _engine(tmp_path, bfcl_seeds)
    seed = e.seed_record(root, {})
    assert seed.evaluated and seed.completion == 1.0, seed.reason  # the full gold path passes BFCL's checker
    _, spec = parse_program(seed.program)
    assert [t.of for t in spec.turns] == [[i] for i in range(len(root.turns))]
    dropped = regrouped(spec, root, [[i] for i in range(len(root.turns) - 1)])
    child = _child(e, root, dropped, 0)
    assert child.evaluated and child.completion == 1.0, child.reason
    assert child.task.difficulty["bfcl_turn_groups"] == [[i] for i in range(len(root.turns) - 1)]
    episodes = list(iter_episodes(e.store.episodes_path(child.id)))
    assert all(ep.outcome.judged_by == "bfcl-multi-turn-checker" for ep in episodes)
    merged = regrouped(spec, root, [[0, 1], *[[i] for i in range(2, len(root.turns))]])
    both = _child(e, root, merged, 1)
    assert both.evaluated and both.completion == 1.0 and len(both.task.turns) == len(root.turns) - 1


def test_bfcls_checker_fails_a_child_attempt_that_misses_a_call(bfcl_seeds):
    from toolshift.world.external import Transcript, judge_task

    root = next(t for t in bfcl_seeds if len(t.turns) >= 3)
    groups = [[i] for i in range(len(root.turns) - 1)]
    spec = regrouped(
        spec_from_task(root.public_request, root.instruction, root.gold_path, turns=root.turns), root, groups
    )
    child = verify(f"{root.id}.s0000", root.domain, spec, root=root).task
    paths = child.turn_paths()
    turns = [[[(c.tool, c.arguments)] for c in path] for path in paths]
    flat = [c for t in turns for s in t for c in s]
    assert judge_task(child, Transcript(turns=turns, calls=flat, final_text=""))["success"] is True
    short = [t[:-1] if i == len(turns) - 1 and t else t for i, t in enumerate(turns)]
    missing = [c for t in short for s in t for c in s]
    if len(missing) < len(flat):
        assert judge_task(child, Transcript(turns=short, calls=missing, final_text=""))["success"] is False


def test_a_bfcl_child_that_changes_the_entrys_text_or_calls_is_rejected(bfcl_seeds):
    from toolshift.evolve.verify import Rejected

    root = next(t for t in bfcl_seeds if len(t.turns) >= 3)
    spec = spec_from_task(root.public_request, root.instruction, root.gold_path, turns=root.turns)
    spec = regrouped(spec, root, [[i] for i in range(len(root.turns) - 1)])
    edited = spec.model_copy(
        update={"turns": [spec.turns[0].model_copy(update={"text": "Do something else."}), *spec.turns[1:]]}
    )
    with pytest.raises(Rejected, match="entry's turns"):
        verify(f"{root.id}.s0001", root.domain, edited, root=root)
    skipped = spec.model_copy(
        update={"turns": [spec.turns[0].model_copy(update={"of": [1]}), *spec.turns[1:]]}
    )
    with pytest.raises(Rejected, match="consecutive"):
        verify(f"{root.id}.s0002", root.domain, skipped, root=root)


def test_an_agentdojo_seed_is_judged_by_its_utility_check_and_proposes_no_children(tmp_path):
    pytest.importorskip("agentdojo", reason="agentdojo is not installed (make extras)")
    seeds = world_seeds("agentdojo:banking", 2, seed=0)
    root = seeds[0]
    assert root.judge == "agentdojo-utility" and root.domain == "agentdojo-banking"
    e = _engine(tmp_path, seeds)
    record = e.seed_record(root, {})
    assert record.evaluated and record.completion == 1.0, record.reason
    episodes = list(iter_episodes(e.store.episodes_path(record.id)))
    assert episodes and all(ep.outcome.judged_by == "agentdojo-utility" for ep in episodes)
    proposal = e.propose(0, root.id, [record])
    assert proposal.program is None and "no children" in (proposal.error or "")
