"""The gateway: one MCP server in front of MCP backends, with a chain of middleware (record, flows).

`build_gateway(config)` makes the `Gateway` (backends + chain); `GatewayServer` serves it over stdio,
streamable HTTP or in-memory. See docs/formats.md (`toolshift.gateway/1`) and docs/usage.md (`toolshift gateway`).
"""

from toolshift.gateway.build import build_gateway
from toolshift.gateway.config import GatewayConfig, load_config
from toolshift.gateway.core import Gateway
from toolshift.gateway.server import GatewayServer

__all__ = ["Gateway", "GatewayConfig", "GatewayServer", "build_gateway", "load_config"]
