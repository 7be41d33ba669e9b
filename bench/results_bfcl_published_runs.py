"""Published BFCL v4 multi-turn result files of other people's models: converted, re-judged, learned across models.

The runs are gpt-oss-120b and gpt-oss-20b served by vLLM, published in github.com/bbrowning/bfcl-vllm-results
(result and score files written by BFCL itself; long-context files are not in the snapshot read here). For
every multi-turn result file: records, episodes kept, BFCL `Error during inference` entries (the only records
the converter leaves out) and malformed calls kept (arguments that are not JSON, gpt-oss's Harmony tokens).
Where BFCL's score file is beside it, every converted episode is re-judged with `judge_task` and set beside
BFCL's own verdict (an entry is correct unless the score file lists it). Then a flow is learned on one
model's converted run and replayed on the other's, each with its own catalog (D121).

Run: `git clone https://github.com/bbrowning/bfcl-vllm-results /tmp/bfcl-vllm-results` (or any checkout), then
`.venv/bin/python bench/results_bfcl_published_runs.py /tmp/bfcl-vllm-results` → docs/results/bfcl-published-runs.md
(needs bfcl-eval: `make extras`).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from toolshift.agents.external_judge import transcript
from toolshift.fileio import write_text_atomic
from toolshift.flows.decide import DECIDERS, Decider
from toolshift.flows.learn import learn_flow
from toolshift.flows.replay import replay
from toolshift.flows.timeline import Catalog, timelines
from toolshift.traces.bfcl import convert_bfcl
from toolshift.traces.conversion import Conversion
from toolshift.world.external import export_tasks, judge_task

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "docs" / "results" / "bfcl-published-runs.md"
CROSS = ("2025-11-12-main", "openai_gpt-oss-120b", "openai_gpt-oss-20b")
"""Learn on the first model's run of that date, replay on the second's."""


def _commit(root: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    return done.stdout.strip() or "unknown"


def _score(path: Path) -> tuple[int, set[str]] | None:
    if not path.is_file():
        return None
    lines = path.read_text(encoding="utf-8").splitlines()
    return json.loads(lines[0])["correct_count"], {json.loads(line)["id"] for line in lines[1:]}


def _model_runs(root: Path) -> dict[tuple[str, str], Conversion]:
    runs: dict[tuple[str, str], Conversion] = {}
    for result in sorted(root.glob("results/*/result/*/multi_turn")):
        conv = Conversion(converter="bfcl")
        for path in sorted(result.glob("BFCL_v4_multi_turn_*_result.json")):
            conv.extend(convert_bfcl(path))
        conv.note_unknown_tools()
        runs[(result.parent.parent.parent.name, result.parent.name)] = conv
    return runs


def main(root: Path) -> str:
    started = time.perf_counter()
    tasks = {t.id: t for t in export_tasks("bfcl", subsets=["base", "miss_func", "miss_param"]).tasks}
    rows = ["| run | model | category | records | kept | BFCL inference errors (left out) | malformed calls kept | "
            "BFCL correct | re-judged correct | verdicts agreeing |", "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    totals = {"records": 0, "kept": 0, "errors": 0, "malformed": 0, "judged": 0, "agree": 0}
    for path in sorted(root.glob("results/*/result/*/multi_turn/BFCL_v4_multi_turn_*_result.json")):
        run, model = path.parts[-5], path.parts[-3]
        category = path.name.removeprefix("BFCL_v4_multi_turn_").removesuffix("_result.json")
        conv = convert_bfcl(path)
        errors = sum(conv.skipped.values())
        score = _score(
            root / "results" / run / "score" / model / "multi_turn" / path.name.replace("_result", "_score")
        )
        judged = agree = correct = 0
        if score is not None:
            for episode in conv.episodes:
                ours = bool(judge_task(tasks[episode.task_id], transcript(episode.messages))["success"])
                judged += 1
                correct += ours
                agree += ours == (episode.task_id not in score[1])
        theirs = "—" if score is None else str(score[0])
        mine = "—" if score is None else str(correct)
        agreeing = "—" if score is None else f"{agree} of {judged}"
        rows.append(f"| {run} | {model} | {category} | {conv.records} | {conv.kept} | {errors} | "
                    f"{conv.malformed_calls} | {theirs} | {mine} | {agreeing} |")  # fmt: skip
        for key, value in (("records", conv.records), ("kept", conv.kept), ("errors", errors),
                           ("malformed", conv.malformed_calls), ("judged", judged), ("agree", agree)):  # fmt: skip
            totals[key] += value
    runs = _model_runs(root)
    date, learn_on, replay_on = CROSS
    a, b = runs[(date, learn_on)], runs[(date, replay_on)]
    cat_a, cat_b = Catalog.of(a.catalogs["bfcl"]), Catalog.of(b.catalogs["bfcl"])
    flow = learn_flow(timelines(a.episodes, cat_a), cat_a, learn_from_all=True)
    flow.check_catalog(cat_b)
    replayed = {
        kind: replay(timelines(b.episodes, cat_b), Decider(flow, kind, 0.3, cat_b)) for kind in DECIDERS
    }
    made_up = lambda c: sum(1 for t in c.catalogs["bfcl"].tools if not t.exists)  # noqa: E731
    lines = [
        "# BFCL v4 multi-turn: published runs of other models, converted and re-judged",
        "",
        f"Generated by `.venv/bin/python bench/results_bfcl_published_runs.py <checkout>` from "
        f"github.com/bbrowning/bfcl-vllm-results at {_commit(root)} "
        f"({time.perf_counter() - started:.0f} s). Do not edit by hand.",
        "",
        "gpt-oss-120b and gpt-oss-20b served by vLLM, as their publisher ran them through BFCL (result and score",
        "files are BFCL's own; the long-context files are not in the snapshot). The converter keeps every record",
        "but BFCL's `Error during inference` entries, and a call whose arguments are not JSON as a malformed call",
        "(D120); *re-judged* is `judge_task` (BFCL's checker, D102) on each converted episode, beside BFCL's own",
        "verdict from the score file. BFCL counts an inference error as a wrong entry, so its correct counts equal",
        "the re-judged ones when every kept episode agrees.",
        "",
        "Before D120 (main at 7d4b167, the same 21 files): 7 files were refused whole (`arguments are not JSON`);",
        "with `--skip-bad` 4,026 of 4,200 records were kept — 77 entries holding a malformed call were dropped with",
        "the 97 inference errors — and a flow learned on gpt-oss-120b refused gpt-oss-20b's run (`flow learned",
        "against catalog sha256:d8a4e201b8a7102a, but this 'bfcl' catalog is sha256:6a1304e74333a2e2`).",
        "",
        *rows,
        f"| **all** | | | **{totals['records']}** | **{totals['kept']}** | **{totals['errors']}** | "
        f"**{totals['malformed']}** | | | **{totals['agree']} of {totals['judged']}** |",
        "",
        f"## Learn on {learn_on}, replay on {replay_on} ({date}, base + miss_func + miss_param)",
        "",
        f"Each model's files converted on their own: {learn_on} {a.kept} episodes, its catalog listing "
        f"{made_up(a)} made-up names; {replay_on} {b.kept} episodes, {made_up(b)} made-up names. Catalog "
        f"fingerprints: {cat_a.fingerprint()} and {cat_b.fingerprint()} (the 128 functions of BFCL's docs, D121). "
        f"Flow learned from all of {learn_on}'s episodes (BFCL result files carry no verdict), θ = 0.3:",
        "",
        "| decider | episodes replayed | turns | saved turns | lookups made | lookups used |",
        "|---|---|---|---|---|---|",
        *(
            f"| {kind} | {len(r.episodes)} | {r.turns} | {r.saved} | {r.made} | {r.used} |"
            for kind, r in replayed.items()
        ),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: results_bfcl_published_runs.py CHECKOUT_OF_bfcl-vllm-results")
    write_text_atomic(OUT, main(Path(sys.argv[1])))
    print(OUT)
