"""The report's sections: one small renderer per kind of result, in page order.

A renderer names the result kinds it draws on (`toolshift.report.inputs.KINDS`) and returns its
sections, or none when its kinds are absent. A capability's results join the report by adding a
kind to `inputs.classify` and a renderer here; nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from toolshift.report.inputs import Inputs
from toolshift.report.page import Section


@dataclass
class Options:
    """What the command line sets for the sections."""

    threshold: float = 0.3
    """θ of the flows' deciders."""
    flow_tasks: str = "test"
    """Which tasks a given flow is replayed on (all, train or test)."""
    resamples: int = 1000


@dataclass
class Context:
    inputs: Inputs
    options: Options = field(default_factory=Options)
    progress: Callable[[str], None] = lambda _message: None


@dataclass(frozen=True)
class Renderer:
    name: str
    kinds: tuple[str, ...]
    """The section is drawn when any of these kinds is among the inputs (empty: always)."""
    render: Callable[[Context], list[Section]]


def renderers() -> list[Renderer]:
    """Every renderer, in the order the page shows them."""
    from toolshift.report.sections import benchmark, capabilities, files, flows, loop, runs

    return [
        Renderer("runs", ("episodes", "tau2-results"), runs.render),
        Renderer("benchmark", ("bench-build",), benchmark.render),
        Renderer("flows", ("catalog", "decision-log"), flows.render),
        Renderer("steward", ("steward-results",), capabilities.render_steward),
        Renderer("evolve", ("evolve-run",), capabilities.render_evolve),
        Renderer("loop", ("loop-results",), loop.render_loop),
        Renderer(
            "files", (), files.render
        ),  # the inputs come last, folded: the page leads with results (D323)
    ]


def render_all(ctx: Context) -> list[Section]:
    out: list[Section] = []
    for r in renderers():
        if r.kinds and not ctx.inputs.of(*r.kinds):
            continue
        ctx.progress(r.name)
        out += r.render(ctx)
    return out
