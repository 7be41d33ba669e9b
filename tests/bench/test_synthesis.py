"""Task synthesis and builds: every task replays to exactly Δgold, determinism, splits, versions, bad input."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolshift.bench.build import (
    build_domain,
    build_world,
    load_manifest,
    load_tasks,
    read_tasks,
    replay_problems,
    write_manifest,
)
from toolshift.bench.instructions import missing_facts, paraphrase
from toolshift.bench.synthesis import Synthesizer
from toolshift.errors import BadInputError
from toolshift.models import covers
from toolshift.world.state.world import World

DOMAINS = ["customer_support", "payroll", "clinic"]
PER_DOMAIN = 15


def _build(out: Path, seed: int = 0, names: list[str] = DOMAINS, per_domain: int = PER_DOMAIN, force=False):
    reports = [build_domain(out, n, seed=seed, per_domain=per_domain, force=force) for n in names]
    write_manifest(out, names, seed, per_domain)
    return reports


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("bench")
    _build(out)
    return out


def test_build_meets_target_and_layout(built: Path):
    m = load_manifest(built)
    assert [e.name for e in m.domains] == DOMAINS
    for e in m.domains:
        assert e.status == "ok" and e.tasks == PER_DOMAIN
        d = built / "domains" / e.name
        for f in ("spec.yaml", "graph.json", "tasks.jsonl", "report.json"):
            assert (d / f).is_file(), f
    assert m.total_tasks == PER_DOMAIN * len(DOMAINS)


def test_every_task_replays_to_exactly_its_delta(built: Path):
    for name in DOMAINS:
        world = build_world(built, name)
        for task in load_tasks(built, domain=name):
            assert replay_problems(world, task) == [], task.id


def test_delta_is_not_true_initially_and_reads_alone_fail(built: Path):
    for name in DOMAINS:
        world = build_world(built, name)
        base = world.snapshot()
        reads = {t.name for t in world.tools if t.effect == "read"}
        for task in load_tasks(built, domain=name):
            assert task.expected_changes, task.id
            assert not covers([], task.expected_changes)
            world.restore(base)
            for call in task.gold_path:
                if call.tool in reads:
                    assert world.call(call.tool, call.arguments).ok
            assert not covers(world.diff(base), task.expected_changes), task.id
            assert any(call.tool not in reads for call in task.gold_path)


def test_gold_path_records_results_and_base_functions(built: Path):
    for task in load_tasks(built):
        assert task.base_functions == [c.tool for c in task.gold_path]
        assert all(c.function == c.tool for c in task.gold_path)
        assert all(c.result is not None for c in task.gold_path)
        assert task.version >= 1 and task.history and task.history[-1].fingerprint == task.fingerprint()


def test_tasks_are_deterministic_from_the_seed(built: Path, tmp_path: Path):
    _build(tmp_path / "again", names=["customer_support"])
    same = (tmp_path / "again/domains/customer_support/tasks.jsonl").read_bytes()
    assert same == (built / "domains/customer_support/tasks.jsonl").read_bytes()
    _build(tmp_path / "other", seed=7, names=["customer_support"])
    other = read_tasks(tmp_path / "other/domains/customer_support/tasks.jsonl")
    assert [t.gold_path for t in other] != [t.gold_path for t in load_tasks(built, domain="customer_support")]


def test_split_is_75_25_per_domain(built: Path):
    for name in DOMAINS:
        tasks = load_tasks(built, domain=name)
        train = [t for t in tasks if t.split == "train"]
        assert len(train) == round(len(tasks) * 0.75)
        assert len(load_tasks(built, domain=name, split="test")) == len(tasks) - len(train)


def test_manual_never_names_tools_nor_keys_the_agent_must_find(built: Path):
    for name in DOMAINS:
        world = build_world(built, name)
        names = {t.name for t in world.tools}
        prefix = world.domain.spec.tool_prefix
        for task in load_tasks(built, domain=name):
            text = json.dumps(task.instruction.model_dump()) + task.public_request
            for n in names:
                assert n not in text and n.removeprefix(prefix) not in text, (task.id, n)
            facts = set(task.instruction.facts.values())
            assert missing_facts(task.instruction, task.instruction.intent) == [], task.id
            # a key argument the user does not know must appear in an earlier result of the gold path
            for i, call in enumerate(task.gold_path):
                earlier = json.dumps([c.result for c in task.gold_path[:i]], default=str)
                for v in call.arguments.values():
                    if isinstance(v, str) and re.fullmatch(r"[A-Z]{2,5}-\d{2,6}", v) and v not in facts:
                        assert f'"{v}"' in earlier, (task.id, v)
                        assert v not in task.instruction.intent, (task.id, v)


def test_scripted_user_discloses_only_what_its_manual_allows(built: Path):
    from toolshift.agents.users import ScriptedUser

    async def talk(task, questions):
        user = ScriptedUser(task.public_request, task.instruction)
        said = [(await user.opening()).text]
        for q in questions:
            turn = await user.respond(q)
            said.append(turn.text)
            if turn.ends:
                break
        return said

    for task in load_tasks(built)[:30]:
        manual = task.instruction
        allowed = " ".join([manual.intent, *manual.facts.values(), task.public_request]).lower()
        secret = {
            str(v)
            for c in task.gold_path
            for v in c.arguments.values()
            if isinstance(v, str) and v not in manual.facts.values() and v.lower() not in allowed
        }
        questions = [f"Could you tell me the {f}?" for f in manual.facts] + [
            "What is your internal record id?",
            "Which customer number or employee number is it?",
        ]
        said = asyncio.run(talk(task, questions))
        text = " ".join(said)
        assert said[0] == task.public_request
        for s in secret:
            assert s not in text, (task.id, s)
        for value in re.findall(r"\b[A-Z]{2,5}-\d{2,6}\b", text):
            assert value.lower() in allowed, (task.id, value)


def test_rerun_resumes_and_a_changed_task_is_versioned(built: Path, tmp_path: Path):
    out = tmp_path / "b"
    _build(out, names=["payroll"])
    path = out / "domains/payroll/tasks.jsonl"
    before = path.stat().st_mtime_ns
    _build(out, names=["payroll"])
    assert path.stat().st_mtime_ns == before  # marker matched: skipped
    _build(out, seed=3, names=["payroll"])  # same ids, new content
    tasks = read_tasks(path)
    changed = [t for t in tasks if t.version > 1]
    assert changed, "a rebuild with another seed changes tasks"
    for t in changed:
        assert [h.version for h in t.history] == list(range(1, t.version + 1))
        assert t.history[-1].fingerprint == t.fingerprint() != t.history[0].fingerprint
        assert "seed 3" in t.history[-1].reason


SHORT_SPEC = """
format: toolshift.domain/1
name: locked_vault
title: Locked Vault
tool_prefix: lv_
entities:
  - name: box
    key: box_id
    id_format: "BOX-{:03d}"
    rows: 5
    lookup: [label]
    operations: [get, search]
    fields:
      - {name: box_id, type: string}
      - {name: label, type: string, gen: {kind: pattern, format: "Box {n}"}}
      - {name: sealed, type: bool, gen: {kind: const, value: true}}
actions:
  - name: open_box
    description: Open a box that is not sealed.
    effect: write
    params:
      - {name: box_id, type: ref, ref: box}
    preconditions:
      - {check: 'not get("box", args["box_id"])["sealed"]', code: box_sealed, message: The box is sealed.}
    code: |
      update("box", args["box_id"], sealed=True)
      return {"box_id": args["box_id"]}
"""


def test_domain_short_of_target_says_how_many_and_why(tmp_path: Path):
    spec = tmp_path / "locked_vault.yaml"
    spec.write_text(SHORT_SPEC)
    rep = build_domain(tmp_path / "out", str(spec), seed=0, per_domain=5)
    assert rep.status == "failed" and rep.made == 0
    assert "made 0 of 5" in rep.message and "precondition:box_sealed" in rep.message
    assert rep.rejections["precondition:box_sealed"] == rep.attempts


def test_graph_without_a_usable_path_is_reported_by_name(tmp_path: Path):
    spec = tmp_path / "locked_vault.yaml"
    spec.write_text(SHORT_SPEC.replace("lookup: [label]", "lookup: []"))
    rep = build_domain(tmp_path / "out", str(spec), seed=0, per_domain=5)
    assert rep.status == "failed"
    assert "query-type starting point" in rep.message
    with pytest.raises(BadInputError, match="locked_vault"):
        Synthesizer(World.load(str(spec)))


def test_paraphrase_must_keep_every_fact(built: Path):
    task = load_tasks(built, domain="customer_support")[0]
    manual = task.instruction
    kept, reason = paraphrase(manual, lambda text: "Please sort this out: " + text)
    assert reason is None and kept.intent.startswith("Please sort this out")
    first = next(iter(manual.facts.values()))
    dropped, reason = paraphrase(manual, lambda text: text.replace(first, "it"))
    assert dropped == manual and reason and reason.startswith("paraphrase_lost_facts")
    assert missing_facts(manual, manual.intent + " " + " ".join(manual.facts.values())) == []


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(seed=st.integers(min_value=0, max_value=10_000))
def test_any_seed_yields_tasks_that_replay(seed: int):
    world = World.load("it_assets")
    tasks, report = Synthesizer(world, seed=seed).synthesize(6)
    assert len(tasks) == 6, report.to_json()
    fresh = World.load("it_assets")
    for t in tasks:
        assert replay_problems(fresh, t) == [], t.id


def test_cli_build_then_stats(tmp_path: Path):
    from typer.testing import CliRunner

    from toolshift.cli import app

    out = tmp_path / "b"
    runner = CliRunner()
    res = runner.invoke(
        app, ["bench", "build", "--out", str(out), "--domains", "library", "--per-domain", "10"]
    )
    assert res.exit_code == 0, res.output
    assert "10 tasks over 1 domains" in res.output
    md = tmp_path / "stats.md"
    res = runner.invoke(app, ["bench", "stats", str(out), "--markdown", str(md)])
    assert res.exit_code == 0, res.output
    assert (out / "stats.png").read_bytes()[:4] == b"\x89PNG"
    text = md.read_text()
    assert "| library |" in text and "**total (1 domains)**" in text
    res = runner.invoke(app, ["bench", "verify", str(out)])
    assert res.exit_code == 0 and "every task replays" in res.output, res.output
    path = out / "domains/library/tasks.jsonl"
    tasks = read_tasks(path)
    tasks[3].expected_changes = tasks[3].expected_changes[1:]  # a silently edited task
    path.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    res = runner.invoke(app, ["bench", "verify", str(out)])
    assert isinstance(res.exception, BadInputError) and "tasks_digest" in str(res.exception)
    res = runner.invoke(app, ["bench", "build", "--out", str(out), "--domains", "no_such_domain"])
    assert isinstance(res.exception, BadInputError) and "no_such_domain" in str(res.exception)


def test_build_with_a_paraphraser_keeps_only_fact_preserving_rewrites(tmp_path: Path):
    def polite(text: str) -> str:
        return "Could you please help: " + text

    def lossy(text: str) -> str:
        return "Please fix my thing."

    def leaky(text: str) -> str:
        return text + " Use cs_refund_order."

    kept = build_domain(tmp_path / "a", "customer_support", seed=0, per_domain=5, rewrite=polite, model="t")
    assert kept.paraphrase == {"kept": 5} and kept.model == "t"
    assert all(
        t.instruction.intent.startswith("Could you please")
        for t in load_tasks(tmp_path / "a", domain="customer_support")
    )
    refused = build_domain(tmp_path / "b", "customer_support", seed=0, per_domain=5, rewrite=lossy)
    assert refused.paraphrase == {"paraphrase_lost_facts": 5}
    assert all(
        t.instruction.intent.startswith("You want to")
        for t in load_tasks(tmp_path / "b", domain="customer_support")
    )
    named = build_domain(tmp_path / "c", "customer_support", seed=0, per_domain=5, rewrite=leaky)
    assert named.paraphrase == {"paraphrase_names_function": 5}

    def inventive(text: str) -> str:
        return text + " It was promised by 2026-07-31 under ticket TCK-424242."

    invented = build_domain(tmp_path / "d", "customer_support", seed=0, per_domain=5, rewrite=inventive)
    assert invented.paraphrase == {"paraphrase_added_values": 5}


@pytest.mark.slow
def test_paraphrase_with_the_embedded_model_keeps_every_fact(tmp_path: Path):
    """`bench build --model embedded`: the real SmolLM2 rewrites each intent; a rewrite is kept only if
    every fact survives verbatim and it adds no number or code; the template stays otherwise."""
    from toolshift.bench.instructions import added_values, model_rewriter

    rewrite = model_rewriter("embedded", seed=0)
    rep = build_domain(tmp_path / "m", "payroll", seed=0, per_domain=3, rewrite=rewrite, model="embedded")
    assert rep.model == "embedded" and sum(rep.paraphrase.values()) == 3
    assert set(rep.paraphrase) <= {
        "kept", "paraphrase_empty", "paraphrase_lost_facts", "paraphrase_added_values", "paraphrase_names_function"
    }  # fmt: skip
    build_domain(tmp_path / "t", "payroll", seed=0, per_domain=3)  # the same tasks, template intents
    templates = {t.id: t.instruction.intent for t in load_tasks(tmp_path / "t", domain="payroll")}
    for task in load_tasks(tmp_path / "m", domain="payroll"):
        assert missing_facts(task.instruction, task.instruction.intent) == []
        assert added_values(templates[task.id], task.instruction.intent) == []
    kept = sum(t.instruction.intent != templates[t.id] for t in load_tasks(tmp_path / "m", domain="payroll"))
    assert kept == rep.paraphrase.get("kept", 0)


def test_gold_paths_follow_dependency_graph_edges(built: Path):
    from toolshift.bench.graph import DependencyGraph

    for name in DOMAINS:
        graph = DependencyGraph.load(built / "domains" / name / "graph.json")
        params = {n.tool: n.params for n in graph.nodes}
        edges = {(e.source, e.target, e.param) for e in graph.edges}
        for task in load_tasks(built, domain=name):
            facts = set(task.instruction.facts.values())
            for i, call in enumerate(task.gold_path):
                for pname, value in call.arguments.items():
                    if not params[call.tool].get(pname, "").startswith("key:") or value in facts:
                        continue
                    feeders = [
                        c.tool
                        for c in task.gold_path[:i]
                        if f'"{value}"' in json.dumps(c.result, default=str)
                    ]
                    assert any((f, call.tool, pname) in edges for f in feeders), (task.id, call.tool, pname)


def test_build_is_identical_across_processes_and_hash_seeds(built: Path, tmp_path: Path):
    import os
    import subprocess
    import sys

    src = Path(__file__).resolve().parents[2] / "src"
    for hash_seed in ("1", "2"):
        out = tmp_path / hash_seed
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(src)}
        cmd = [sys.executable, "-m", "toolshift", "bench", "build", "--out", str(out)]
        cmd += ["--domains", "customer_support", "--per-domain", str(PER_DOMAIN)]
        subprocess.run(cmd, env=env, check=True, capture_output=True)
        got = (out / "domains/customer_support/tasks.jsonl").read_bytes()
        assert got == (built / "domains/customer_support/tasks.jsonl").read_bytes()


@given(
    st.lists(
        st.tuples(st.sampled_from(["amount", "reason", "order number"]), st.text(min_size=1)), max_size=12
    )
)
def test_add_fact_never_overwrites_a_different_value(pairs):
    from toolshift.bench.drafts import add_fact

    facts: dict[str, str] = {}
    for name, value in pairs:
        key = add_fact(facts, name, value)
        assert facts[key] == value and key.startswith(name)
    assert set(facts.values()) == {v for _, v in pairs}


def test_managed_fields_come_from_action_bodies():
    from toolshift.bench.values import managed_fields
    from toolshift.world.state.registry import load_domain

    managed = managed_fields(load_domain("customer_support").spec)
    assert managed["order"] == {"status"}
    assert {"status", "priority", "assigned_agent_id", "resolution"} <= managed["ticket"]
    assert "email" not in managed.get("customer", set())


def test_instruction_phrasing_helpers():
    from toolshift.bench.instructions import action_request_phrase, attribute_phrase, fact_key, field_words

    assert field_words("order_id") == "order number"
    assert fact_key("order", "order number") == "order number"
    assert fact_key("network alert", "alert number") == "network alert number"
    assert fact_key("customer", "email") == "customer email"
    assert attribute_phrase("placed on", "2026-03-04") == "placed on 2026-03-04"
    assert attribute_phrase("status", "open") == "whose status is open"
    assert action_request_phrase("implement design change", "design change") == "implement a design change"
    assert action_request_phrase("grant store credit", "customer") == "grant store credit"
