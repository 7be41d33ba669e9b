"""A run folder: its configuration, seed tasks, one record per evaluated program, proposals and checkpoint.

Layout (`toolshift.evolve-run/1`, docs/formats.md):

    OUT/evolve.json                       the configuration (EvolveConfig) and when the run began
    OUT/seeds.jsonl                       the seed tasks (toolshift.tasks/1)
    OUT/programs/<id>.json                one ProgramRecord per evaluated program (seed or child)
    OUT/programs/<id>.py                  its program text (data: parsed, never imported)
    OUT/episodes/<id>.episodes.jsonl      the solver's attempts (toolshift.episodes/1), appended as they end
    OUT/proposals/step-<n>.json           a step's proposal, kept before it is evaluated
    OUT/checkpoint.json                   steps done, programs, cost and tokens per generation
    OUT/final/                            the selected dataset (select.py)

Every file is written beside its target and renamed over it, so a kill leaves the old or the new file,
never half of one; a program's record is the proof that it was evaluated, so a resumed run starts at
the step after the last record and re-evaluates nothing.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from toolshift.errors import BadInputError
from toolshift.evolve.archive import Cost, Mutation, ProgramRecord
from toolshift.evolve.solver import SolverConfig
from toolshift.fileio import read_json, read_text
from toolshift.models import Task
from toolshift.taskfile import read_tasks, write_tasks
from toolshift.traces.store import write_text_atomic

RUN_FORMAT = "toolshift.evolve-run/1"
CHECKPOINT_FORMAT = "toolshift.evolve-checkpoint/1"
PROPOSAL_FORMAT = "toolshift.evolve-proposal/1"


class EvolveConfig(BaseModel):
    """Everything that changes what a run evolves. A run folder keeps one; resuming reuses it."""

    model_config = ConfigDict(extra="forbid")

    seed: int = 0
    generations: int = Field(3, ge=0, le=10_000)
    """Steps = generations × seed tasks: each generation gives every seed's lineage one child."""
    solver: SolverConfig = Field(default_factory=SolverConfig)
    proposer: str = "structural"
    """`structural`, or a model: `embedded`, `openai:<m>`, `anthropic:<m>`."""
    moves: Literal["coarse", "fine"] = "coarse"
    """The structural proposer's moves: the coarse operators alone, or the fine ones first (D207)."""
    feedback: str = "rules"
    """`rules` (model-free diff) or a model that writes the summary from the same diff."""
    judge: str = "rules"
    """The final dataset's trivial-failure filter: `rules` or a model."""
    labeler: str = "rules"
    """Who labels task features and failure modes for the report: `rules` or a model."""
    model_timeout: float = Field(300.0, gt=0)
    """Hard limit (seconds) on each proposer, feedback, judge and labeler call."""
    base_url: str | None = None
    max_tokens: int = Field(4096, ge=1)
    """Reply cap for proposer, feedback, judge and labeler calls."""
    inspirations: int = Field(5, ge=0, le=20)

    @field_validator("proposer", "feedback", "judge", "labeler")
    @classmethod
    def _known(cls, value: str, info: Any) -> str:
        from toolshift.agents.config import check_model_spec

        allowed = {"proposer": "structural"}.get(info.field_name, "rules")
        if value == allowed:
            return value
        check_model_spec(value, role="user")
        if value == "scripted":
            raise ValueError(f"{info.field_name} must be {allowed!r} or a model")
        return value


class GenerationStats(BaseModel):
    """What one generation cost, by part, and what it produced."""

    generation: int
    programs: int = 0
    evaluated: int = 0
    rejected: int = 0
    feasible: int = 0
    in_band: int = 0
    """Evaluated feasible programs with completion rate in [0.3, 0.7]."""
    costs: dict[str, Cost] = Field(default_factory=dict)


class Checkpoint(BaseModel):
    format: Literal["toolshift.evolve-checkpoint/1"] = CHECKPOINT_FORMAT
    updated: str
    steps_total: int
    steps_done: int
    seeds: int
    programs: int
    generations: list[GenerationStats]


class ProposalRecord(BaseModel):
    """A step's proposal, kept before evaluation: a resumed run evaluates it instead of asking again."""

    format: Literal["toolshift.evolve-proposal/1"] = PROPOSAL_FORMAT
    step: int
    root: str
    parent: str
    parent_why: str
    inspirations: list[str] = Field(default_factory=list)
    program: str | None = None
    error: str | None = None
    mutation: Mutation
    cost: Cost = Field(default_factory=Cost)


def _safe(name: str) -> str:
    bad = set('/\\\x00:*?"<>|')
    return "".join("_" if ch in bad else ch for ch in name)[:200]


class RunStore:
    """Reads and writes one run folder."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)

    @property
    def config_path(self) -> Path:
        return self.folder / "evolve.json"

    def exists(self) -> bool:
        return self.config_path.is_file()

    def create(self, config: EvolveConfig, seeds: list[Task]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        write_tasks(self.folder / "seeds.jsonl", seeds)
        body = {
            "format": RUN_FORMAT,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "config": config.model_dump(mode="json"),
        }
        write_text_atomic(self.config_path, json.dumps(body, indent=2) + "\n")

    def config(self) -> EvolveConfig:
        data = read_json(self.config_path, what="evolve run config (not an evolve run?)")
        found = data.get("format") if isinstance(data, dict) else None
        if found != RUN_FORMAT:
            raise BadInputError(
                f"unknown run format {found!r} (this reads {RUN_FORMAT!r})",
                source=str(self.config_path),
                field="format",
            )
        try:
            return EvolveConfig.model_validate(data.get("config"))
        except ValidationError as exc:
            raise BadInputError.from_validation(exc, source=str(self.config_path), prefix="config") from None

    def set_generations(self, generations: int) -> EvolveConfig:
        """Extend (or shorten) a run; everything else in its configuration stays as it was."""
        config = self.config().model_copy(update={"generations": generations})
        data = read_json(self.config_path, what="evolve run config")
        data["config"] = config.model_dump(mode="json")
        write_text_atomic(self.config_path, json.dumps(data, indent=2) + "\n")
        return config

    def seeds(self) -> list[Task]:
        return read_tasks(self.folder / "seeds.jsonl")

    def program_path(self, pid: str) -> Path:
        return self.folder / "programs" / f"{_safe(pid)}.json"

    def episodes_path(self, pid: str) -> Path:
        return self.folder / "episodes" / f"{_safe(pid)}.episodes.jsonl"

    def proposal_path(self, step: int) -> Path:
        return self.folder / "proposals" / f"step-{step:05d}.json"

    def save(self, record: ProgramRecord) -> None:
        """The record, then its program text (the record is what marks the program as evaluated)."""
        if record.program:
            write_text_atomic(self.program_path(record.id).with_suffix(".py"), record.program)
        write_text_atomic(self.program_path(record.id), record.model_dump_json(indent=1) + "\n")

    def records(self) -> list[ProgramRecord]:
        """Every program record, seeds first then by step; a record that does not parse is bad input."""
        folder = self.folder / "programs"
        out: list[ProgramRecord] = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                out.append(ProgramRecord.model_validate_json(read_text(path, what="program record")))
            except (ValidationError, ValueError) as exc:
                raise BadInputError(
                    f"unreadable program record: {str(exc).splitlines()[0]}", source=str(path)
                ) from None
        return sorted(out, key=lambda r: (-1 if r.step is None else r.step, r.id))

    def proposal(self, step: int) -> ProposalRecord | None:
        path = self.proposal_path(step)
        if not path.is_file():
            return None
        try:
            return ProposalRecord.model_validate_json(read_text(path, what="proposal"))
        except (ValidationError, ValueError):
            return None  # torn by a crash before the rename cannot happen; a foreign file is asked again

    def save_proposal(self, proposal: ProposalRecord) -> None:
        write_text_atomic(self.proposal_path(proposal.step), proposal.model_dump_json(indent=1) + "\n")

    def save_checkpoint(self, checkpoint: Checkpoint) -> None:
        write_text_atomic(self.folder / "checkpoint.json", checkpoint.model_dump_json(indent=1) + "\n")

    def checkpoint(self) -> Checkpoint | None:
        path = self.folder / "checkpoint.json"
        if not path.is_file():
            return None
        return Checkpoint.model_validate_json(read_text(path, what="checkpoint"))


def generation_stats(records: list[ProgramRecord]) -> list[GenerationStats]:
    """Per generation (0 = the seeds): programs, outcomes, and cost and tokens by part."""
    by: dict[int, GenerationStats] = {}
    for r in records:
        g = by.setdefault(r.generation, GenerationStats(generation=r.generation))
        g.programs += 1
        if r.evaluated:
            g.evaluated += 1
            if r.feasible:
                g.feasible += 1
                if r.completion is not None and 0.3 <= r.completion <= 0.7:
                    g.in_band += 1
        else:
            g.rejected += 1
        for part, cost in r.costs.items():
            g.costs[part] = g.costs.get(part, Cost()).add(cost)
    return [by[k] for k in sorted(by)]
