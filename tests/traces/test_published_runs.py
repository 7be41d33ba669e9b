"""Every file of ../shared/data/published-runs converts, or is refused in one line; its counts are PROVENANCE.md's."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.traces.agentdojo import convert_agentdojo
from toolshift.traces.bfcl import convert_bfcl
from toolshift.traces.conversion import Conversion
from toolshift.traces.tau2 import convert_tau2
from toolshift.traces.taubench import convert_taubench_v1

CONVERTERS = {"tau2": convert_tau2, "taubench": convert_taubench_v1, "bfcl": convert_bfcl}
REFUSED = {"AIREV-Agent-0.8B"}
"""The runs whose layout lacks what a conversion needs (each turn the model's text, no inference log)."""


def _published(shared_data: Path) -> Path:
    root = shared_data / "published-runs"
    if not (root / "PROVENANCE.md").is_file():
        pytest.skip(f"the published runs are not in {root}")
    return root


def _tables(provenance: str) -> tuple[dict[str, int], dict[str, tuple[int, int]]]:
    """{file: records} of the τ²-bench, τ-bench and BFCL tables; {pipeline: (files, utility=true)} of AgentDojo's."""
    files: dict[str, int] = {}
    pipelines: dict[str, tuple[int, int]] = {}
    header: list[str] = []
    for line in provenance.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] in ("file", "pipeline"):
            header = cells
            continue
        row = dict(zip(header, cells, strict=True))
        if header[0] == "file":
            files[row["file"].strip("`")] = int(row["records"])
        else:
            pipelines[row["pipeline"]] = (int(row["files"]), int(row["utility=true"]))
    return files, pipelines


def _one_line(exc: BadInputError) -> str:
    text = str(exc)
    assert "\n" not in text and exc.source, text
    return text


@pytest.mark.shared
def test_every_published_file_converts_or_is_refused_in_one_line(shared_data) -> None:
    root = _published(shared_data)
    files, pipelines = _tables((root / "PROVENANCE.md").read_text(encoding="utf-8"))
    on_disk = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json"))
    others = [f for f in on_disk if not f.startswith("agentdojo/")]
    assert others == sorted(files), "PROVENANCE.md lists exactly the τ²-bench, τ-bench and BFCL files here"
    refused = []
    for name in others:
        convert = CONVERTERS[name.split("/", 1)[0]]
        try:
            conv = convert(root / name)
        except BadInputError as exc:
            _one_line(exc)
            refused.append(name)
            conv = convert(root / name, skip_bad=True)
            assert conv.kept == 0 and sum(conv.skipped.values()) == conv.records, name
        else:
            assert conv.kept + sum(conv.skipped.values()) == conv.records, name
            assert conv.kept > 0 and not conv.skipped, (name, conv.skipped)
        assert conv.records == files[name], name
    assert {n.split("/")[1] for n in refused} == REFUSED and len(refused) == 4

    dojo = [f for f in on_disk if f.startswith("agentdojo/")]
    by_pipeline: Counter[str] = Counter()
    judged_true: Counter[str] = Counter()
    unjudged = 0
    for name in dojo:
        conv: Conversion = convert_agentdojo(root / name)
        (episode,) = conv.episodes
        pipeline = name.split("/")[2]
        by_pipeline[pipeline] += 1
        judged_true[pipeline] += episode.outcome.success is True
        unjudged += episode.outcome.success is None
    assert {p: (n, judged_true[p]) for p, n in by_pipeline.items()} == pipelines
    assert unjudged == 4  # the Mixtral logs whose utility is null: kept without a verdict


@pytest.mark.shared
def test_the_command_reads_a_folder_of_tau2_runs_and_says_which_are_partial(shared_data, tmp_path) -> None:
    root = _published(shared_data)
    result = CliRunner().invoke(
        app, ["traces", "convert", "tau2", str(root / "tau2"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.split())
    files, _ = _tables((root / "PROVENANCE.md").read_text(encoding="utf-8"))
    total = sum(n for f, n in files.items() if f.startswith("tau2/"))
    assert re.search(rf"tau2: {total} records", out) and f"kept │ {total} │" in out
    assert out.count("a partial run") == 2  # grok-3's and grok-4-fast's airline runs of 4 trials configured
    assert "calls to tools no catalog lists" not in out  # telecom's tools come from τ²'s own table
