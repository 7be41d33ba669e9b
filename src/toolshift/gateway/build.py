"""Assemble a gateway from its config: the middleware chain in the configured order, and the start-up checks.

`build_gateway` makes the `Gateway`; `prepare` reaches every backend once before serving (an unreachable
one is an error at start, naming it), checks a flow against the backend's tools, and writes the catalog
the recordings are read with. The chain's order is the config's, outermost first; `record` must come
before `flows`, so it records what the agent called and what the backend answered, never the lookups as
calls. The steward middleware (`toolshift.gateway.supply`) comes first: it rewrites `list_tools` to
Steward's supplied view and answers Steward's own tools in `call`, so inner middleware see world calls only.
"""

from __future__ import annotations

from toolshift.errors import BadInputError
from toolshift.gateway.chain import Middleware
from toolshift.gateway.config import GatewayConfig
from toolshift.gateway.core import Gateway


def record_domain(config: GatewayConfig) -> str:
    first = config.backends[0]
    if config.record is not None and config.record.domain:
        return config.record.domain
    if first.world is not None:
        from toolshift.world import load_domain

        return load_domain(first.world).spec.name
    return first.domain or first.name


def build_gateway(config: GatewayConfig) -> Gateway:
    """The gateway with its middleware; nothing is reached yet (see `prepare`)."""
    middleware: list[Middleware] = []
    mw = config.middleware
    if "record" in mw and "flows" in mw and mw.index("record") > mw.index("flows"):
        raise BadInputError(
            "record must come before flows in the middleware list (it records the agent's calls, not the lookups)",
            field="middleware",
        )
    gateway = Gateway(config)
    from toolshift.gateway.secrets import Redactor, scrub_logs

    known = (config.token() or "", *(v for b in config.backends for v in b.env.values()))
    gateway.redactor = Redactor(
        secrets=tuple(s for s in known if s)
    )  # whatever the chain: logs never hold them
    scrub_logs(gateway.redactor)
    for name in config.middleware:
        if name == "record":
            from toolshift.gateway.record import RecordMiddleware

            assert config.record is not None
            first = next(iter(gateway.backends.values()))
            middleware.append(
                RecordMiddleware(
                    config.record,
                    domain=record_domain(config),
                    secrets=(config.token() or "", *(v for b in config.backends for v in b.env.values())),
                    ecosystem_version=first.ecosystem_version,
                )
            )
        elif name == "flows":
            from toolshift.gateway.flows import FlowsMiddleware

            assert config.flows is not None
            middleware.append(FlowsMiddleware(config.flows))
        elif name == "steward":
            from toolshift.gateway.supply import StewardMiddleware

            middleware.append(StewardMiddleware(config))
        elif name == "watch":
            from toolshift.gateway.watch import WatchMiddleware

            middleware.append(WatchMiddleware(config))
    gateway.use(middleware)
    return gateway


async def prepare(gateway: Gateway) -> None:
    """Start-up checks: every backend reachable, tool names unique, the flow's catalog the backend's."""
    tools = await gateway.probe()
    for m in gateway.middleware:
        recover = getattr(m, "recover", None)
        if recover is not None:
            recover()  # sessions a killed gateway left open, closed from its journal
        check = getattr(m, "check_backend", None)
        if check is not None:
            check(tools)
        write = getattr(m, "write_catalog", None)
        if write is not None:
            write(tools)
