"""What the evolved ecosystem must be for its metrics to mean what the seed's do, on a small real build.

Catalog size stays within its band by retiring, nothing is created and retired unseen inside one
version, every reference path is callable from the task's facts and earlier results, and a cost is
a property of an implementation: fixed while it is unchanged, different across implementations, and
sometimes making the cost-optimal path differ from the step-optimal one.
"""

from __future__ import annotations

import contextlib
import json
import math
import re

import pytest

from toolshift.bench.build import build_domain, write_manifest
from toolshift.bench.ecosystem.evolve import EvolveConfig
from toolshift.bench.ecosystem.knowledge import TaskKnowledge
from toolshift.bench.ecosystem.paths import compute_references, usable_for
from toolshift.bench.ecosystem.pipeline import evolve_build
from toolshift.bench.ecosystem.store import domain_tasks, load_history, version_world
from toolshift.bench.reference import Implementation

DOMAINS = ["procurement", "it_assets", "payroll"]
VERSIONS = 4

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    out = tmp_path_factory.mktemp("validity")
    for name in DOMAINS:
        build_domain(out, name, seed=0, per_domain=16)
    write_manifest(out, DOMAINS, 0, 16)
    # Evolution seed 2: the cost and step criteria part only where a task uses a merge of two writes,
    # and on a build this small seed 1 happens to draw none (0 of 192 instances differ; seed 2: 15).
    eco = evolve_build(out, EvolveConfig(versions=VERSIONS, seed=2))
    header, records = compute_references(out)
    return out, eco, header, records


def _histories(out):
    return {d: load_history(out, d) for d in DOMAINS}


def test_tools_per_version_stay_within_the_band_by_retiring(build):
    out, eco, *_ = build
    for name, h in _histories(out).items():
        n1 = len(h.versions[0].tools)
        for entry in h.versions[1:]:
            assert math.ceil(0.9 * n1) <= len(entry.tools) <= n1, (name, entry.version, len(entry.tools), n1)
    later = eco.stats[1:]
    assert all(s.retired > 0 and s.added > 0 for s in later)
    assert max(s.tools for s in later) <= eco.stats[0].tools  # the catalog does not grow


def test_nothing_is_created_and_retired_inside_one_version(build):
    """Every transformation of version v acts on an implementation v−1 had, so each accepted merge is
    still there when the version is published: no merge is counted that no agent could see."""
    out, *_ = build
    for name, h in _histories(out).items():
        for prev, cur in zip(h.versions, h.versions[1:], strict=False):
            had = {i.id for i in prev.impls}
            now = {i.id for i in cur.impls}
            for rec in cur.records:
                assert set(rec.sources) <= had, (name, rec.id, rec.sources)
                if rec.new_impl:
                    assert rec.new_impl in now, (name, rec.id)


def _leaves(value, out):
    if isinstance(value, dict):
        for v in value.values():
            _leaves(v, out)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out)
    elif value is not None:
        out.add(value)
    return out


def _as_known(values):
    """Facts and results as values an agent can quote: strings also read as numbers, yes/no as flags and
    words as the enum value they say."""
    known = set()
    for v in values:
        if isinstance(v, bool):
            known.add(("b", v))
        elif isinstance(v, int | float):
            known.add(("n", float(v)))
        else:
            text = str(v)
            known.add(("s", text))
            with contextlib.suppress(ValueError):
                known.add(("n", float(text)))
            if text.lower() in ("yes", "no"):
                known.add(("b", text.lower() == "yes"))
            if re.fullmatch(r"[a-z]+( [a-z0-9]+)+", text):  # an enum value as people say it
                known.add(("s", text.replace(" ", "_")))
    return known


def _needed(value):
    if isinstance(value, bool):
        return ("b", value)
    if isinstance(value, int | float):
        return ("n", float(value))
    return ("s", str(value))


def test_every_argument_of_every_reference_call_is_a_fact_or_an_earlier_result(build):
    """Replayed independently of the reference code: a path an agent cannot take is no reference."""
    out, _, header, records = build
    assert header.valid == header.instances, [r.step.replay_error for r in records if not r.valid][:3]
    tasks = {t.id: t for d in DOMAINS for t in domain_tasks(out, d)}
    paging = {"limit", "offset", "page_size", "skip"}
    merge_paths = 0
    for (domain, version), group in _by_world(records).items():
        world, cat = version_world(out, domain, version)
        fresh = world.snapshot()
        for r in group:
            task = tasks[r.task_id]
            for path in (r.step, r.cost):
                merge_paths += any(cat.impls[i].kind == "merge" for i in path.impls)
                world.restore(fresh)
                known = _as_known(task.instruction.facts.values())
                for k, (name, args) in enumerate(path.calls):
                    flat = {}
                    for key, value in args.items():
                        if isinstance(value, dict):  # a merged call: one argument object per step
                            flat.update({f"{key}.{a}": v for a, v in value.items()})
                        else:
                            flat[key] = value
                    for key, value in flat.items():
                        if key.rsplit(".", 1)[-1] in paging:
                            continue  # the agent's own page size and position
                        for leaf in _leaves(value, set()):
                            assert _needed(leaf) in known, (r.task_id, version, k, name, key, leaf)
                    result = world.call(name, args)
                    assert result.ok, (r.task_id, version, name, result.error)
                    known |= _as_known(_leaves(result.result, set()))
        world.close()
    assert merge_paths > 0  # merges are used where they can be: the check above is not vacuous


def _by_world(records):
    out = {}
    for r in records:
        out.setdefault((r.domain, r.version), []).append(r)
    return out


def test_an_unchanged_tool_keeps_its_cost_and_a_renamed_one_its_sources(build):
    out, *_ = build
    renamed = 0
    for name, h in _histories(out).items():
        for prev, cur in zip(h.versions, h.versions[1:], strict=False):
            for tool in set(prev.tools) & set(cur.tools):
                assert cur.costs[tool] == prev.costs[tool], (name, cur.version, tool)
            for rec in cur.records:
                if rec.kind == "rename_tool":
                    src_tool = next(i.tools[0] for i in prev.impls if i.id == rec.sources[0])
                    assert cur.costs[rec.new_tools[0]] == prev.costs[src_tool], (name, rec.id)
                    renamed += 1
    assert renamed > 0


def test_costs_are_one_to_ten_scores_that_differ_between_implementations(build):
    out, *_ = build
    scores = [c for h in _histories(out).values() for e in h.versions for c in e.costs.values()]
    assert all(c == int(c) and 1 <= c <= 10 for c in scores)
    assert len(set(scores)) >= 4


def test_the_cost_criterion_sometimes_prefers_another_path(build):
    *_, records = build
    differ = [r for r in records if r.valid and r.step.impls != r.cost.impls]
    assert differ, "the step- and cost-optimal paths never differ"
    for r in differ:
        assert r.step.steps < r.cost.steps and r.cost.cost < r.step.cost


def test_references_file_names_its_counts(build):
    out, _, header, _ = build
    first = json.loads((out / "ecosystem" / "references.jsonl").read_text().splitlines()[0])
    assert first["instances"] == header.instances and first["not_callable"] == 0


def test_a_merge_stays_unusable_where_it_was_after_it_is_renamed_or_reformatted(build):
    """A renamed, re-parameterised or reformatted merge has that transformation's kind, yet still takes
    every step's arguments up front: the DP may use it only where the merge itself is usable."""
    out, *_ = build
    blocked = []
    for task in (t for d in DOMAINS for t in domain_tasks(out, d)):
        knowledge = TaskKnowledge(task)
        blocked += [
            (task, i) for i in range(len(task.base_functions) - 1) if not knowledge.block_usable(i, i + 2)
        ]
    assert blocked  # a lookup whose id the next call needs
    for task, i in blocked[:20]:
        usable = usable_for(task)
        covers = tuple(task.base_functions[i : i + 2])
        for kind in ("merge", "rename_tool", "add_param", "format"):
            assert not usable(Implementation(f"m@{kind}", covers, ("m",), 1.0, kind), i), (task.id, kind)
        assert usable(Implementation("one", covers[:1], ("one",), 1.0, "rename_tool"), i)
