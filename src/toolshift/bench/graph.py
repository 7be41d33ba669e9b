"""Tool dependency graphs: an edge A → B when a value A returns (an entity key) can fill a parameter of B.

Values are typed by entity key: `key:order` is any order's key, wherever it appears (the key of
an order row, or a `ref` field pointing at an order). A tool's outputs are the key types present in
the rows it returns; its inputs are its parameters typed the same way, plus the `lookup` fields a
user would quote (`lookup:customer.email`). Query-type starting points are the read tools that take
such a user-known value. Format `toolshift.bench-graph/1` (docs/formats.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from toolshift.errors import BadInputError
from toolshift.fileio import atomic_path, read_json, write_text_atomic
from toolshift.world.language.spec import DomainSpec, EntitySpec
from toolshift.world.state.tools import Tool

GRAPH_FORMAT = "toolshift.bench-graph/1"

_INSERT = re.compile(r"""insert\(\s*["']([a-z][a-z0-9_]*)["']""")


@dataclass
class Param:
    """One parameter of a tool with the value type that can fill it."""

    name: str
    vtype: str
    """`key:<entity>`, `lookup:<entity>.<field>` or `value:<spec type>`."""
    required: bool
    spec_type: str
    values: list[str] | None = None


@dataclass
class ToolSignature:
    """What a tool takes and returns, in entity-key types."""

    name: str
    effect: str
    kind: str
    """get / list / search / create / update / delete / relation / action."""
    entity: str | None
    """The entity whose rows it returns (reads) or changes (entity writes); None for actions."""
    rows_of: str | None
    """The entity whose rows the result holds (relations: the target entity)."""
    params: list[Param] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)
    query_start: bool = False
    """A read taking a value the user knows (a lookup field)."""
    action: str | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def key_params(self) -> list[Param]:
        return [p for p in self.params if p.vtype.startswith("key:")]


class GraphEdge(BaseModel):
    source: str
    target: str
    vtype: str
    param: str


class GraphNode(BaseModel):
    tool: str
    effect: str
    kind: str
    entity: str | None = None
    params: dict[str, str] = Field(default_factory=dict)
    outputs: list[str] = Field(default_factory=list)
    query_start: bool = False


class DependencyGraph(BaseModel):
    """One domain's tool dependency graph (the stored JSON)."""

    format: str = GRAPH_FORMAT
    domain: str
    nodes: list[GraphNode]
    edges: list[GraphEdge]

    def successors(self, tool: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.source == tool]

    def predecessors(self, tool: str) -> list[GraphEdge]:
        return [e for e in self.edges if e.target == tool]

    def write_tools(self) -> list[str]:
        return [n.tool for n in self.nodes if n.effect == "write"]

    def query_starts(self) -> list[str]:
        return [n.tool for n in self.nodes if n.query_start]

    def reachable_writes(self) -> list[str]:
        """Write tools whose key parameters can all be filled from reads chained off query starts."""
        produced: set[str] = set()
        done: set[str] = set()
        changed = True
        while changed:
            changed = False
            for n in self.nodes:
                if n.tool in done or n.effect != "read":
                    continue
                keys = [v for v in n.params.values() if v.startswith("key:")]
                if n.query_start or (keys and all(v in produced for v in keys)):
                    done.add(n.tool)
                    produced.update(n.outputs)
                    changed = True
        return [
            n.tool
            for n in self.nodes
            if n.effect == "write" and all(v in produced for v in n.params.values() if v.startswith("key:"))
        ]

    def save(self, path: Path) -> None:
        write_text_atomic(path, self.model_dump_json(indent=1) + "\n")

    @classmethod
    def load(cls, path: Path) -> DependencyGraph:
        data = read_json(path, what="graph")
        if not isinstance(data, dict) or data.get("format") != GRAPH_FORMAT:
            raise BadInputError(
                f"unknown graph format {data.get('format') if isinstance(data, dict) else None!r}",
                source=str(path),
                field="format",
            )
        return cls.model_validate(data)


def _row_outputs(e: EntitySpec) -> list[str]:
    out = [f"key:{e.name}"]
    out += [f"key:{f.ref}" for f in e.fields if f.type == "ref" and f.ref]
    return list(dict.fromkeys(out))


def _field_vtype(e: EntitySpec, name: str) -> tuple[str, str, list[str] | None]:
    if name == e.key:
        return f"key:{e.name}", "string", None
    f = e.field(name)
    if f is None:
        return "value:int", "int", None  # paging
    if f.type == "ref" and f.ref:
        return f"key:{f.ref}", "ref", None
    if name in e.lookup:
        return f"lookup:{e.name}.{name}", f.type, f.values
    return f"value:{f.type}", f.type, f.values


def signature(tool: Tool, spec: DomainSpec) -> ToolSignature:
    """Type a compiled tool's parameters and outputs from its `meta` and the spec."""
    kind = str(tool.meta.get("kind", "action"))
    props = tool.input_schema.get("properties", {})
    required = set(tool.input_schema.get("required", []))
    params: list[Param] = []
    if kind == "action":
        act = next((a for a in spec.actions if spec.tool_prefix + a.name == tool.name), None)
        if act is None:
            act = next(a for a in spec.actions if a.name == tool.meta.get("action"))
        for p in act.params:
            vt = f"key:{p.ref}" if p.type == "ref" and p.ref else f"value:{p.type}"
            params.append(Param(p.name, vt, p.name in required, p.type, p.values))
        inserted = [e for e in _INSERT.findall(act.code) if e in {x.name for x in spec.entities}]
        outputs = list(dict.fromkeys(f"key:{e}" for e in inserted))
        return ToolSignature(
            tool.name, tool.effect, kind, None, None, params, outputs, False, action=act.name
        )
    ent = spec.entity(str(tool.meta["entity"]))
    rows_of = str(tool.meta.get("to", ent.name)) if kind == "relation" else ent.name
    for name in props:
        if name in ("limit", "offset"):
            continue
        if kind == "relation":
            vt, st, vals = f"key:{ent.name}", "string", None
        else:
            vt, st, vals = _field_vtype(ent, name)
        params.append(Param(name, vt, name in required, st, vals))
    outputs = [] if kind == "delete" else _row_outputs(spec.entity(rows_of))
    query_start = tool.effect == "read" and (
        (kind == "get" and ent.key in ent.lookup)
        or (kind == "search" and any(p.vtype.startswith("lookup:") for p in params))
        or (kind == "list" and bool(ent.lookup) and ent.rows <= 60)
    )
    return ToolSignature(tool.name, tool.effect, kind, ent.name, rows_of, params, outputs, query_start)


def signatures(tools: list[Tool], spec: DomainSpec) -> dict[str, ToolSignature]:
    return {t.name: signature(t, spec) for t in tools}


def build_graph(spec: DomainSpec, sigs: dict[str, ToolSignature]) -> DependencyGraph:
    """Edges from every tool that returns a key type to every tool with a parameter of that type."""
    nodes = [
        GraphNode(
            tool=s.name,
            effect=s.effect,
            kind=s.kind,
            entity=s.entity,
            params={p.name: p.vtype for p in s.params},
            outputs=s.outputs,
            query_start=s.query_start,
        )
        for s in sigs.values()
    ]
    edges: list[GraphEdge] = []
    for a in sigs.values():
        for b in sigs.values():
            if a.name == b.name:
                continue
            for p in b.key_params:
                if p.vtype in a.outputs:
                    edges.append(GraphEdge(source=a.name, target=b.name, vtype=p.vtype, param=p.name))
    return DependencyGraph(domain=spec.name, nodes=nodes, edges=edges)


def require_usable(graph: DependencyGraph) -> list[str]:
    """The write tools a task can reach from a query start; a graph with none is bad input, by name."""
    if not graph.query_starts():
        raise BadInputError(
            "dependency graph has no query-type starting point (no read takes a `lookup` field)",
            source=graph.domain,
        )
    writes = graph.reachable_writes()
    if not writes:
        raise BadInputError(
            "dependency graph has no path from a query-type start to a write tool", source=graph.domain
        )
    return writes


def render_png(graph: DependencyGraph, path: Path) -> None:
    """Draw the graph: query starts green, other reads blue, writes orange; edges labelled by type."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import networkx as nx

    g = nx.DiGraph()
    for n in graph.nodes:
        g.add_node(n.tool)
    for e in graph.edges:
        if g.has_edge(e.source, e.target):
            continue
        g.add_edge(e.source, e.target, label=e.vtype.removeprefix("key:"))
    colors = [
        "#4caf50" if n.query_start else ("#ff9800" if n.effect == "write" else "#64b5f6") for n in graph.nodes
    ]
    fig, ax = plt.subplots(figsize=(16, 12))
    pos = _columns(graph)
    nx.draw_networkx_edges(
        g, pos, ax=ax, alpha=0.2, arrows=True, arrowsize=8, node_size=900, connectionstyle="arc3,rad=0.15"
    )
    nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=900, alpha=0.9)
    nx.draw_networkx_labels(g, pos, ax=ax, font_size=7)
    ax.set_title(
        f"{graph.domain}: {len(graph.nodes)} tools, {len(graph.edges)} edges "
        "(green: query starts, blue: reads, orange: writes)"
    )
    ax.axis("off")
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format=Path(path).suffix.lstrip(".") or "png")
    plt.close(fig)


def _columns(graph: DependencyGraph) -> dict[str, tuple[float, float]]:
    """Three columns, left to right: query starts, other reads, writes (deterministic, no solver)."""
    cols: list[list[str]] = [[], [], []]
    for n in graph.nodes:
        cols[0 if n.query_start else (2 if n.effect == "write" else 1)].append(n.tool)
    pos: dict[str, tuple[float, float]] = {}
    for x, names in enumerate(cols):
        for i, name in enumerate(names):
            pos[name] = (float(x), -(i + 0.5 * (x % 2)) / max(len(names), 1))
    return pos


def graph_summary(graph: DependencyGraph) -> dict[str, Any]:
    return {
        "tools": len(graph.nodes),
        "edges": len(graph.edges),
        "query_starts": len(graph.query_starts()),
        "writes": len(graph.write_tools()),
        "reachable_writes": len(graph.reachable_writes()),
    }
