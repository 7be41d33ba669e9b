"""The package's rooms keep their order: no import against the grain, no circle across rooms, no outsized file.

The order is read from docs/architecture.md ("Rooms, lowest first"), so the page a newcomer reads is the
rule the suite enforces. Every import counts — at module level, inside a function, under TYPE_CHECKING —
because each one is a dependency a reader has to follow. A small AST walk; no extra dependency.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "src" / "toolshift"
ARCHITECTURE = ROOT / "docs" / "architecture.md"
MAX_LINES = 650
LONG_FILES = {
    "world/language/expressions.py": "the expression language's parser and evaluator over one grammar (D180)",
}
"""Files allowed past MAX_LINES, each with why: a file joins this list by a reviewed change, never silently."""


def room_order(text: str, heading: str = "## Rooms, lowest first") -> dict[str, int]:
    """Name → rank from a list of the architecture page (`N. `name`, `name`: …`), lowest first."""
    section = text.split(heading, 1)[1].split("\n#", 1)[0]
    ranks: dict[str, int] = {}
    for rank, line in enumerate(re.findall(r"^\d+\. (.+)$", section, re.M)):
        names = line.split(":", 1)[0]
        for name in re.findall(r"`([a-z_.]+)`", names):
            ranks[name.removeprefix("toolshift.")] = rank
    return ranks


@dataclass(frozen=True)
class Order:
    """The rooms' ranks, and for a room with its own list (`### Inside `world`, lowest first`) its layers'.

    A layer is named under its room (`world.state`); the room's own name in its list is its face, the
    package module every other room imports (`toolshift.world`).
    """

    rooms: dict[str, int]
    layers: dict[str, dict[str, int]]

    @classmethod
    def read(cls, text: str) -> Order:
        layers = {}
        for room in re.findall(r"^### Inside `([a-z_]+)`, lowest first", text, re.M):
            listed = room_order(text, f"### Inside `{room}`, lowest first")
            layers[room] = {("" if n == room else n.removeprefix(room + ".")): r for n, r in listed.items()}
        return cls(room_order(text), layers)

    def place(self, module: str) -> tuple[str, str]:
        """(room, layer) of a module; the layer is "" in a room without layers."""
        parts = module.split(".")[1:] or ["toolshift"]
        for n in range(len(parts), 0, -1):
            room = ".".join(parts[:n])
            if room not in self.rooms:
                continue
            if room not in self.layers:
                return room, ""
            rest = parts[n:]
            for k in range(len(rest), -1, -1):
                if ".".join(rest[:k]) in self.layers[room]:
                    return room, ".".join(rest[:k])
            raise AssertionError(f"{module} is in no layer of docs/architecture.md's list for {room}")
        raise AssertionError(f"{module} is in no room of docs/architecture.md's list")

    def wrong_way(self, module: str, target: str) -> str | None:
        """Why `module` may not import `target`, or None: the target's room (or layer, inside one room) must
        rank strictly lower; rooms (layers) on one line know nothing of each other."""
        (room, layer), (to_room, to_layer) = self.place(module), self.place(target)
        if room != to_room:
            ranks, here, there = self.rooms, room, to_room
            label = {room: room, to_room: to_room}
        elif layer != to_layer:
            ranks, here, there = self.layers[room], layer, to_layer
            label = {k: f"{room}.{k}" if k else room for k in (layer, to_layer)}
        else:
            return None
        if ranks[there] < ranks[here]:
            return None
        return f"{label[here]} is rank {ranks[here]}, {label[there]} rank {ranks[there]}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, modules: set[str]) -> set[str]:
    """The toolshift modules a file imports (a `from m import name` that names a module counts as it)."""
    name = module_name(path)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [f"{source}.{a.name}" for a in node.names] + [source]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target.startswith("toolshift") and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    files = {module_name(p): p for p in PACKAGE.rglob("*.py")}
    return {m: imported_modules(p, set(files)) for m, p in files.items()}


def against_the_grain(graph: dict[str, set[str]], order: Order) -> list[str]:
    """Imports into a room (or, inside one room, a layer) that is not strictly lower."""
    out = []
    for module, targets in graph.items():
        for target in sorted(targets):
            why = order.wrong_way(module, target)
            if why is not None:
                out.append(f"{module} → {target} ({why})")
    return sorted(out)


def room_circles(graph: dict[str, set[str]], order: Order) -> list[list[str]]:
    """Strongly connected groups of modules that span more than one room or layer (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len({order.place(m) for m in group}) > 1:
                    out.append(sorted(group))
    return out


def long_files() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        lines = path.read_text(encoding="utf-8").count("\n")
        if lines > MAX_LINES and rel not in LONG_FILES:
            out.append(f"{rel}: {lines} lines")
    return out


@pytest.fixture(scope="module")
def ranks() -> Order:
    return Order.read(ARCHITECTURE.read_text(encoding="utf-8"))


def test_every_module_is_in_a_listed_room(ranks):
    for module in import_graph():
        ranks.place(module)


def test_no_import_runs_against_the_grain(ranks):
    assert against_the_grain(import_graph(), ranks) == []


def test_no_circle_spans_two_rooms(ranks):
    assert room_circles(import_graph(), ranks) == []


def test_no_file_is_outsized_unless_listed():
    assert long_files() == []
    for rel in LONG_FILES:
        assert (PACKAGE / rel).exists(), f"LONG_FILES names {rel}, which is gone: drop it from the list"


def test_the_check_catches_what_it_is_for(ranks):
    """The rules fire on a made-up graph: an upward import, a sibling import, a circle across two rooms."""
    graph = {
        "toolshift.traces.store": {"toolshift.world.state.runtime"},  # traces sits below world
        "toolshift.world.state.runtime": set(),
        "toolshift.flows.words": {"toolshift.agents.span_picker"},  # siblings: neither knows the other
        "toolshift.agents.span_picker": {"toolshift.flows.words"},
        "toolshift.report.page": {"toolshift.intervals"},  # downward: fine
        "toolshift.intervals": set(),
    }
    wrong = against_the_grain(graph, ranks)
    assert [w.split(" ")[0] for w in wrong] == [
        "toolshift.agents.span_picker",
        "toolshift.flows.words",
        "toolshift.traces.store",
    ]
    assert room_circles(graph, ranks) == [["toolshift.agents.span_picker", "toolshift.flows.words"]]


def test_the_check_sees_the_layers_inside_the_world(ranks):
    """Inside the world: the spec language may not name the runtime; MCP serving may use it; the face sits on top."""
    graph = {
        "toolshift.world.language.actions": {"toolshift.world.state.runtime"},
        "toolshift.world.state.runtime": {
            "toolshift.world.language.bounds",
            "toolshift.world.language.actions",
        },
        "toolshift.world.language.bounds": {"toolshift.world.toolerror"},
        "toolshift.world.toolerror": {"toolshift.world.limits"},
        "toolshift.world.limits": set(),
        "toolshift.world.mcp.serve": {"toolshift.world.state.runtime", "toolshift.world.tau2.files"},
        "toolshift.world.tau2.files": set(),
        "toolshift.world": {"toolshift.world.state.runtime"},
        "toolshift.agents.loop": {"toolshift.world.mcp.serve"},
    }
    wrong = against_the_grain(graph, ranks)
    assert [w.split(" ")[0] for w in wrong] == [
        "toolshift.world.language.actions",
        "toolshift.world.mcp.serve",
    ]
    assert "tau2" in wrong[1]  # serving and other benchmarks' worlds are siblings
    assert room_circles(graph, ranks) == [
        ["toolshift.world.language.actions", "toolshift.world.state.runtime"]
    ]
