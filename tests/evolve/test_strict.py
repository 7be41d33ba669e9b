"""Task evolution judges attempts by strict success: a solver that also cancels another appointment has not
solved the task, in the attempt's score, the completion rate, feasibility and every fitness metric."""

from __future__ import annotations

import pytest

from collateral import COLLATERAL_ROW, cancel_episode, without_verdict_fields
from toolshift.evolve.archive import Mutation
from toolshift.evolve.engine import Engine
from toolshift.evolve.fitness import metrics
from toolshift.evolve.program import ChangeSpec, CriteriaSpec
from toolshift.evolve.report import strict_lines
from toolshift.evolve.solver import SolverConfig, attempt_record
from toolshift.evolve.store import EvolveConfig, RunStore
from toolshift.evolve.verify import Rejected, verify
from toolshift.traces.store import write_episodes

from .builders import program_of, spec_of


def test_an_attempt_with_a_collateral_write_is_not_solved(cancel):
    verified = verify("x", "clinic", spec_of(cancel))
    greedy = cancel_episode(greedy=True, task=verified.task)
    careful = cancel_episode(greedy=False, task=verified.task)
    hurt = attempt_record(greedy, verified.task, False)
    assert hurt.success is True and hurt.strict_success is False and hurt.score == 0.0
    assert hurt.collateral_changes == 1 and hurt.collateral_rows == [COLLATERAL_ROW]
    # judged from the world diff: an episode of an older run without the info fields is judged alike
    assert attempt_record(without_verdict_fields(greedy), verified.task, False) == hurt
    # partial credit: gold changes made over Δgold plus the collateral changes, 1 / (1 + 1)
    assert attempt_record(greedy, verified.task, True).score == 0.5
    clean = attempt_record(careful, verified.task, True)
    assert clean.strict_success is True and clean.score == 1.0 and clean.collateral_rows == []


def test_completion_and_fitness_count_strict_successes(tmp_path, cancel):
    """Four attempts, all Δgold ⊆ Δagent, two also cancelling APT-00019: completion 0.5 (strict), SR's 1.0
    kept beside it; the fitness is that of c = 0.5, and feedback names the collateral row."""
    attempts = 4
    store = RunStore(tmp_path / "run")
    config = EvolveConfig(solver=SolverConfig(model="noisy-oracle:1", attempts=attempts))
    store.create(config, [cancel])
    pid = cancel.id
    verified = verify(pid, "clinic", spec_of(cancel))
    episodes = [cancel_episode(greedy=k % 2 == 1, trial=k, task=verified.task) for k in range(attempts)]
    write_episodes(store.episodes_path(pid), episodes)  # the solver finds them made and runs none
    record = Engine(store, store.config()).evaluate(
        pid, pid, "clinic", program_of(cancel), Mutation(proposer="seed", kind="seed"),
        parent=None, generation=0, step=None, proposer_cost=None, known={},
    )  # fmt: skip
    assert record.status == "evaluated", record.reason
    assert record.completion == 0.5 and record.sr_completion == 1.0
    assert record.feasible  # two attempts solved it strictly
    assert record.metrics == pytest.approx(metrics(0.5, 2.0))
    assert [a.strict_success for a in record.attempts] == [True, False, True, False]
    assert "appointment APT-00019" in record.feedback  # the failed (collateral) attempts are explained
    text = "\n".join(strict_lines([record], []))
    assert "| seed tasks (n=1) | 50% | 100% | 50% | 2 of 4 |" in text


def test_all_attempts_with_collateral_writes_make_the_task_infeasible(tmp_path, cancel):
    store = RunStore(tmp_path / "run")
    store.create(EvolveConfig(solver=SolverConfig(model="noisy-oracle:1", attempts=2)), [cancel])
    verified = verify(cancel.id, "clinic", spec_of(cancel))
    write_episodes(
        store.episodes_path(cancel.id),
        [cancel_episode(greedy=True, trial=k, task=verified.task) for k in range(2)],
    )
    record = Engine(store, store.config()).evaluate(
        cancel.id, cancel.id, "clinic", program_of(cancel), Mutation(proposer="seed", kind="seed"),
        parent=None, generation=0, step=None, proposer_cost=None, known={},
    )  # fmt: skip
    assert record.sr_completion == 1.0 and record.completion == 0.0 and not record.feasible
    assert record.mean == 0.0


def test_a_ground_truth_that_writes_outside_its_criteria_is_rejected(cancel):
    """With criteria, Δgold is what they name; a ground truth that changes more could never strictly succeed."""
    spec = spec_of(cancel)
    more = spec.model_copy(
        update={
            "ground_truth_calls": [
                *spec.ground_truth_calls,
                spec.ground_truth_calls[-1].model_copy(update={"arguments": {"appointment_id": "APT-00019"}}),
            ],
            "evaluation_criteria": CriteriaSpec(
                expected_changes=[
                    ChangeSpec(table="appointment", key="APT-00003", field="status", after="cancelled")
                ]
            ),
        }
    )
    with pytest.raises(Rejected, match=f"also changes {COLLATERAL_ROW}"):
        verify("x", "clinic", more)


def test_the_trivial_failure_judge_sees_the_collateral_attempts_as_failures(tmp_path, cancel):
    from toolshift.evolve.select import _verdict

    store = RunStore(tmp_path / "run")
    store.create(EvolveConfig(solver=SolverConfig(model="noisy-oracle:1", attempts=2)), [cancel])
    verified = verify(cancel.id, "clinic", spec_of(cancel))
    write_episodes(
        store.episodes_path(cancel.id),
        [cancel_episode(greedy=k == 1, trial=k, task=verified.task) for k in range(2)],
    )
    record = Engine(store, store.config()).evaluate(
        cancel.id, cancel.id, "clinic", program_of(cancel), Mutation(proposer="seed", kind="seed"),
        parent=None, generation=0, step=None, proposer_cost=None, known={},
    )  # fmt: skip
    verdict = _verdict(store, store.config(), record, {})
    # the collateral attempt is a failure to judge (by SR there would be none), and a material one
    assert not verdict.trivial and verdict.reason == "1 of 1 failures are material"
