"""Serve an ASGI app on the caller's event loop, on a loopback port of its own, for the length of a block.

An episode of an outside agent opens two such servers, its MCP door and (for a model toolshift serves) the
model's wire APIs; both live and die with the episode, on the episode's own event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any, Literal


def _bound_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(64)
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def serving_app(
    app: Any,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    name: str = "server",
    lifespan: Literal["on", "off"] = "off",
) -> AsyncIterator[str]:
    """Serve `app` with uvicorn on this event loop at `port` (0: one of its own); yields `http://host:port`.

    Uvicorn's signal handling is left out: the command that runs the episode owns SIGINT and SIGTERM.
    """
    import uvicorn

    class _Quiet(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    sock = _bound_socket(host, port)
    bound = sock.getsockname()[1]
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan=lifespan, timeout_keep_alive=30
    )
    server = _Quiet(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name=f"{name}-{bound}")
    try:
        while not server.started:
            if task.done():
                task.result()
                raise RuntimeError(f"{name} did not start on {host}:{bound}")
            await asyncio.sleep(0.005)
        yield f"http://{host}:{bound}"
    finally:
        server.should_exit = True
        done, _ = await asyncio.wait({task}, timeout=3)
        if not done:  # a client still holds a connection open: cut it rather than wait
            server.force_exit = True
            done, _ = await asyncio.wait({task}, timeout=5)
        if not done:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        sock.close()
