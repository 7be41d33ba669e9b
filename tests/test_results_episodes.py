"""The episode files kept beside the results pages (docs/results/episodes, D265) are what their table says.

Each file is read whole by the episode store's own reader (a truncated or malformed file fails here, not
in a later session that restores it); the command in its header is the one the table gives, the table's
episode count is the file's, the path it is restored to is where that command writes it, and every file is
in the table and every row has its file. A loop run kept as a tarball of its folder (`.tar.gz`) is unpacked
and checked the same way: every episode store in it reads whole, its definition is the command's, and it
holds nothing its resume makes again (the README's `tar` command) nor anything outside its folder.
"""

from __future__ import annotations

import itertools
import json
import re
import tarfile
from collections.abc import Callable
from pathlib import Path

from toolshift.traces.store import iter_episodes, read_header

EPISODES = Path(__file__).resolve().parents[1] / "docs" / "results" / "episodes"
ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| `([^`]+)` \| (\d+) \| (\d+) \| (.+) \|$")


def _rows() -> dict[str, tuple[str, str, int, int, str]]:
    text = (EPISODES / "README.md").read_text(encoding="utf-8")
    rows = {}
    for line in text.splitlines():
        if m := ROW.match(line):
            name, command, restore_to, count, planned, page = m.groups()
            rows[name] = (command, restore_to, int(count), int(planned), page)
    return rows


def test_every_file_is_in_the_table_and_every_row_has_its_file():
    files = {p.name for p in [*EPISODES.glob("*.episodes.jsonl.gz"), *EPISODES.glob("*.tar.gz")]}
    assert set(_rows()) == files


def test_each_file_reads_whole_and_matches_its_row(tmp_path):
    for name, (command, restore_to, count, planned, page) in _rows().items():
        path = EPISODES / name
        if name.endswith(".tar.gz"):
            kept = {
                ("skills", "eval"): _kept_skills_run,
                ("drift", "run"): _kept_drift_run,
                ("frameworks", "compare"): _kept_frameworks_run,
                ("harness", "compare"): _kept_harness_run,
            }.get(tuple(command.split()[1:3]), _kept_loop_run)
            held = kept(path, command, restore_to, tmp_path / name)
            assert held == count, f"{name}: the table says {count} episodes, the run holds {held}"
            assert count <= planned, name
            continue
        header = read_header(path)
        assert header.meta.get("command") == command, name
        assert _writes_to(command, restore_to), f"{name}: {command} does not write {restore_to}"
        ids = [e.id for e in iter_episodes(path)]
        assert len(ids) == count, f"{name}: the table says {count} episodes, the file holds {len(ids)}"
        assert len(set(ids)) == len(ids), f"{name}: an episode recorded twice"
        assert count <= planned, name
        if count == planned:  # a finished run's page exists
            target = EPISODES.parent / page.strip("`")
            assert target.is_file(), f"{name}: page {page} missing"


def _writes_to(command: str, restore_to: str) -> bool:
    """Whether `command` writes its episodes to `restore_to`: `bench baseline --out OUT` to
    OUT/AGENT.episodes.jsonl, `steward eval --run RUN --model-rows ...` to RUN/model/LABEL.episodes.jsonl."""
    target = Path(restore_to)
    if not target.name.endswith(".episodes.jsonl"):
        return False
    words = command.split()
    flags = dict(itertools.pairwise(words))
    if words[1:3] == ["bench", "baseline"]:
        return flags.get("--out") == str(target.parent)
    if words[1:3] == ["steward", "eval"]:
        return "--model-rows" in flags and f"{flags.get('--run')}/model" == str(target.parent)
    return False


def _kept_loop_run(path: Path, command: str, restore_to: str, into: Path) -> int:
    """Check a loop run folder kept as a tarball (docs/results/episodes/README.md) and return how many agent
    episodes it holds (each condition's and version's `episodes.jsonl`)."""
    words = command.split()
    flags = dict(itertools.pairwise(words))
    assert words[1] == "loop" and flags.get("--out") == restore_to, (
        f"{path.name}: {command} does not write {restore_to}"
    )
    run = _unpack(
        path, restore_to, into,
        lambda parts: (len(parts) >= 3 and parts[2] in ("libraries", "flows")) or parts[-1] in ("learned.json", "gateway"),
    )  # fmt: skip
    definition = json.loads((run / "loop.json").read_text())
    assert definition["format"] == "toolshift.loop/1" and definition["model"] == flags.get("--model"), (
        path.name
    )
    held = 0
    for store in sorted(run.rglob("*.jsonl")):
        if store.name == "children.tasks.jsonl":
            continue
        ids = [e.id for e in iter_episodes(store)]
        assert len(set(ids)) == len(ids), f"{path.name}: {store}: an episode recorded twice"
        held += len(ids) if store.name == "episodes.jsonl" else 0
    return held


def _kept_skills_run(path: Path, command: str, restore_to: str, into: Path) -> int:
    """Check a skill-method comparison run kept as a tarball (docs/results/episodes/README.md) and return how many
    test episodes it holds (every row's `model/*.episodes.jsonl`); its ledgers and rollouts read whole too."""
    from toolshift.skillmethods.calls import Ledger

    flags = dict(itertools.pairwise(command.split()))
    assert flags.get("--run") == restore_to, f"{path.name}: {command} does not write {restore_to}"
    run = _unpack(
        path, restore_to, into, lambda parts: (len(parts) >= 2 and parts[1] in ("train", "libraries")) or "scratch" in parts
    )  # fmt: skip
    held = 0
    for store in sorted((run / "model").glob("*.episodes.jsonl")):
        ids = [e.id for e in iter_episodes(store)]
        assert len(set(ids)) == len(ids), f"{path.name}: {store}: an episode recorded twice"
        held += len(ids)
    for method in sorted((run / "methods").glob("*")):
        Ledger(method / "calls.jsonl")  # every call's record reads
        if (method / "rollouts.episodes.jsonl").exists():
            ids = [e.id for e in iter_episodes(method / "rollouts.episodes.jsonl")]
            assert len(set(ids)) == len(ids), f"{path.name}: {method.name}: a rollout recorded twice"
    return held


def _kept_drift_run(path: Path, command: str, restore_to: str, into: Path) -> int:
    """Check a real-drift run kept as a tarball (docs/results/episodes/README.md) and return how many episodes it
    holds (oracle, instruments and models); its history and suites read as their formats."""
    from toolshift.drift.history import load_history
    from toolshift.drift.suite import load_suite

    flags = dict(itertools.pairwise(command.split()))
    assert flags.get("--run") == restore_to, f"{path.name}: {command} does not write {restore_to}"
    run = _unpack(
        path, restore_to, into, lambda parts: len(parts) >= 2 and parts[1] in ("libraries", "deploy", "results.json")
    )  # fmt: skip
    history = load_history(run / "history.json")
    for suite in sorted(run.glob("suite-*.json")):
        assert load_suite(suite).server in history.servers, suite.name
    held = 0
    for store in sorted(run.rglob("*.episodes.jsonl")):
        ids = [e.id for e in iter_episodes(store)]
        assert len(set(ids)) == len(ids), f"{path.name}: {store}: an episode recorded twice"
        held += len(ids)
    return held


def _kept_frameworks_run(path: Path, command: str, restore_to: str, into: Path) -> int:
    """Check a `frameworks compare` run kept as a tarball (docs/results/episodes/README.md) and return how many
    episodes it holds: toolshift's loop's (`toolshift.episodes.jsonl`) and inspect's samples (its logs, read back
    by `traces convert inspect`'s reader), each task at most once per path."""
    from toolshift.traces.inspect_log import convert_inspect

    flags = dict(itertools.pairwise(command.split()))
    assert flags.get("--out") == restore_to, f"{path.name}: {command} does not write {restore_to}"
    run = _unpack(path, restore_to, into)
    mine = [e.source.get("instance") for e in iter_episodes(run / "toolshift.episodes.jsonl")]
    assert len(set(mine)) == len(mine), f"{path.name}: a task run twice by toolshift's loop"
    theirs = [
        e.source["inspect"]["sample"]
        for log in sorted((run / "inspect-logs").glob("*.json"))
        for e in convert_inspect(log).episodes
    ]
    assert len(set(theirs)) == len(theirs), f"{path.name}: a task run twice through inspect"
    return len(mine) + len(theirs)


def _kept_harness_run(path: Path, command: str, restore_to: str, into: Path) -> int:
    """Check a `harness compare` run kept as a tarball (docs/results/episodes/README.md) and return how many
    episodes it holds: one store per agent and setting in each part's folder (`delta/`, `tau2/`), every store's
    episodes each once, every one judged."""
    flags = dict(itertools.pairwise(command.split()))
    assert flags.get("--out") == restore_to, f"{path.name}: {command} does not write {restore_to}"
    run = _unpack(path, restore_to, into)
    held = 0
    for store in sorted(run.glob("*/*.episodes.jsonl")):
        episodes = list(iter_episodes(store))
        ids = [e.id for e in episodes]
        assert len(set(ids)) == len(ids), f"{path.name}: {store.name}: an episode recorded twice"
        assert all(e.outcome is not None and e.outcome.success in (True, False) for e in episodes), store.name
        held += len(ids)
    return held


def _unpack(
    path: Path, restore_to: str, into: Path, made_again: Callable[[tuple[str, ...]], bool] | None = None
) -> Path:
    """Unpack a run kept as a tarball into `into` and return its folder: every member a file or a folder under the
    run's own folder (no absolute path, no `..`), none of what a resume makes again (`made_again(parts)`)."""
    folder = Path(restore_to).name
    with tarfile.open(path) as tar:
        for m in tar.getmembers():
            parts = Path(m.name).parts
            assert m.isfile() or m.isdir(), f"{path.name}: {m.name} is neither a file nor a folder"
            assert parts[0] == folder and ".." not in parts and not m.name.startswith("/"), m.name
            again = made_again is not None and made_again(parts)
            assert not again, f"{path.name}: {m.name} is made again on resume and is not kept"
        tar.extractall(into, filter="data")
    return into / folder
