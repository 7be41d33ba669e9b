"""Each rival's core step on a small real build with the embedded model, and the ledger that counts every call."""

from __future__ import annotations

from pathlib import Path

import pytest
from skills_ref import validate

from toolshift.agents.skills import AgentSkill, materialise, read_skills
from toolshift.skillmethods import autoskill, evoskill, skillopt, trace2skill
from toolshift.skillmethods.calls import Field, Ledger, MethodModel
from toolshift.skillmethods.common import Pool, Rollouts, Step, summary
from toolshift.steward.experiment import context, read_episodes, training_episodes

DOMAINS = ["payroll"]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, evolved_build):
    out = evolved_build(tmp_path_factory.mktemp("build"), DOMAINS, 12, 2)
    return context(out, out / "methods")


def step_for(ctx, tmp: Path, spec: str = "embedded") -> Step:
    """A method's step on v1 of the small build: its pool (two training tasks' replayed episodes), no rollouts."""
    eps = read_episodes(training_episodes(ctx, 1, sample=2))
    refs = {r.task_id: r for r in ctx.refs("train", 2) if r.version == 1}
    tools = {"payroll": {n: t.description for n, t in ctx.catalog(1).tools.items()}}
    gold = {t: [n for n, _ in r.step.calls] for t, r in refs.items()}
    pool = Pool(1, sorted(refs), eps, [], ctx.tasks, tools, gold)

    def no_rollouts(jobs):
        raise AssertionError("this step runs no agent episode")

    return Step(MethodModel(spec, Ledger(tmp / "calls.jsonl")), Rollouts(no_rollouts, tmp, "t", 1), pool)


@pytest.mark.slow
def test_evoskill_proposes_and_writes_one_skill_that_skills_ref_validates(ctx, tmp_path):
    step = step_for(ctx, tmp_path)
    ep = step.pool.episodes[0]
    failures = summary(ep, step.pool.tasks[ep.task_id], gold=True)
    skill = evoskill.propose(step, [], failures, [], "r1")
    folder = materialise([skill], tmp_path / "skills")
    assert validate(folder / skill.name) == []  # the reference validator accepts what the generator wrote
    assert read_skills(folder)[0].body.startswith(f"# {skill.name}")
    calls = step.model.ledger.calls
    assert set(calls) == {"propose:r1", "generate:r1"} and all(c.prompt_tokens > 0 for c in calls.values())
    assert calls["propose:r1"].answer["action"] == "create"  # nothing to edit yet: create is the only option


@pytest.mark.slow
def test_autoskill_merges_a_near_duplicate_instead_of_adding_it(ctx, tmp_path):
    step = step_for(ctx, tmp_path)
    meta = {"metadata": {"version": "0.1.0"}}
    old = AgentSkill("run-payroll", "Run payroll for an employee.", "# run-payroll\n\nLook up the employee by id, "
                     "then create the payroll run for the period.\n", {}, meta)  # fmt: skip
    # the same job extracted again from another trajectory, worded otherwise, under another name
    cand = AgentSkill("payroll-run", "Run payroll for an employee", "# payroll-run\n\nFind the employee first; "
                      "then create the payroll run for the pay period.\n", {}, meta)  # fmt: skip
    far = AgentSkill("reset-password", "Reset a user's password", "# reset\n\nCall reset_password.\n", {}, {})
    skills = {old.name: old}
    assert autoskill.apply(step, skills, cand, "dup") == "merge:run-payroll"
    assert set(skills) == {"run-payroll"}  # merged, not added
    assert skills["run-payroll"].front["metadata"]["version"] == "0.1.1"  # its patch version bumped
    assert skills["run-payroll"].body != old.body  # the merge call wrote it
    assert set(step.model.ledger.calls) == {"merge:dup"}
    assert autoskill.similarity(autoskill._text(old), autoskill._text(far)) < autoskill.THRESHOLD
    assert autoskill.apply(step, skills, far, "far") == "add" and "reset-password" in skills  # nothing asked
    assert set(step.model.ledger.calls) == {"merge:dup"}


@pytest.mark.slow
def test_trace2skill_analyst_checks_its_fix_against_the_ground_truth(ctx, tmp_path):
    step = step_for(ctx, tmp_path)
    ep = step.pool.episodes[0]
    task = step.pool.tasks[ep.task_id]
    tools = sorted(step.pool.tools["payroll"])
    text = summary(ep, task, gold=True)
    # A ground truth no fix can match: every attempt is refused, and no lesson is kept.
    lesson, ok = trace2skill.analyse_failure(step, "none", text, tools, [], attempts=2)
    assert not ok and lesson == "" and {"error:none:0", "error:none:1"} <= set(step.model.ledger.calls)
    # The real ground truth: kept only when the analyst's fix is one of the reference path's tools.
    gold = step.pool.gold[ep.task_id]
    lesson, ok = trace2skill.analyse_failure(step, "real", text, tools, gold, attempts=2)
    asked = [c for k, c in step.model.ledger.calls.items() if k.startswith("error:real:")]
    assert ok == any(c.answer["fix_tool"] in gold for c in asked)
    assert ok == (asked[-1].answer["fix_tool"] in gold)  # it stops at the first validated fix
    assert not ok or lesson == asked[-1].answer["lesson"]


def test_skillopt_gate_rejects_an_edit_that_does_not_improve_the_selection_split():
    from skillopt.optimizer.skill import apply_patch

    current = skillopt.SEED
    candidate = apply_patch(
        current, {"edits": [{"op": "append", "target": "", "content": "Ask for the id first."}]}
    )
    assert candidate != current and "Ask for the id first." in candidate  # the package's own update
    assert not skillopt.gate(candidate, 0.25, current, 0.25, 1)  # equal on the selection split: rejected
    assert not skillopt.gate(candidate, 0.20, current, 0.25, 1)
    assert skillopt.gate(candidate, 0.30, current, 0.25, 1)  # strictly better: accepted


def test_the_ledger_answers_a_resumed_call_without_asking_again(tmp_path):
    ledger = Ledger(tmp_path / "calls.jsonl")
    # an endpoint that is never reached: a call made again would fail
    model = MethodModel("openai:none", ledger, base_url="http://127.0.0.1:9/v1")
    fields = {"lesson": Field(limit=20)}
    import hashlib
    import json

    from toolshift.skillmethods.calls import Spent

    digest = hashlib.sha256(json.dumps(["sys", "user", ["lesson"]]).encode()).hexdigest()[:16]
    ledger.add(Spent("x", 1, "analyse", 10, 5, digest, {"lesson": "kept"}))
    again = MethodModel("openai:none", Ledger(tmp_path / "calls.jsonl"), base_url="http://127.0.0.1:9/v1")
    assert again.ask("x", "analyse", "sys", "user", fields) == {"lesson": "kept"}
    assert again.ledger.tokens(1) == {"analyse": 15}
    with (tmp_path / "calls.jsonl").open("a") as fh:
        fh.write('{"id": "torn", "vers')  # a killed run's last line
    assert set(Ledger(tmp_path / "calls.jsonl").calls) == {"x"}
    assert model.ledger is ledger


def test_the_page_scores_rows_pairs_them_with_no_skill_and_reads_maintenance(ctx, tmp_path):
    """The page on two real rows of the small build: the oracle as the No Skill row (every task solved) and the
    frozen-v1 procedure (the v1 path replayed on v2, where the catalog changed), with one version's maintenance."""
    import json as _json

    from toolshift.bench.ecosystem.baselines import run_baseline
    from toolshift.skillmethods.report import write_page
    from toolshift.skillmethods.run import Spec

    run = tmp_path / "run"
    paths = [
        run_baseline(ctx.build, name, run / "model", split="test", setting="domain-tools", command="c")
        for name in ("oracle", "frozen-v1")
    ]
    (run / "methods" / "evoskill").mkdir(parents=True)
    work = {"version": 1, "calls": 3, "call_tokens": {"propose": 1500, "generate": 500}, "rollouts": 2,
            "rollout_tokens": 8000, "skills": 1, "train_tasks": 4}  # fmt: skip
    (run / "methods" / "evoskill" / "v1.json").write_text(_json.dumps(work))
    spec = Spec(str(ctx.build), str(run), "oracle", 3, 4, 2, command="toolshift skills eval …")
    body = write_page(spec, ["no-skill", "evoskill"], paths, tmp_path / "page.md", resamples=50)
    page = (tmp_path / "page.md").read_text()
    frozen = next(a for a in body["scores"] if a.startswith("frozen-v1"))
    oracle = next(a for a in body["scores"] if a.startswith("oracle"))
    for v in ("v1", "v2"):
        diff = body["vs_no_skill"][frozen][v]["mean"]
        assert diff == pytest.approx(
            body["scores"][frozen][v]["SR"]["mean"] - body["scores"][oracle][v]["SR"]["mean"]
        )
    assert (
        body["scores"][oracle]["v1"]["SR"]["mean"] == 1.0 and body["vs_no_skill"][frozen]["v1"]["mean"] == 0.0
    )
    assert body["maintenance"]["evoskill"]["v1"]["k_per_task"] == pytest.approx(10000 / 1000 / 4)
    assert "| EvoSkill | 2.5 | – |" in page and "| No Skill | v1 |" in page
    assert "This run did not finish" in page  # no EvoSkill test episode exists
