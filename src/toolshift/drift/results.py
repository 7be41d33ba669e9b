"""The real-drift experiment's figures: SR and strict SR per version and row, supply, churn, maintenance, breakages.

Rates are means over the tasks a row ran on a version, each with a 95% percentile bootstrap interval over those
tasks (`toolshift.intervals`); "all" pools every version's instances and resamples whole tasks. An episode the
harness could not judge (`success` null: the server did not start, the sandbox could not be read) counts as a
failure and is counted apart. Results file: `toolshift.drift-results/1` (docs/formats.md).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from toolshift.drift.changes import SEED_CLASS, transitions
from toolshift.drift.experiment import KINDS, ServerRun, model_path, tool_set_stations
from toolshift.drift.history import History
from toolshift.intervals import bootstrap_mean
from toolshift.traces.episode import Episode

RESULTS_FORMAT = "toolshift.drift-results/1"
SEED_TABLE3_V2 = {"added": 110, "retired": 161, "modified": 176}
"""The seed's Table 3 as its text quotes it (v1 → v2 of ∆τ-Bench); the rest of the table is not in the seed."""


def _short(ep: Episode, reference: dict[tuple[str, str], set[str]]) -> str:
    """Why an instrument episode that ran to its end missed Δgold, against the version's reference path: the
    reference tools it never called, else the values it wrote."""
    called = {c.name for m in ep.messages for c in (m.tool_calls or []) if c.requestor == "assistant"}
    version = ep.id.rsplit(":", 1)[-1]
    missed = sorted(reference.get((ep.task_id, version), set()) - called)
    if missed:
        return "ran to the end without " + ", ".join(missed)
    return "called every tool of the reference path; other values written"


def _episodes(path: Path) -> dict[str, Episode]:
    from toolshift.traces.store import iter_episodes

    return {e.id: e for e in iter_episodes(path)} if path.exists() else {}


def rate_row(
    episodes: dict[str, Episode], prefix: str, cases: dict[str, list[str]], resamples: int
) -> dict[str, Any]:
    """Per version (and "all"): SR and strict SR over the tasks `cases[version]` names, from `prefix:<task>:<v>`."""
    out: dict[str, Any] = {}
    pooled: dict[str, list[Any]] = {"sr": [], "strict": [], "groups": []}
    for version, tasks in cases.items():
        sr, strict, unjudged, missing = [], [], 0, 0
        for task in tasks:
            ep = episodes.get(f"{prefix}:{task}:{version}")
            if ep is None:
                missing += 1
                continue
            ok = bool(ep.outcome and ep.outcome.success)
            unjudged += ep.outcome is None or ep.outcome.success is None
            sr.append(float(ok))
            strict.append(float(ok and bool((ep.outcome.info or {}).get("strict_success"))))
            pooled["groups"].append(task)
        pooled["sr"] += sr
        pooled["strict"] += strict
        out[version] = {
            "sr": bootstrap_mean(sr, resamples=resamples).as_dict(),
            "strict": bootstrap_mean(strict, resamples=resamples).as_dict(),
            "unjudged": unjudged,
            "missing": missing,
        }
    out["all"] = {
        "sr": bootstrap_mean(pooled["sr"], groups=pooled["groups"], resamples=resamples).as_dict(),
        "strict": bootstrap_mean(pooled["strict"], groups=pooled["groups"], resamples=resamples).as_dict(),
    }
    return out


def supply_row(
    episodes: dict[str, Episode],
    prefix: str,
    cases: dict[str, list[str]],
    reference: dict[tuple[str, str], set[str]],
) -> dict[str, Any]:
    """Per version: mean precision, recall and F1 of the tools the supply exposed against the reference path's."""
    out: dict[str, Any] = {}
    for version, tasks in cases.items():
        p, r, f = [], [], []
        for task in tasks:
            ep = episodes.get(f"{prefix}:{task}:{version}")
            if ep is None:
                continue
            got, want = set(ep.source.get("supplied") or []), reference[(task, version)]
            hit = len(got & want)
            prec = hit / len(got) if got else 0.0
            rec = hit / len(want) if want else 0.0
            p.append(prec)
            r.append(rec)
            f.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
        n = len(p)
        out[version] = {"p": sum(p) / n, "r": sum(r) / n, "f1": sum(f) / n, "n": n} if n else {"n": 0}
    return out


def server_results(sr: ServerRun, models: list[str], resamples: int) -> dict[str, Any]:
    suite = sr.suite
    ok_all = {v: [t.id for t in sr.ok(v)] for v in suite.stations}
    ok_test = {v: [t.id for t in sr.ok(v, "test")] for v in suite.stations}
    reference = {(c.task, c.version): set(c.tools) for c in suite.cases}
    rows: dict[str, Any] = {
        "oracle": rate_row(
            _episodes(sr.run / "oracle" / f"{sr.server}.episodes.jsonl"), "oracle", ok_all, resamples
        )
    }
    supply: dict[str, Any] = {}
    failures: dict[str, list[Any]] = {}
    template = {t.task.id: t.template for t in suite.tasks}
    for kind in KINDS:
        eps = _episodes(sr.run / "follow" / f"{sr.server}-{kind}.episodes.jsonl")
        rows[f"steward-{kind}"] = rate_row(eps, f"steward-{kind}", ok_test, resamples)
        supply[f"steward-{kind}"] = supply_row(eps, f"steward-{kind}", ok_test, reference)
        lost = Counter(
            (template[e.task_id], str(e.source.get("failure") or _short(e, reference))[:120])
            for e in eps.values()
            if not (e.outcome and e.outcome.success)
        )
        failures[f"steward-{kind}"] = [[t, why, n] for (t, why), n in lost.most_common()]
    model_cases = {v: ok_test[v] for v in tool_set_stations(sr)}
    for model in models:
        eps = _episodes(model_path(sr.run, sr.server, model))
        rows[model] = rate_row(eps, model, model_cases, resamples)
    cases = Counter((c.version, c.status) for c in suite.cases)
    paths: dict[str, dict[str, str]] = {}
    for t in suite.tasks:
        if t.template in paths:
            continue
        paths[t.template] = {
            c.version: " → ".join(c.tools) if c.status == "ok" else c.status
            for c in suite.cases
            if c.task == t.task.id
        }
    return {
        "paths": paths,
        "stations": suite.stations,
        "model_stations": list(model_cases),
        "tasks": {
            "total": len(suite.tasks),
            "train": sum(t.task.split == "train" for t in suite.tasks),
            "test": sum(t.task.split == "test" for t in suite.tasks),
            "templates": len({t.template for t in suite.tasks}),
        },
        "cases": {
            v: {s: cases[(v, s)] for s in ("ok", "absent", "fails", "differs")} for v in suite.stations
        },
        "not_ok": [c.model_dump() for c in suite.cases if c.status != "ok"],
        "rows": rows,
        "supply": supply,
        "failures": failures,
    }


def churn(history: History) -> dict[str, Any]:
    """Per server and transition: tools before and after, added, retired, modified, and the change classes."""
    out: dict[str, Any] = {}
    for key, hist in history.servers.items():
        out[key] = []
        for t in transitions(key, hist.versions):
            out[key].append({
                "before": t.before, "after": t.after, "tools_before": t.tools_before, "tools_after": t.tools_after,
                "added": len(t.added), "retired": len(t.retired), "modified": len(t.modified),
                "interface_modified": len(t.schema_modified), "classes": dict(sorted(t.counts().items())),
                "events": [list(e) for e in t.events], "confirm": t.confirm,
            })  # fmt: skip
    return out


def seed_coverage(churned: dict[str, Any]) -> dict[str, Any]:
    """Real change classes with their counts, the seed's transformation each corresponds to, and the seed's
    transformations real drift never makes."""
    counts: Counter[str] = Counter()
    for rows in churned.values():
        for row in rows:
            counts.update(row["classes"])
    seed = sorted(set(SEED_CLASS.values()))
    exercised = sorted({SEED_CLASS[k] for k in counts if k in SEED_CLASS})
    return {
        "classes": dict(sorted(counts.items())),
        "seed_class": {k: SEED_CLASS.get(k) for k in sorted(counts)},
        "seed_exercised": exercised,
        "seed_never": [s for s in seed if s not in exercised],
        "real_only": sorted(k for k in counts if k not in SEED_CLASS),
    }


def synthetic(build: Path | None) -> dict[str, Any] | None:
    """The synthetic ecosystem's per-version churn, from a bench build (None without one)."""
    if build is None:
        return None
    from toolshift.bench.ecosystem.store import load_ecosystem

    eco = load_ecosystem(build)
    return {
        "id": eco.id,
        "build": eco.build,
        "versions": [
            {
                "version": s.version,
                "tools": s.tools,
                "added": s.added,
                "retired": s.retired,
                "modified": s.modified,
            }
            for s in eco.stats
        ],
    }
