"""docs/results/real-drift.md from a results file: catalog history, kinds of change, tasks, SR per version, Steward."""

from __future__ import annotations

from typing import Any

from toolshift.drift.results import SEED_TABLE3_V2
from toolshift.intervals import Interval


def _cell(d: dict[str, Any] | None) -> str:
    if not d or not d.get("n"):
        return "–"
    return f"{Interval(**d).percent()} (n={d['n']})"


def _pct(part: float, whole: float) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "–"


def history_section(res: dict[str, Any]) -> list[str]:
    lines = ["## 1. Catalog histories", ""]
    lines += [
        "Every published version, installed in isolation and listed over MCP with the official `mcp` SDK client. "
        "`tools`: tools listed; per transition from the version above, tool names added, retired, and modified in "
        "place (same name, changed description, schema or annotations; `interface` counts those whose input "
        "schema changed in what a call must look like). **Stations** (bold) are the versions where the catalog "
        "changes, and the newest: the versions tasks, Steward and the agent run on (D367).",
        "",
    ]
    for server, rows in res["churn"].items():
        hist = res["history"][server]
        stations = set(res["servers"].get(server, {}).get("stations", []))
        lines += [
            f"### {server} (`{hist['package']}`, {hist['registry']}, {len(hist['versions'])} versions)",
            "",
        ]
        lines += [
            "| version | server says | protocol | tools | added | retired | modified (interface) | changes |"
        ]
        lines += ["|---|---|---|---|---|---|---|---|"]
        by_after = {r["after"]: r for r in rows}
        for v in hist["versions"]:
            name = f"**{v['version']}**" if v["version"] in stations else v["version"]
            if v.get("error"):
                lines.append(f"| {name} | – | – | – | – | – | – | could not list: {v['error'][:120]} |")
                continue
            r = by_after.get(v["version"])
            churn = ("–", "–", "–") if r is None else (
                str(r["added"]), str(r["retired"]), f"{r['modified']} ({r['interface_modified']})"
            )  # fmt: skip
            classes = ", ".join(f"{k} {n}" for k, n in (r or {}).get("classes", {}).items()) or "–"
            said = f"{v.get('server_name', '')} {v.get('server_version', '')}".strip()
            lines.append(
                f"| {name} | {said} | {v.get('protocol', '')} | {len(v['tools'])} | {' | '.join(churn)} | {classes} |"
            )
        lines.append("")
    return lines


def churn_section(res: dict[str, Any]) -> list[str]:
    lines = ["## 2. Churn per transition, beside the synthetic ecosystem's", ""]
    lines += [
        "Real transitions where the catalog changed (identical republishes left out), as counts and as shares "
        "of the tools before the transition; the synthetic ecosystem's per version from its build; the seed's "
        f"Table 3 as its text quotes v1 → v2 (added {SEED_TABLE3_V2['added']}, retired {SEED_TABLE3_V2['retired']}, "
        f"modified {SEED_TABLE3_V2['modified']} of 892 tools at v1 in ∆τ-Bench).",
        "",
        "| ecosystem | transition | tools before → after | added | retired | modified | interface modified |",
        "|---|---|---|---|---|---|---|",
    ]
    for server, rows in res["churn"].items():
        for r in rows:
            if not (r["added"] or r["retired"] or r["modified"]):
                continue
            tb = r["tools_before"]
            lines.append(
                f"| {server} | {r['before']} → {r['after']} | {tb} → {r['tools_after']} | {r['added']} "
                f"({_pct(r['added'], tb)}) | {r['retired']} ({_pct(r['retired'], tb)}) | {r['modified']} "
                f"({_pct(r['modified'], tb)}) | {r['interface_modified']} ({_pct(r['interface_modified'], tb)}) |"
            )
    syn = res.get("synthetic")
    if syn:
        prev = None
        for v in syn["versions"]:
            if prev is not None:
                tb = prev["tools"]
                lines.append(
                    f"| synthetic | v{prev['version']} → v{v['version']} | {tb} → {v['tools']} | "
                    f"{v['added']} ({_pct(v['added'], tb)}) | {v['retired']} ({_pct(v['retired'], tb)}) | "
                    f"{v['modified']} ({_pct(v['modified'], tb)}) | – |"
                )
            prev = v
    s = SEED_TABLE3_V2
    lines.append(
        f"| seed ∆τ-Bench (Table 3) | v1 → v2 | 892 → – | {s['added']} ({_pct(s['added'], 892)}) | {s['retired']} "
        f"({_pct(s['retired'], 892)}) | {s['modified']} ({_pct(s['modified'], 892)}) | – |"
    )
    if syn:
        lines += [
            "",
            f"The synthetic rows: ecosystem `{syn['id']}`, build `{syn['build']}` (docs/results/ecosystem.md).",
        ]
    changed = [
        r for rows in res["churn"].values() for r in rows if r["added"] or r["retired"] or r["modified"]
    ]
    quiet = sum(1 for rows in res["churn"].values() for r in rows) - len(changed)
    lines += ["", f"Real transitions: {len(changed) + quiet}, of which {quiet} changed nothing an agent is shown "
              "(a version republished with the same catalog).", ""]  # fmt: skip
    return lines


def kinds_section(res: dict[str, Any]) -> list[str]:
    cov = res["coverage"]
    lines = ["## 3. Kinds of change, and the seed's transformations", ""]
    lines += [
        "Each change classified from names, schemas and descriptions (D362; behaviour in §4). `seed` names the "
        "seed's transformation (§3.2: rename, add parameter, change format, split, merge, retirement, overlap, noisy "
        "documentation) a class corresponds to.",
        "",
        "| class | count | seed |",
        "|---|---|---|",
    ]
    for k, n in cov["classes"].items():
        lines.append(f"| {k} | {n} | {cov['seed_class'].get(k) or '— (never in the seed)'} |")
    lines += [
        "",
        f"- Seed transformations real drift exercises here: {', '.join(cov['seed_exercised']) or 'none'}.",
        f"- Seed transformations it never makes here: {', '.join(cov['seed_never']) or 'none'}.",
        f"- Real classes the seed never makes: {', '.join(cov['real_only']) or 'none'}.",
        "",
    ]
    confirm = [c for rows in res["churn"].values() for r in rows for c in r["confirm"]]
    lines += ["Decisions a person should confirm (one signal only, or parameters coinciding by name):", ""]
    lines += [f"- {c}" for c in confirm] or ["- none"]
    lines.append("")
    return lines


def tasks_section(res: dict[str, Any]) -> list[str]:
    lines = ["## 4. Tasks on the real servers, judged by state", ""]
    lines += [
        "Tasks are written as people ask, from templates (`toolshift.drift.tasks`); the first instances of each "
        "template train Steward, the rest are test tasks. Each task's gold path replays to exactly its Δgold on a "
        "fresh sandbox of its defining version; every station's own reference path is replayed too. `ok`: exactly "
        "Δgold; `absent`: the version lacks a capability the task needs; `fails`: a call of the path answers with "
        "an error; `differs`: the calls run and make another change. Only `ok` cases are scored.",
        "",
        "| server | templates | tasks (train / test) | station: ok / absent / fails / differs |",
        "|---|---|---|---|",
    ]
    for server, s in res["servers"].items():
        t = s["tasks"]
        per = "; ".join(
            f"{v}: {c['ok']}/{c['absent']}/{c['fails']}/{c['differs']}" for v, c in s["cases"].items()
        )
        lines.append(f"| {server} | {t['templates']} | {t['total']} ({t['train']} / {t['test']}) | {per} |")
    lines += ["", "Reference paths that change across stations (each template's first task; a merge or a successor "
              "found by behaviour shows as a shorter or renamed path):", ""]  # fmt: skip
    for server, s in res["servers"].items():
        for template, by_version in s["paths"].items():
            if len(set(by_version.values())) > 1:
                steps = "; ".join(f"{v}: {p}" for v, p in by_version.items())
                lines.append(f"- {server} `{template}`: {steps}")
    lines += ["", "Cases not scored, by reason:", ""]
    for server, s in res["servers"].items():
        seen: dict[tuple[str, str, str], list[str]] = {}
        for c in s["not_ok"]:
            seen.setdefault((c["version"], c["status"], c["reason"].split(":")[0] if c["status"] == "absent"
                             else c["reason"]), []).append(c["task"])  # fmt: skip
        for (v, status, why), tasks in seen.items():
            lines.append(f"- {server} {v}, {status} ({len(tasks)} tasks): {why[:220]}")
    lines.append("")
    return lines


ROWS = (
    ("oracle", "oracle (reference path, every `ok` case)"),
    ("steward-frozen", "Steward frozen (skill-following instrument)"),
    ("steward-full", "Steward full rebuild (instrument)"),
    ("steward-incremental", "Steward incremental (instrument)"),
)


def rates_section(res: dict[str, Any], models: list[str]) -> list[str]:
    lines = ["## 5. SR and strict SR per version", ""]
    lines += [
        "Percentages with 95% bootstrap intervals over tasks (n = tasks). Instruments and models run the test "
        "tasks that are `ok` on the version; the model runs on the stations where the set of tool names changes "
        "(and the first and newest). Strict: solved and nothing else written.",
        "",
    ]
    names = [*ROWS, *((m, f"{m} model, the version's own tools") for m in models)]
    for server, s in res["servers"].items():
        lines += [f"### {server}", ""]
        head = "| row | " + " | ".join(s["stations"]) + " | all |"
        lines += [head, "|" + "---|" * (len(s["stations"]) + 2)]
        for key, label in names:
            row = s["rows"].get(key)
            if row is None:
                continue
            for metric, tag in (("sr", "SR"), ("strict", "strict SR")):
                cells = [_cell((row.get(v) or {}).get(metric)) for v in s["stations"]]
                lines.append(f"| {label}: {tag} | " + " | ".join(cells) + f" | {_cell(row['all'][metric])} |")
        lines += ["", "The instrument's failed episodes by template and what stopped it (all stations):", ""]
        for key, lost in s.get("failures", {}).items():
            said = "; ".join(f"`{t}` {n}× ({why})" for t, why, n in lost[:6]) or "none"
            lines.append(f"- {key}: {said}")
        lines += [
            "",
            "Supply (the tools Steward's plan exposed against the reference path's): P / R / F1",
            "",
        ]
        lines += [head.replace("| all |", "|"), "|" + "---|" * (len(s["stations"]) + 1)]
        for key, sup in s["supply"].items():
            cells = [
                f"{100 * c['p']:.0f} / {100 * c['r']:.0f} / {100 * c['f1']:.0f}" if c.get("n") else "–"
                for c in (sup.get(v, {}) for v in s["stations"])
            ]
            lines.append(f"| {key} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def steward_section(res: dict[str, Any]) -> list[str]:
    lines = ["## 6. Steward's maintenance per upgrade, and what broke", ""]
    lines += [
        "Incremental: initialised on the first station from its training trajectories (the oracle's episodes of "
        "train tasks), then local edits per station; full: rebuilt from each station's trajectories; frozen: the "
        "incremental library of the first station with a training trajectory, kept unchanged at every station after "
        "it (D370). Edits by kind (`rename`: a tool or argument renamed; `rebind (deprecated)`: moved off a "
        "deprecated tool to its named successor, D365).",
        "",
    ]
    for server, work in res["work"].items():
        lines += [
            f"### {server}",
            "",
            "| station | library | episodes | distilled | edits | by kind | skills (plan / atomic / tool) | active |",
        ]
        lines += ["|---|---|---|---|---|---|---|---|"]
        for v in res["servers"][server]["stations"]:
            for kind in ("incremental", "full"):
                w = work[kind].get(v)
                if w is None:
                    continue
                ops = ", ".join(f"{k} {n}" for k, n in sorted(w["by_op"].items())) or "–"
                sk = w["skills"]
                lines.append(
                    f"| {v} | {kind} | {w['episodes']} | {w['distilled']} | {w['edits']} | {ops} | "
                    f"{sk['planning']} / {sk['atomic']} / {sk['tool']} | {w['active']} |"
                )
        lines += ["", "What each upgrade did to the incremental library's skills:", ""]
        any_break = False
        for v in res["servers"][server]["stations"][1:]:
            for b in work["incremental"].get(v, {}).get("breaks", []):
                any_break = True
                lines.append(f"- {v}: {b['level']} skill `{b['skill']}` {b['action']}: {'; '.join(b['why'])}")
        if not any_break:
            lines.append("- nothing: no upgrade removed, renamed or deprecated a tool a skill calls")
        lines += [
            "",
            "`toolshift steward check` of the frozen library against each later station:",
            "",
        ]
        for v, counts in res["checks"][server].items():
            lines.append(
                f"- {v}: " + (", ".join(f"{k} {n}" for k, n in counts["counts"].items()) or "no skills")
            )
            for why in counts["broken"]:
                lines.append(f"  - broken: {why}")
        lines.append("")
    return lines


def deploy_section(res: dict[str, Any]) -> list[str]:
    dep = res.get("deployment")
    if not dep:
        return []
    lines = ["## 7. In deployment: the gateway picks the upgrades up live", ""]
    lines += [
        f"One gateway (`toolshift gateway serve --command … --watch LOG --watch-library LIB`) in front of the "
        f"{dep['server']} server, upgraded in place station by station (the install its command names moved to "
        "the next version); one client session per station; the gateway never restarted. The watch middleware "
        "logged each new catalog and had Steward check and maintain a copy of the frozen library (D369, D370).",
        "",
        "| catalog version | server says | how seen | tools | check | maintenance edits |",
        "|---|---|---|---|---|---|",
    ]
    for e in dep["versions"]:
        check = ", ".join(f"{k} {n}" for k, n in (e.get("check") or {}).get("counts", {}).items()) or "–"
        m = e.get("maintained")
        edits = "–" if not m else (", ".join(f"{k} {n}" for k, n in sorted(m["by_op"].items())) or "none")
        server = f"{e['server'].get('name')} {e['server'].get('version')}"
        lines.append(
            f"| {e['version']} ({e['station']}) | {server} | {e['how']} | {len(e['tools'])} | {check} | {edits} |"
        )
    lines.append("")
    return lines


def markdown(res: dict[str, Any], command: str) -> str:
    models = res.get("models", [])
    lines = [
        "# Real drift: the reference MCP servers' own histories as an evolving ecosystem",
        "",
        f"Generated by `{command}`.",
        "",
        "Five reference MCP servers as published on npm and PyPI, every version installed in isolation (pinned by "
        "version and registry integrity hash; D360, D361) and read over MCP with the official Python SDK; tasks on "
        "four of them judged by their state (D363); Steward kept in step across their real upgrades (D364–D366).",
        "",
    ]
    for part in (history_section, churn_section, kinds_section, tasks_section):
        lines += part(res)
    lines += rates_section(res, models)
    lines += steward_section(res)
    lines += deploy_section(res)
    return "\n".join(lines).rstrip() + "\n"
