"""Every command that reads a file handed to it, over hostile files: 0 tracebacks, 0 hangs, 0 silent acceptances.

Each case is one command of the real CLI and one file it reads. A valid corpus is made once (toolshift's own
fixtures and writers, a small bench build); for each case and each hostile input that file kind can carry —
a FIFO where the file should be, a non-UTF-8 byte, a lone surrogate escape (`\\ud800`), a 5,000-digit
integer, a record repeated under its id, a `sqlite_evil` trigger planted through `PRAGMA writable_schema` —
the file is replaced by its hostile twin and the command run. The only good outcome is a refusal: exit 2 with
one line naming the file and the reason (`EXPECT`); anything else is counted: a traceback (or any other
exit), a hang (past the timeout), a silent acceptance (exit 0), a refusal for another reason. Files a build
checks by digest are re-digested after the edit, as anyone who can write them can (D307).

Run: `.venv/bin/python bench/fuzz_inputs.py [--mode process|inprocess]` prints the table and writes
docs/results/fuzz.md; tests/test_fuzz_inputs.py runs every case in process-free mode (typer's runner, a
thread with a timeout per command).
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
TESTS = REPO / "tests"
OUT = REPO / "docs" / "results" / "fuzz.md"
HUGE = "9" * 5000
MUTATIONS = ("fifo", "non_utf8", "surrogate", "huge_int", "dup_id", "schema")
EXPECT = {
    "fifo": ("FIFO",),
    "non_utf8": ("UTF-8",),
    "surrogate": ("surrogate",),
    "huge_int": ("digits",),
    "dup_id": ("repeat", "twice", "earlier input", "duplicate"),
    "schema": ("schema",),
}
"""Words of which one must be in the refusal: it is refused for what was planted, not for something else."""


# --- the valid corpus ------------------------------------------------------------------------------


def _taubench_record(task_id: int) -> dict[str, Any]:
    call = {"id": "c1", "type": "function",
            "function": {"name": "find_user_id_by_email", "arguments": "{\"email\": \"a@b.c\"}"}}  # fmt: skip
    return {"task_id": task_id, "trial": 0, "reward": 1.0,
            "info": {"task": {"actions": [{"name": "find_user_id_by_email", "kwargs": {"email": "a@b.c"}}],
                              "instruction": "Find me.", "outputs": []}},
            "traj": [{"role": "system", "content": "policy"}, {"role": "user", "content": "hi"},
                     {"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": "c1", "name": "find_user_id_by_email", "content": "yusuf_9"},
                     {"role": "assistant", "content": "Done."}, {"role": "user", "content": "thanks ###STOP###"}]}  # fmt: skip


WORKBENCH_RESPONSE = (
    "{'input': 'find x', 'output': 'done', 'intermediate_steps': [(AgentAction(tool='email.search_emails', "
    "tool_input={'query': 'x'}, log='Thought: search'), 'no emails')]}"
)
AGENTDOJO_LOG = {
    "suite_name": "banking", "pipeline_name": "pipe", "user_task_id": "user_task_0", "injection_task_id": None,
    "attack_type": None, "injections": {}, "error": None, "utility": True, "security": True, "duration": 1.0,
    "messages": [{"role": "system", "content": "You help."}, {"role": "user", "content": "Read a file."},
                 {"role": "assistant", "content": None,
                  "tool_calls": [{"function": "read_file", "args": {"file_path": "a.txt"}, "id": "c1"}]},
                 {"role": "tool", "content": "text", "tool_call_id": "c1",
                  "tool_call": {"function": "read_file", "args": {"file_path": "a.txt"}, "id": "c1"}, "error": None},
                 {"role": "assistant", "content": "Done."}],
}  # fmt: skip
SKILL_BODY = {
    "facts": ["order"],
    "steps": [{"tool": "po_get", "args": {"id": {"fact": "order"}}, "each": False}],
}


def make_corpus(root: Path, build: Path) -> dict[str, Path]:
    """Valid inputs of every kind under `root` (`build`: a small evolved bench build, copied in)."""
    from toolshift.steward.library import Library, Skill
    from toolshift.traces.bfcl import convert_bfcl
    from toolshift.world import World, load_domain

    c: dict[str, Path] = {}
    run = Path(shutil.copytree(TESTS / "traces" / "data" / "bfcl" / "fixture-a-FC", root / "bfcl" / "m-FC"))
    c["bfcl"] = run / "multi_turn" / "BFCL_v4_multi_turn_base_result.json"
    tau2 = TESTS / "traces" / "data" / "tau2_telecom_run"
    doc = json.loads((tau2 / "results.json").read_text())
    sims = [json.loads(p.read_text()) for p in sorted((tau2 / "simulations").glob("*.json"))]
    doc.pop("simulation_index")
    doc["simulations"] = [*sims, {**sims[0], "id": sims[0]["id"][:-1] + "b"}]
    c["tau2"] = root / "tau2" / "results.json"
    c["tau2"].parent.mkdir(parents=True)
    c["tau2"].write_text(json.dumps(doc))
    c["taubench"] = root / "taubench" / "gpt-4o-retail.json"
    c["taubench"].parent.mkdir()
    c["taubench"].write_text(json.dumps([_taubench_record(1), _taubench_record(2)]))
    wb = root / "workbench" / "results" / "email" / "gpt-4_all_2024-03-21_15-21-12.csv"
    wb.parent.mkdir(parents=True)
    with wb.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=["query", "function_calls", "full_response", "error"])
        writer.writeheader()
        for q in ("find x", "find y"):
            writer.writerow(
                {"query": q, "function_calls": "[]", "full_response": WORKBENCH_RESPONSE, "error": ""}
            )
    c["workbench"] = wb
    ad = root / "agentdojo" / "runs" / "pipe" / "banking" / "user_task_0" / "none" / "none.json"
    ad.parent.mkdir(parents=True)
    ad.write_text(json.dumps(AGENTDOJO_LOG))
    c["agentdojo"] = ad
    conv = convert_bfcl(c["bfcl"])
    written = conv.write(root / "episodes")
    c["episodes"] = next(p for p in written if p.name.endswith(".episodes.jsonl"))
    c["catalog"] = next(p for p in written if p.name.endswith(".catalog.json"))
    c["build"] = Path(shutil.copytree(build, root / "build"))
    d = c["build"] / "domains" / "accounts_payable"
    c["spec"], c["tasks"] = d / "spec.yaml", d / "tasks.jsonl"
    lib = Library.create(root / "lib.sqlite")
    with lib.transaction():
        lib.edit(
            "add",
            Skill("plan-po-get-0a1b2c3d", "planning", "po", "Get an order", SKILL_BODY, ("po_get",)),
            1,
            {},
        )
    lib.close()
    c["library"] = root / "lib.sqlite"
    from toolshift.steward.skillmd import export_skills

    with Library.open(c["library"]) as opened:
        export_skills(opened.skills(), root / "skills")
    c["skill"] = root / "skills" / "plan-po-get-0a1b2c3d" / "SKILL.md"
    c["gateway"] = root / "gateway.yaml"
    c["gateway"].write_text(
        "format: toolshift.gateway/1\nbackends:\n  - name: ap\n    build: build\n    domain: accounts_payable\n"
        "    version: 2\nidle_timeout: 600\n"
    )
    c["harness"] = root / "harness" / "codex.yaml"
    c["harness"].parent.mkdir()
    shutil.copy(REPO / "src" / "toolshift" / "harness" / "specs" / "codex.yaml", c["harness"])
    c["world"] = root / "clinic.sqlite"
    World(load_domain("clinic")).save(c["world"])
    return c


# --- hostile twins -----------------------------------------------------------------------------------


def _json_edit(path: Path, edit: Callable[[Any], Any], *, lines: bool) -> None:
    if lines:
        rows = path.read_text().splitlines()
        k = max(i for i, r in enumerate(rows) if r.strip())
        rows[k] = json.dumps(edit(json.loads(rows[k])))
        path.write_text("\n".join(rows) + "\n")
    else:
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))


def _first_string(value: Any) -> tuple[Any, str] | None:
    """(container, key) of the first string value in a JSON document, breadth first."""
    queue = [value]
    while queue:
        v = queue.pop(0)
        items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else []
        for k, x in items:
            if isinstance(x, str) and k not in ("format", "id", "role"):
                return v, k
            queue.append(x)
    return None


def _plant_surrogate(doc: Any) -> Any:
    found = _first_string(doc)
    assert found is not None
    container, key = found
    container[key] = container[key] + "\ud800"
    return doc


def _plant_huge(doc: Any) -> Any:
    target = doc[-1] if isinstance(doc, list) else doc
    target["fuzz_number"] = int(HUGE[:100])  # replaced by 5,000 digits in the text below
    return doc


def mutate(path: Path, kind: str, mutation: str) -> None:
    """Replace `path` (a file of `kind`) by its hostile twin."""
    jsonl = path.name.endswith(".jsonl") or kind == "bfcl"
    if mutation == "fifo":
        path.unlink()
        os.mkfifo(path)
    elif mutation == "non_utf8":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2] + b"\xff\xfe" + data[len(data) // 2 :])
    elif mutation == "schema":
        conn = sqlite3.connect(path)
        conn.execute("PRAGMA writable_schema = ON")
        table = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchone()[
            0
        ]
        conn.execute(
            "INSERT INTO sqlite_master VALUES ('trigger', 'sqlite_evil', ?, 0, ?)",
            (table, f"CREATE TRIGGER sqlite_evil AFTER UPDATE ON {table} BEGIN SELECT 1; END"),
        )
        conn.commit()
        conn.close()
    elif kind in ("spec", "gateway", "skill", "harness"):
        text = path.read_text()
        if mutation == "huge_int":
            text = re.sub(
                r"(?m)^(seed|idle_timeout|  revision|title): .*$",
                lambda m: f"{m.group(1)}: {HUGE}",
                text,
                count=1,
            )
        elif (
            mutation == "surrogate"
        ):  # a JSON block (SKILL.md) holds the escape; YAML refuses it as it parses
            text = (
                text.replace('"order"', '"order\\ud800"', 1)
                if kind == "skill"
                else text.replace("\n", '\nfuzz: "\\ud800"\n', 1)
            )
        if text == path.read_text():
            raise ValueError(f"{mutation} found nothing to change in {path}")  # a twin that is no twin
        path.write_text(text)
    elif kind == "workbench":
        text = path.read_text()
        text = text.replace(
            "'query': 'x'", "'query': '\\ud800'" if mutation == "surrogate" else f"'query': {HUGE}", 1
        )
        if text == path.read_text():
            raise ValueError(f"{mutation} found nothing to change in {path}")
        path.write_text(text)
    elif mutation == "surrogate":
        _json_edit(path, _plant_surrogate, lines=jsonl)
    elif mutation == "huge_int":
        _json_edit(path, _plant_huge, lines=jsonl)
        path.write_text(path.read_text().replace(HUGE[:100], HUGE, 1))
    elif mutation == "dup_id":
        if kind == "agentdojo":
            twin = path.parents[2] / "user_task_9" / "none" / "none.json"
            twin.parent.mkdir(parents=True)
            shutil.copy(path, twin)
        elif jsonl:
            rows = [r for r in path.read_text().splitlines() if r.strip()]
            path.write_text("\n".join([*rows, rows[-1]]) + "\n")
        else:
            doc = json.loads(path.read_text())
            seq = doc["simulations"] if isinstance(doc, dict) else doc
            seq.append(seq[-1])
            path.write_text(json.dumps(doc))
    else:
        raise ValueError(f"{mutation} does not apply to {kind}")


def redigest(build: Path) -> None:
    """A build's unkeyed digests recomputed after an edit, as anyone who can write the files does."""
    from toolshift.bench.build import file_digest, spec_text_digest

    m = json.loads((build / "manifest.json").read_text())
    for e in m["domains"]:
        d = build / "domains" / e["name"]
        if not (d / "tasks.jsonl").is_file() or not (d / "spec.yaml").is_file():
            continue
        try:
            spec = spec_text_digest((d / "spec.yaml").read_text(encoding="utf-8"))
        except UnicodeDecodeError:
            spec = e["spec_digest"]
        e["tasks_digest"], e["spec_digest"] = file_digest(d / "tasks.jsonl"), spec
        report = json.loads((d / "report.json").read_text())
        report["tasks_digest"], report["spec_digest"] = e["tasks_digest"], spec
        (d / "report.json").write_text(json.dumps(report))
    (build / "manifest.json").write_text(json.dumps(m))


# --- the cases ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One command and the file of the corpus it reads; `argv` is given the corpus and a scratch folder."""

    name: str
    kind: str
    mutations: tuple[str, ...]
    argv: Callable[[dict[str, Path], Path], list[str]] | None = None
    call: Callable[[dict[str, Path]], Any] | None = None
    """An API reader instead of a command (`World.open`: no command opens a world file)."""
    digest: bool = False


TEXT = ("fifo", "non_utf8", "surrogate", "huge_int")
CASES = [
    Case("traces convert bfcl", "bfcl", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "convert", "bfcl", str(c["bfcl"].parents[1]), "--out", str(t / "o")]),
    Case("traces convert tau2", "tau2", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "convert", "tau2", str(c["tau2"]), "--out", str(t / "o")]),
    Case("traces convert taubench-v1", "taubench", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "convert", "taubench-v1", str(c["taubench"]), "--out", str(t / "o")]),
    Case("traces convert workbench", "workbench", TEXT,
         lambda c, t: ["traces", "convert", "workbench", str(c["workbench"].parents[1]), "--out", str(t / "o")]),
    Case("traces convert agentdojo", "agentdojo", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "convert", "agentdojo", str(c["agentdojo"].parents[4]), "--out", str(t / "o")]),
    Case("traces stats (episodes)", "episodes", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "stats", str(c["episodes"]), "--catalog", str(c["catalog"])]),
    Case("traces stats (catalog)", "catalog", TEXT,
         lambda c, t: ["traces", "stats", str(c["episodes"]), "--catalog", str(c["catalog"])]),
    Case("traces split", "episodes", (*TEXT, "dup_id"),
         lambda c, t: ["traces", "split", str(c["episodes"]), "--out", str(t / "s")]),
    Case("run --tasks", "tasks", (*TEXT, "dup_id"),
         lambda c, t: ["run", "--world", str(c["spec"]), "--tasks", str(c["tasks"]), "--model", "oracle",
                       "--out", str(t / "r")]),
    Case("world tools", "spec", TEXT, lambda c, t: ["world", "tools", str(c["spec"])]),
    Case("bench verify (spec)", "spec", TEXT, lambda c, t: ["bench", "verify", str(c["build"])], digest=True),
    Case("bench verify (tasks)", "tasks", (*TEXT, "dup_id"), lambda c, t: ["bench", "verify", str(c["build"])],
         digest=True),
    Case("bench stats (tasks)", "tasks", (*TEXT, "dup_id"), lambda c, t: ["bench", "stats", str(c["build"])],
         digest=True),
    Case("steward show", "library", ("fifo", "schema"), lambda c, t: ["steward", "show", str(c["library"])]),
    Case("steward export", "library", ("fifo", "schema"),
         lambda c, t: ["steward", "export", str(c["library"]), "--out", str(t / "x")]),
    Case("steward import", "skill", TEXT,
         lambda c, t: ["steward", "import", str(c["skill"].parents[1]), "--out", str(t / "i.sqlite")]),
    Case("gateway check", "gateway", TEXT, lambda c, t: ["gateway", "check", "--config", str(c["gateway"])]),
    Case("harness show", "harness", TEXT, lambda c, t: ["harness", "show", str(c["harness"])]),
    Case("World.open", "world", ("fifo", "schema"), call=lambda c: _open_world(c["world"])),
]  # fmt: skip


def _open_world(path: Path) -> None:
    from toolshift.world import World

    World.open(path).close()


# --- running ----------------------------------------------------------------------------------------


@dataclass
class Outcome:
    case: str
    mutation: str
    verdict: str
    """`refused` (the one good outcome), `traceback`, `hang`, `accepted`, `other reason`."""
    detail: str = ""
    seconds: float = 0.0


def _classify(case: Case, mutation: str, code: int | None, err: str, path: Path) -> tuple[str, str]:
    if code is None:
        return "hang", err
    if "Traceback" in err or code not in (0, 2):
        return "traceback", err.strip().splitlines()[-1] if err.strip() else f"exit {code}"
    if code == 0:
        return "accepted", ""
    line = err.strip()
    if "\n" in line:
        return "traceback", f"not one line: {line[:200]}"
    if not any(w in line for w in EXPECT[mutation]):
        return "other reason", line
    return "refused", line


def run_inprocess(argv: list[str], timeout: float) -> tuple[int | None, str]:
    """The command through typer's runner in a worker thread: (exit code or None on a hang, error text).
    A `ToolshiftError` is what `toolshift.cli.main` prints on one line with its exit code."""
    from typer.testing import CliRunner

    from toolshift.cli import app
    from toolshift.errors import ToolshiftError

    box: list[Any] = []

    def work() -> None:
        box.append(CliRunner().invoke(app, argv))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        return None, "no answer within the timeout"
    result = box[0]
    exc = result.exception
    if exc is None or isinstance(exc, SystemExit):
        return result.exit_code, result.output if result.exit_code else ""
    if isinstance(exc, ToolshiftError):
        return exc.exit_code, f"error: {exc}"
    import traceback

    return 1, "Traceback (in process):\n" + "".join(traceback.format_exception(exc))


def run_process(argv: list[str], timeout: float) -> tuple[int | None, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    try:
        done = subprocess.run([sys.executable, "-m", "toolshift", *argv], capture_output=True, text=True,
                              env=env, timeout=timeout, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        return None, "no answer within the timeout"
    return done.returncode, done.stderr


def run_all(
    build: Path,
    scratch: Path,
    *,
    mode: str = "inprocess",
    timeout: float = 60.0,
    progress: Callable[[str], None] = print,
) -> list[Outcome]:
    """Every case × mutation on a fresh copy of the corpus each: the outcomes."""
    base = make_corpus(scratch / "corpus", build)
    runner = run_inprocess if mode == "inprocess" else run_process
    out: list[Outcome] = []
    for case in CASES:
        for mutation in case.mutations:
            work = scratch / f"{len(out):03d}"
            corpus = {k: work / v.relative_to(scratch / "corpus") for k, v in base.items()}
            shutil.copytree(scratch / "corpus", work, symlinks=True)
            target = corpus[case.kind]
            mutate(target, case.kind, mutation)
            if case.digest and mutation != "fifo":
                redigest(corpus["build"])
            started = time.monotonic()
            if case.call is not None:
                code, err = _call(case, corpus, timeout)
            else:
                assert case.argv is not None
                cwd = os.getcwd()
                os.chdir(work)  # the gateway config names its build relative to itself
                try:
                    code, err = runner(case.argv(corpus, work), timeout)
                finally:
                    os.chdir(cwd)
            verdict, detail = _classify(case, mutation, code, err, target)
            detail = detail.replace(f"{work}/", "").replace(
                str(work), "."
            )  # the page reads the same each run
            out.append(Outcome(case.name, mutation, verdict, detail, time.monotonic() - started))
            progress(f"{case.name:28} {mutation:10} {verdict:12} {detail[:100]}")
            if target.exists() and not target.is_file() and not target.is_dir():
                target.unlink()  # a FIFO left behind
    return out


def _call(case: Case, corpus: dict[str, Path], timeout: float) -> tuple[int | None, str]:
    from toolshift.errors import ToolshiftError

    box: list[Any] = []

    def work() -> None:
        try:
            case.call(corpus)  # type: ignore[misc]
            box.append((0, ""))
        except ToolshiftError as exc:
            box.append((exc.exit_code, f"error: {exc}"))
        except Exception as exc:  # the finding: what escaped
            box.append((1, f"Traceback (in process): {type(exc).__name__}: {exc}"))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout)
    return box[0] if box else (None, "no answer within the timeout")


def page(outcomes: list[Outcome], mode: str, seconds: float) -> str:
    counts = {
        v: sum(o.verdict == v for o in outcomes)
        for v in ("refused", "traceback", "hang", "accepted", "other reason")
    }
    rows = [
        f"| {o.case} | {o.mutation} | {o.verdict} | {o.detail[:140].replace('|', '/')} |" for o in outcomes
    ]
    return "\n".join([
        "# Hostile inputs to every file-reading command (issue 56, D307)",
        "",
        f"Made by `.venv/bin/python bench/fuzz_inputs.py --mode {mode}` ({len(outcomes)} runs; paths below are",
        "relative to each run's copy of the corpus).",
        "Each run: one command of the real CLI (or `World.open`) over a valid corpus whose one file was replaced",
        "by a hostile twin; the only good outcome is a one-line refusal (exit 2) that names what was planted.",
        "",
        f"**{counts['refused']} refused, {counts['traceback']} tracebacks, {counts['hang']} hangs, "
        f"{counts['accepted']} silent acceptances, {counts['other reason']} refused for another reason.**",
        "",
        "| command | hostile input | outcome | what it said |",
        "|---|---|---|---|",
        *rows,
        "",
    ])  # fmt: skip


def main() -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=("process", "inprocess"), default="process")
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    sys.path.insert(0, str(TESTS))
    from toolshift.bench.build import build_domain, write_manifest
    from toolshift.bench.ecosystem.evolve import EvolveConfig
    from toolshift.bench.ecosystem.paths import compute_references
    from toolshift.bench.ecosystem.pipeline import evolve_build
    from toolshift.fileio import write_text_atomic

    with tempfile.TemporaryDirectory() as tmp:
        build = Path(tmp) / "build"
        build_domain(build, "accounts_payable", seed=0, per_domain=12)
        write_manifest(build, ["accounts_payable"], 0, 12)
        evolve_build(build, EvolveConfig(versions=2, seed=1))
        compute_references(build)
        started = time.monotonic()
        outcomes = run_all(build, Path(tmp) / "fuzz", mode=args.mode, timeout=args.timeout)
        write_text_atomic(OUT, page(outcomes, args.mode, time.monotonic() - started))
    bad = [o for o in outcomes if o.verdict != "refused"]
    print(f"wrote {OUT}: {len(outcomes) - len(bad)} of {len(outcomes)} refused as they should be")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
