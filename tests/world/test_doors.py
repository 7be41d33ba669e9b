"""The doors of the HTTP servers and of world files: the Host rule on every path (world server, gateway), a
token beyond loopback (`world serve` as the gateway), and a saved world whose schema is not its spec's refused."""

from __future__ import annotations

import sqlite3

import httpx
import pytest
from typer.testing import CliRunner

from toolshift.cli import app
from toolshift.errors import BadInputError
from toolshift.world import World, load_domain
from toolshift.world.mcp.http_guard import host_allowed
from toolshift.world.mcp.serve import WorldServer, http_server_thread

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def test_the_host_rule():
    assert host_allowed("127.0.0.1:8765", "127.0.0.1") and host_allowed("localhost", "127.0.0.1")
    assert host_allowed("[::1]:80", "::1") and host_allowed("LOCALHOST:1", "localhost")
    assert not host_allowed("evil.example", "127.0.0.1") and not host_allowed(
        "evil.example:8765", "127.0.0.1"
    )
    assert not host_allowed(None, "127.0.0.1") and not host_allowed("127.0.0.1.evil.example", "127.0.0.1")
    assert host_allowed("anything.example", "0.0.0.0")  # beyond loopback the token guards instead


def test_world_server_answers_421_to_a_foreign_host_and_needs_its_token():
    server = WorldServer(World(load_domain("clinic")))
    with http_server_thread(server, token="tok-w1") as url:
        base = url.removesuffix("/mcp")
        assert httpx.post(url, json=INIT, headers=HEADERS, timeout=60).status_code == 401
        auth = {**HEADERS, "authorization": "Bearer tok-w1"}
        assert httpx.post(url, json=INIT, headers=auth, timeout=60).status_code == 200
        evil = {**auth, "host": "evil.example"}
        assert httpx.post(url, json=INIT, headers=evil, timeout=60).status_code == 421
        assert httpx.get(base + "/anything", headers=evil, timeout=60).status_code == 421


def test_gateway_answers_421_on_every_path():
    from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
    from toolshift.gateway.server import http_gateway_thread

    gw = build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic"}]))
    with http_gateway_thread(GatewayServer(gw)) as url:
        base = url.removesuffix("/mcp")
        for path in ("/health", "/metrics"):
            assert httpx.get(base + path, timeout=60).status_code == 200
            assert httpx.get(base + path, headers={"host": "evil.example"}, timeout=60).status_code == 421


def test_world_serve_beyond_loopback_needs_a_token(monkeypatch):
    import uvicorn

    served: list[str] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: served.append(k.get("host")))
    monkeypatch.delenv("TOOLSHIFT_WORLD_TOKEN", raising=False)
    result = CliRunner().invoke(app, ["world", "serve", "clinic", "--transport", "http", "--host", "0.0.0.0"])
    assert isinstance(result.exception, BadInputError) and served == []  # `toolshift` maps it to exit 2
    assert "TOOLSHIFT_WORLD_TOKEN" in str(result.exception)
    monkeypatch.setenv("TOOLSHIFT_WORLD_TOKEN", "tok-w2")
    result = CliRunner().invoke(app, ["world", "serve", "clinic", "--transport", "http", "--host", "0.0.0.0"])
    assert result.exit_code == 0 and served == ["0.0.0.0"], result.output


def _saved(tmp_path) -> tuple[World, str]:
    world = World(load_domain("clinic"))
    path = str(tmp_path / "clinic.sqlite")
    world.save(path)
    return world, path


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            "CREATE TRIGGER t_inv AFTER UPDATE ON patient BEGIN UPDATE invoice SET amount = 0; END",
            "extra trigger 't_inv'",
        ),
        ("CREATE VIEW v_p AS SELECT * FROM patient", "extra view 'v_p'"),
        ("CREATE INDEX ix_extra ON invoice(amount)", "extra index 'ix_extra'"),
        ("DROP INDEX ix_invoice_patient_id", "missing index 'ix_invoice_patient_id'"),
        ("CREATE TABLE side(x)", "extra table 'side'"),
    ],
)
def test_a_world_file_whose_schema_differs_from_its_spec_is_refused_naming_it(tmp_path, sql, named):
    _, path = _saved(tmp_path)
    assert World.open(path).name == "clinic"  # as saved: opens
    conn = sqlite3.connect(path)
    conn.execute(sql)
    conn.commit()
    conn.close()
    with pytest.raises(BadInputError) as err:
        World.open(path)
    assert named in str(err.value) and "clinic.sqlite" in str(err.value)
