"""`gateway check` reaches every backend and lists each; `/metrics` speaks Prometheus' text format to a scraper."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import anyio
import httpx

from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.server import http_gateway_thread, in_memory_client
from toolshift.world.mcp.serve import free_port

# Prometheus text exposition format 0.0.4: comment lines, then `name value` (no labels here).
SAMPLE = re.compile(r"^[a-zA-Z_:][a-zA-Z0-9_:]* -?(?:[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?|NaN|[+-]Inf)$")
META = re.compile(r"^# (?:HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* (?:counter|gauge))$")


def test_check_lists_every_backend_and_fails_naming_each_unreachable_one():
    dead = [f"http://127.0.0.1:{free_port()}/mcp" for _ in range(2)]
    done = subprocess.run(
        [sys.executable, "-m", "toolshift", "gateway", "check", "--world", "clinic",
         "--url", f"first={dead[0]}", "--url", f"second={dead[1]}", "--world", "lib=library"],
        capture_output=True, text=True, timeout=300, check=False, env={**os.environ, "COLUMNS": "300"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stdout.strip().splitlines()
    assert len(lines) == 4, done.stdout  # one line per backend, the unreachable ones too
    by_name = {re.search(r"'(\w+)'", x).group(1): x for x in lines}  # type: ignore[union-attr]
    assert "reachable, 41 tools" in by_name["clinic"] and "reachable, 47 tools" in by_name["lib"]
    assert "unreachable" in by_name["first"] and "unreachable" in by_name["second"]
    assert done.stderr.count("\n") == 1 and "2 of 4" in done.stderr and "first, second" in done.stderr


def test_metrics_in_prometheus_text_format_beside_json():
    gw = build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic"}]))
    server = GatewayServer(gw)
    with http_gateway_thread(server) as url:
        base = url.removesuffix("/mcp")

        async def calls() -> None:
            async with gw.running(), in_memory_client(server) as client:
                await client.call_tool("get_appointment", {"appointment_id": "APT-00003"})

        anyio.run(calls)
        scraped = httpx.get(
            f"{base}/metrics", headers={"accept": "text/plain;version=0.0.4;q=0.9,*/*;q=0.1"}, timeout=60
        )
        assert scraped.status_code == 200 and scraped.headers["content-type"].startswith(
            "text/plain; version=0.0.4"
        )
        lines = scraped.text.splitlines()
        assert scraped.text.endswith("\n") and all(SAMPLE.match(x) or META.match(x) for x in lines), (
            scraped.text
        )
        values = dict(x.split(" ") for x in lines if not x.startswith("#"))
        assert "toolshift_gateway_calls_total" in values and "toolshift_gateway_sessions_open" in values
        assert "# TYPE toolshift_gateway_calls_total counter" in lines
        assert (
            httpx.get(f"{base}/metrics?format=prometheus", timeout=60).text
            == httpx.get(
                f"{base}/metrics", headers={"accept": "application/openmetrics-text"}, timeout=60
            ).text
        )
        as_json = httpx.get(f"{base}/metrics", timeout=60).json()  # the default stays JSON
        assert as_json["calls"] == int(values["toolshift_gateway_calls_total"])
