"""A real world server process whose clinic has tools that raise what no tool should: `SystemExit`,
`GeneratorExit` and a bare `BaseException` subclass. Run: `python raising_world_server.py stdio` or
`python raising_world_server.py http PORT`. Used by test_mcp_malformed.py; not a fake of anything (it is
`WorldServer` itself, with three extra tools)."""

from __future__ import annotations

import sys

import anyio

from toolshift.world import Tool, World
from toolshift.world.mcp.serve import WorldServer


class Escape(BaseException):
    """Neither an Exception nor a cancellation."""


RAISES: dict[str, BaseException] = {
    "exit_now": SystemExit(3),
    "generator_exit": GeneratorExit(),
    "escape": Escape("out"),
}


def raising_world() -> World:
    world = World.load("clinic")
    for name, exc in RAISES.items():

        def handler(runtime, args, exc=exc):
            raise exc

        world.add_tool(
            Tool(
                name=name,
                description=f"Raises {type(exc).__name__}.",
                effect="write",
                input_schema={"type": "object", "properties": {}},
                handler=handler,
            )
        )
    return world


def main() -> None:
    server = WorldServer(raising_world())
    if sys.argv[1] == "stdio":
        anyio.run(server.run_stdio)
    else:
        server.run_http(port=int(sys.argv[2]))


if __name__ == "__main__":
    main()
