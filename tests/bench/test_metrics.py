"""The metrics' definitions on hand-checked cases, and their invariants on random ones."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from toolshift.bench.metrics import (
    AgentPath,
    InstanceReference,
    agent_path,
    path_efficiency,
    score_instance,
    summarise,
    tool_retrieval,
)
from toolshift.intervals import bootstrap_mean
from toolshift.models import RowChange
from toolshift.traces.episode import Episode, Message, ToolCall

GOLD = [RowChange(table="order", key="O-1", field="status", op="update", before="open", after="closed")]


def ref(version=2, steps=3, cost=3.5, prev_steps=4, prev_cost=3.0, tools=("a", "b", "c")):
    return InstanceReference("t1", version, steps, cost, frozenset(tools), prev_steps, prev_cost)


def test_tool_retrieval():
    assert tool_retrieval({"a", "b", "x", "y"}, {"a", "b"}) == (0.5, 1.0, 2 / 3)
    assert tool_retrieval({"x"}, {"a"}) == (0.0, 0.0, 0.0)


def test_path_efficiency():
    assert path_efficiency(True, 3, 6) == 0.5
    assert path_efficiency(True, 3, 2) == 1.0  # cheaper than reference cannot exceed 1
    assert path_efficiency(False, 3, 3) == 0.0


def test_oracle_scores_one_and_sets_follow_weights():
    r = ref()  # steps fell 4 -> 3 (improved), cost rose 3.0 -> 3.5 (degraded)
    oracle = AgentPath(True, 3, 3.5, frozenset(r.tools))
    s = score_instance(r, oracle)
    assert (s.success, s.precision, s.recall, s.f1, s.step_spe, s.cost_spe) == (True, 1, 1, 1, 1, 1)
    assert s.step_idr == 1.0 and s.step_dar is None
    assert s.cost_dar == 1.0 and s.cost_idr is None


def test_stale_path_misses_the_improvement():
    r = ref()
    stale = AgentPath(True, 4, 4.0, frozenset({"a", "b", "old"}))
    s = score_instance(r, stale)
    assert s.step_idr == 0.0  # solved, but with the previous version's 4 steps
    assert s.step_spe == 0.75
    assert s.cost_dar == 0.0  # 4.0 > the new optimum 3.5
    assert math.isclose(s.cost_spe, 3.5 / 4.0)


def test_v1_has_no_idr_or_dar():
    s = score_instance(ref(version=1, prev_steps=None, prev_cost=None), AgentPath(True, 3, 3.5, frozenset()))
    assert s.step_idr is s.step_dar is s.cost_idr is s.cost_dar is None


def test_agent_path_from_episode():
    ep = Episode(
        id="e",
        task_id="t1",
        domain="d",
        messages=[
            Message(role="user", content="close my order"),
            Message(
                role="assistant",
                tool_calls=[
                    ToolCall(id="1", name="get_order", arguments={"id": "O-1"}),
                    ToolCall(name="think"),
                ],
            ),
            Message(role="tool", tool_call_id="1", name="get_order", content="{}"),
            Message(role="assistant", tool_calls=[ToolCall(name="close_order", arguments={"id": "O-1"})]),
            Message(role="assistant", tool_calls=[ToolCall(name="gone_tool")]),
            Message(role="assistant", tool_calls=[ToolCall(name="end_conversation")]),  # harness, not a step
        ],
        world_diff=GOLD,
    )
    path = agent_path(ep, GOLD, {"get_order": 1.25, "close_order": 2.0})
    assert path.success and path.steps == 3
    assert path.cost == 4.25  # the unknown tool costs one call
    assert path.exposed == {"get_order", "close_order", "gone_tool"}
    assert not agent_path(ep.model_copy(update={"world_diff": []}), GOLD, {}).success


def test_summary_per_version_and_overall():
    scores = [
        score_instance(
            ref(version=v, prev_steps=None if v == 1 else 3), AgentPath(ok, 3, 3.5, frozenset("abc"))
        )
        for v in (1, 2)
        for ok in (True, False)
    ]
    summary = summarise(scores, resamples=200)
    assert summary.by_version[1]["SR"].mean == 0.5
    assert summary.overall["SR"].n == 1  # one task, clustered
    assert summary.by_version[1]["Step-IDR"].n == 0


def test_cluster_bootstrap_counts_groups():
    iv = bootstrap_mean([1, 0, 1, 1], groups=["a", "a", "b", "b"], resamples=500)
    assert iv.n == 2 and iv.low <= iv.mean <= iv.high


runs = st.builds(
    AgentPath,
    st.booleans(),
    st.integers(0, 12),
    st.integers(0, 2000).map(lambda c: c / 100),
    st.frozensets(st.sampled_from("abcdef")),
)
refs = st.builds(
    InstanceReference,
    st.just("t"),
    st.integers(1, 6),
    st.integers(1, 10),
    st.integers(100, 2000).map(lambda c: c / 100),
    st.frozensets(st.sampled_from("abcdef"), min_size=1),
    st.one_of(st.none(), st.integers(1, 10)),
    st.one_of(st.none(), st.integers(100, 2000).map(lambda c: c / 100)),
)


@given(r=refs, run=runs)
def test_scores_are_rates_and_failure_scores_zero(r, run):
    s = score_instance(r, run)
    for metric in ("P", "R", "F1", "Step-SPE", "Cost-SPE", "Step-IDR", "Step-DAR", "Cost-IDR", "Cost-DAR"):
        v = s.value(metric)
        assert v is None or 0.0 <= v <= 1.0
    if not run.success:
        assert s.step_spe == s.cost_spe == 0.0
        assert not s.step_idr and not s.step_dar


@given(r=refs)
def test_following_the_reference_scores_full_marks(r):
    oracle = AgentPath(True, r.steps, r.cost, r.tools)
    s = score_instance(r, oracle)
    assert s.step_spe == s.cost_spe == s.f1 == 1.0
    assert s.step_idr in (None, 1.0) and s.step_dar in (None, 1.0)
    assert s.cost_idr in (None, 1.0) and s.cost_dar in (None, 1.0)


def test_an_agent_that_also_cancels_another_appointment_passes_sr_not_strict_sr():
    """On the real clinic world: the task done and one more appointment cancelled. SR 1, Strict-SR 0, the
    collateral row named; judged from world_diff, so an episode recorded without the info fields scores alike."""
    from collateral import COLLATERAL_ROW, cancel_episode, cancel_task, without_verdict_fields

    task = cancel_task()
    costs = {"get_appointment": 1.0, "cancel_appointment": 2.0}
    greedy = without_verdict_fields(cancel_episode(greedy=True))
    careful = cancel_episode(greedy=False)
    hurt = agent_path(greedy, task.expected_changes, costs)
    clean = agent_path(careful, task.expected_changes, costs)
    assert hurt.success and not hurt.strict_success
    assert hurt.collateral_changes == 1 and hurt.collateral_rows == (COLLATERAL_ROW,)
    assert clean.success and clean.strict_success and clean.collateral_rows == ()
    r = ref(version=1, prev_steps=None, prev_cost=None)
    scores = [score_instance(r, hurt), score_instance(r.__class__("t2", 1, 3, 3.5, r.tools), clean)]
    assert scores[0].collateral_rows == (COLLATERAL_ROW,)
    summary = summarise(scores, resamples=200).by_version[1]
    assert summary["SR"].mean == 1.0
    assert summary["Strict-SR"].mean == 0.5
    assert summary["SR-collateral"].mean == 0.5 and summary["SR-collateral"].n == 2
    assert summary["Collateral"].mean == 0.5
    assert summary["Collateral"].number() == "0.50 [0.00, 1.00]"


def test_strict_sr_never_exceeds_sr_and_a_failure_is_never_strict():
    r = ref(version=1, prev_steps=None, prev_cost=None)
    for ok in (True, False):
        for extra in (0, 2):
            s = score_instance(r, AgentPath(ok, 3, 3.5, frozenset(), extra, ("x/1",) if extra else ()))
            assert s.value("Strict-SR") == float(ok and not extra)
            assert s.value("SR-collateral") == (float(extra > 0) if ok else None)
            assert s.value("Collateral") == extra
