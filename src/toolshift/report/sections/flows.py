"""The flows section: per tool catalog, the read-only ceiling, the turns a flow saves, its detours, its calibration.

For each distinct catalog among the inputs (or that a τ²-bench result brought; copies with the same domain
and tools, as every agent run keeps one, make one section), the episodes of its domain are turned into
timelines (`toolshift.flows.timeline`); when a domain has several different catalogs, each reads the episode
files in its copies' folders. The ceiling counts every episode. The replay uses a
flow given for that catalog, on the chosen tasks (`--flow-tasks`, default the held-out test split); with
none, a flow is learned on the training split and replayed on the test split, as `toolshift flows`
does. Both deciders run at θ; every lookup weighed is logged, which gives the reliability diagram.
Decision logs given as inputs (`flows replay --explore 0 --log`) get their own diagram.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from toolshift.errors import BadInputError, ToolshiftError
from toolshift.fileio import is_torn, jsonl_lines, loads_json, open_input
from toolshift.report.inputs import ResultFile
from toolshift.report.page import Section, esc, figure, figure_file, figure_png, pyplot, table
from toolshift.report.sections import Context

ANATOMY_HEADER = [
    "episodes",
    "turns",
    "replies",
    "writes",
    "reads",
    "ceiling",
    "with the user's words",
    "with constants",
    "with both",
]
MAX_EPISODES = 20_000
"""Episodes of one domain a flows section reads at most (the first, in input order), so memory stays bounded."""
REPLAY_HEADER = [
    "decider",
    "episodes",
    "turns",
    "saved",
    "saved % (95% CI)",
    "share of the ceiling (95% CI)",
    "lookups made",
    "used",
    "detours",
    "detours per episode",
]


@dataclass
class CatalogGroup:
    """One flows section: a domain's tools as one or more identical catalog files, and the episodes it reads."""

    catalog: Any
    """The ToolCatalog."""
    wheres: list[str]
    """Where each identical copy came from (a catalog file, or a τ²-bench result's tools)."""
    folders: list[Path]
    """The folders of those copies (their episodes, when the domain has several different catalogs)."""
    distinct: int = 1
    """How many different catalogs of this domain the inputs hold."""

    @property
    def label(self) -> str:
        if len(self.wheres) == 1:
            return self.wheres[0]
        return f"{self.wheres[0]} (and {len(self.wheres) - 1} more with the same tools)"

    def reads(self, source: ResultFile) -> bool:
        """Whether this section reads an episode file: every one of its domain, unless the domain has several
        different catalogs; then those in a copy's folder or below it."""
        if self.distinct == 1:
            return True
        return any(source.path.resolve().is_relative_to(folder) for folder in self.folders)


def _tools_key(catalog: Any) -> str:
    """The catalog's domain and tools (not its free-text source): equal for copies of one catalog."""
    body = json.dumps([t.model_dump(mode="json") for t in catalog.tools], sort_keys=True)
    return f"{catalog.domain}\0{hashlib.sha256(body.encode()).hexdigest()}"


def _catalogs(ctx: Context) -> list[CatalogGroup]:
    """One group per distinct catalog (domain and tools) among the catalog inputs and the τ²-bench results:
    agent runs keep a copy of their world's catalog each, and six copies make one section, not six."""
    from toolshift.traces.catalog import load_catalog

    found = [(str(f.path), f.path.parent.resolve(), f.extra["catalog"]) for f in ctx.inputs.of("catalog")]
    for f in ctx.inputs.of("tau2-results"):
        for domain, path in sorted(f.extra.get("catalogs", {}).items()):
            folder = (f.path if f.path.is_dir() else f.path.parent).resolve()
            found.append((f"{f.path} (τ²-bench's {domain} tools)", folder, load_catalog(path)))
    groups: dict[str, CatalogGroup] = {}
    for where, folder, catalog in found:
        group = groups.setdefault(_tools_key(catalog), CatalogGroup(catalog, [], []))
        group.wheres.append(where)
        group.folders.append(folder)
    per_domain = Counter(g.catalog.domain for g in groups.values())
    for g in groups.values():
        g.distinct = per_domain[g.catalog.domain]
    return list(groups.values())


def _episodes(sources: list[ResultFile], domain: str, problems: list[str]) -> list[Any]:
    episodes: list[Any] = []
    available = sum(
        int(np.count_nonzero(f.index.columns["domain"] == f.index.values["domain"].index(domain)))
        for f in sources
        if f.index is not None and domain in f.index.values["domain"]
    )
    if available > MAX_EPISODES:
        problems.append(f"{domain}: {available} episodes; the flows section reads the first {MAX_EPISODES}")
    for f in sources:
        assert f.index is not None
        if domain not in f.index.values["domain"]:
            continue
        code = f.index.values["domain"].index(domain)
        for row in np.nonzero(f.index.columns["domain"] == code)[0].tolist():
            if len(episodes) >= MAX_EPISODES:
                break
            try:
                episodes.append(f.index.episode(row))
            except BadInputError as exc:
                problems.append(str(exc))
    return episodes


def _pct(x: float) -> str:
    return "–" if x != x else f"{100 * x:.1f}%"


def _ci(iv: Any, digits: int = 1) -> str:
    return "–" if iv.n == 0 or iv.mean != iv.mean else iv.percent(digits)


def _bars(total: Any, results: dict[str, Any], shares: dict[str, Any]) -> bytes:
    plt = pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    names = ["ceiling", *(f"saved ({k})" for k in results)]
    means = [100 * total.share("ceiling"), *(100 * shares[k].mean for k in results)]
    low = [0.0, *(100 * (shares[k].mean - shares[k].low) for k in results)]
    high = [0.0, *(100 * (shares[k].high - shares[k].mean) for k in results)]
    left.bar(names, means, yerr=[low, high], color=["#bbbbbb", "#2a9d8f", "#4c78a8"][: len(names)], capsize=4)
    left.set_ylabel("% of all turns")
    left.set_title("Ceiling and turns saved (95% CI)", fontsize=10)
    detours = [r.detours / len(r.episodes) if r.episodes else 0.0 for r in results.values()]
    right.bar(list(results), detours, color="#e76f51")
    right.set_ylabel("detours per episode")
    right.set_title("Detours (lookups the agent did not use)", fontsize=10)
    fig.tight_layout()
    return figure_png(fig)


def _reliability(series: dict[str, tuple[list[float], list[bool]]], title: str) -> tuple[str, str]:
    """A calibration table and the reliability diagram (toolshift.flows.calibration) as HTML."""
    from toolshift.flows.calibration import calibrate, reliability_diagram

    rows = []
    for name, (scores, used) in sorted(series.items()):
        c = calibrate(scores, used)
        rows.append(
            [
                name,
                c.weighed,
                _pct(c.used_rate),
                f"{c.ece:.3f}",
                f"{c.brier:.3f}",
                "–" if c.auc is None else f"{c.auc:.3f}",
            ]
        )
    with tempfile.TemporaryDirectory() as tmp:
        png = reliability_diagram(series, Path(tmp) / "reliability.png", title)
        fig = figure_file(
            png,
            "Use rate against mean score in ten score bins; the diagonal is perfect calibration",
            "reliability diagram",
        )
    return table(["decider", "weighed", "used", "ECE", "Brier", "AUC"], rows), fig


def _catalog_section(ctx: Context, group: CatalogGroup, number: int) -> Section | None:
    from toolshift.flows.ceiling import anatomy
    from toolshift.flows.decide import Decider
    from toolshift.flows.inputs import select
    from toolshift.flows.learn import learn_flow
    from toolshift.flows.replay import replay
    from toolshift.flows.results import ORDER, split
    from toolshift.flows.statistics import saved_share, share_of_ceiling
    from toolshift.flows.timeline import Catalog

    catalog = Catalog.of(group.catalog)
    where = group.label
    problems: list[str] = []
    sources = [f for f in ctx.inputs.episode_sources() if group.reads(f)]
    episodes = _episodes(sources, catalog.domain, problems)
    if not episodes:
        return None
    ctx.progress(f"flows: {catalog.domain}")
    chosen = select(episodes, catalog, "all", source=where)
    sid, title = f"flows-{number}", _title(group)
    if not chosen.timelines:
        return Section(
            sid, title, f'<p class="note">No episode of {esc(catalog.domain)} is usable.</p>', problems
        )
    total, per_episode = anatomy(chosen.timelines)
    a = [
        total.episodes,
        total.turns,
        *(
            _pct(total.share(n))
            for n in (
                "replies",
                "write_turns",
                "read_turns",
                "ceiling",
                "with_words",
                "with_constants",
                "with_both",
            )
        ),
    ]
    body = [
        f'<p class="note">Catalog {esc(where)}; {len(chosen.timelines)} episodes of {esc(catalog.domain)}'
        f"{_which_episodes(group, sources)}; "
        f"{esc(chosen.unlisted.describe())}.</p>",
        "<h3>Turn anatomy and the read-only ceiling (all episodes)</h3>",
        table(ANATOMY_HEADER, [a], left=0),
    ]
    given = [f for f in ctx.inputs.of("flow") if f.extra["flow"].domain == catalog.domain]
    flow, replayed_on = None, ""
    for f in given:
        try:
            f.extra["flow"].check_catalog(catalog, source=str(f.path))
            flow = f.extra["flow"]
            tasks = ctx.options.flow_tasks
            test = chosen.timelines if tasks == "all" else getattr(split(chosen.timelines), tasks)
            replayed_on = f"flow {f.path}, replayed on the {tasks} tasks ({len(test)} episodes)"
            break
        except BadInputError as exc:
            problems.append(str(exc))
    if flow is None:
        sp = split(chosen.timelines)
        test = sp.test
        if not sp.train or not sp.test:
            body.append(
                '<p class="note">Too few tasks to learn on a training split and replay on the test split; '
                "no replay.</p>"
            )
            return Section(sid, title, "".join(body), problems)
        judged = any(t.success for t in sp.train)  # WorkBench's runs carry no verdict: learn from all
        try:
            flow = learn_flow(sp.train, catalog, learn_from_all=not judged, unlisted=chosen.unlisted)
        except ToolshiftError as exc:
            problems.append(str(exc))
            return Section(sid, title, "".join(body), problems)
        which = "successful training episodes" if judged else "training episodes (none has a verdict, so all)"
        replayed_on = f"a flow learned here from {flow.learned_from.episodes} {which}, replayed on the {len(test)} test episodes"
    if not test:
        body.append('<p class="note">No episode left to replay on.</p>')
        return Section(sid, title, "".join(body), problems)
    ceiling = {e: per_episode[e].ceiling for e in per_episode}
    theta = ctx.options.threshold
    results = {k: replay(test, Decider(flow, k, theta), weigh_all=True) for k in ORDER}
    test_total, _ = anatomy(test)
    shares = {k: saved_share(r) for k, r in results.items()}
    rows = []
    for kind, r in results.items():
        s = r.summary()
        rows.append(
            [
                kind,
                s["episodes"],
                s["turns"],
                s["saved_turns"],
                _ci(shares[kind]),
                _ci(share_of_ceiling(r, ceiling), 0),
                s["lookups_made"],
                s["lookups_used"],
                s["detours"],
                f"{s['detours_per_episode']:.2f}",
            ]
        )
    body += [
        f"<h3>Replay from the record (θ = {theta:g})</h3>",
        f'<p class="note">With {esc(replayed_on)}. A turn is saved when every call in it was answered by an exact '
        "lookup; a lookup the agent did not go on to make is a detour. Intervals: 95% bootstrap over tasks.</p>",
        table(REPLAY_HEADER, rows),
        figure(
            _bars(test_total, results, shares),
            "Read-only ceiling and saved turns of the replayed episodes, detours per episode",
            "flows savings",
        ),
        "<h3>Calibration of lookup scores</h3>",
    ]
    series = {k: ([w.score for w in r.log], [w.used for w in r.log]) for k, r in results.items()}
    if any(s for s, _ in series.values()):
        cal, fig = _reliability(series, f"Reliability of lookup scores: {catalog.domain}")
        body += [cal, fig]
    return Section(sid, title, "".join(body), problems)


def _log_section(log: ResultFile, number: int) -> Section:
    problems: list[str] = []
    series: dict[str, tuple[list[float], list[bool]]] = {}
    try:
        with open_input(log.path, what="decision log") as fh:
            for line in jsonl_lines(fh, source=str(log.path)):
                if line.is_blank() or is_torn(line):
                    continue
                try:
                    row = loads_json(line.data)
                    scores, used = series.setdefault(str(row["decider"]), ([], []))
                    scores.append(float(row["score"]))
                    used.append(bool(row["used"]))
                except BadInputError as exc:
                    problems.append(f"{log.path}: line {line.number}: not a decision log row: {exc.detail}")
                except (ValueError, KeyError, TypeError) as exc:
                    problems.append(f"{log.path}: line {line.number}: not a decision log row: {exc!r}")
                if len(problems) >= 20:
                    break
    except (OSError, BadInputError) as exc:
        problems.append(str(exc) if isinstance(exc, BadInputError) else f"{log.path}: cannot read: {exc}")
    sid, title = f"decisions-{number}", f"Decision log: {log.path.name}"
    if not series:
        return Section(sid, title, '<p class="note">No usable row.</p>', problems)
    cal, fig = _reliability(series, f"Reliability of lookup scores: {log.path.name}")
    n = int(np.sum([len(s) for s, _ in series.values()]))
    return Section(
        sid, title, f'<p class="note">{n} lookups weighed in {esc(log.path)}.</p>{cal}{fig}', problems
    )


def _title(group: CatalogGroup) -> str:
    if group.distinct == 1:
        return f"Flows: {group.catalog.domain}"
    first = Path(group.wheres[0].split(" (τ²-bench's ")[0])
    return f"Flows: {group.catalog.domain} ({first.parent.name}/{first.name})"


def _which_episodes(group: CatalogGroup, sources: list[ResultFile]) -> str:
    if group.distinct == 1:
        return ""
    return (
        f" from the {len(sources)} episode files beside this catalog ({group.distinct} different catalogs of "
        f"{group.catalog.domain} are among the inputs, each read with the runs kept beside it)"
    )


def render(ctx: Context) -> list[Section]:
    out: list[Section] = []
    for k, group in enumerate(_catalogs(ctx), start=1):
        try:
            section = _catalog_section(ctx, group, k)
        except ToolshiftError as exc:
            section = Section(f"flows-{k}", _title(group), "", [str(exc)])
        if section is not None:
            out.append(section)
    out += [_log_section(log, k) for k, log in enumerate(ctx.inputs.of("decision-log"), start=1)]
    return out
