"""Secrets never reach a recording: not in arguments, results, errors, `world_diff`, the task id or log lines."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import yaml

from toolshift.gateway import GatewayConfig, GatewayServer, build_gateway
from toolshift.gateway.build import prepare
from toolshift.gateway.secrets import Redactor
from toolshift.gateway.server import in_memory_client

TOKEN = "gw-token-Zq81xVw3"
PASSWORD = "hunter2-Plk9"
API_KEY = "sk-live-Mq7Rt0"
NEW_PASSWORD = "correct-horse-77"

VAULT = {
    "format": "toolshift.domain/1",
    "name": "vault",
    "title": "Accounts",
    "policy": "Keep secrets.",
    "seed": 1,
    "entities": [
        {
            "name": "account",
            "key": "account_id",
            "id_format": "A{:03d}",
            "rows": 3,
            "fields": [
                {"name": "account_id", "type": "string"},
                {"name": "owner", "type": "string", "gen": {"kind": "person_name"}},
                {"name": "password", "type": "string", "required": False, "default": "changeme"},
                {"name": "api_key", "type": "string", "required": False, "default": "none"},
                {"name": "note", "type": "string", "required": False, "default": ""},
            ],
        }
    ],
    "actions": [
        {
            "name": "set_password",
            "description": "Set an account's password; returns the account.",
            "effect": "write",
            "params": [
                {"name": "account_id", "type": "ref", "ref": "account"},
                {"name": "password", "type": "string"},
            ],
            "code": "update('account', account_id, password=password)\nreturn get('account', account_id)",
        },
        {
            "name": "rotate_key",
            "description": "Give an account a new API key.",
            "effect": "write",
            "params": [
                {"name": "account_id", "type": "ref", "ref": "account"},
                {"name": "key", "type": "string"},
            ],
            "code": "update('account', account_id, api_key=key)\nreturn 'ok'",
        },
        {
            "name": "set_note",
            "description": "Set a free-text note.",
            "effect": "write",
            "params": [
                {"name": "account_id", "type": "ref", "ref": "account"},
                {"name": "note", "type": "string"},
            ],
            "preconditions": [
                {"check": "len(note) < 40", "code": "too_long", "message": "note too long: {note}"}
            ],
            "code": "update('account', account_id, note=note)\nreturn get('account', account_id)['note']",
        },
    ],
}


def _record(tmp_path: Path, monkeypatch, calls, *, task: str | None = None) -> str:
    monkeypatch.setenv("TOOLSHIFT_GATEWAY_TOKEN", TOKEN)
    spec = tmp_path / "vault.yaml"
    spec.write_text(yaml.safe_dump(VAULT), encoding="utf-8")
    out = tmp_path / "rec"
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "vault", "world": str(spec)}], middleware=["record"], record={"out": str(out)}
        )
    )
    server = GatewayServer(gw)

    async def main() -> None:
        await prepare(gw)
        async with gw.running(), in_memory_client(server) as client:
            await client.list_tools()
            for name, args in calls:
                await client.call_tool(name, args, meta={"toolshift/task": task} if task else None)

    anyio.run(main)
    return (out / "vault.episodes.jsonl").read_text(encoding="utf-8")


def test_seven_planted_secrets_are_absent_from_the_recording(tmp_path, monkeypatch):
    calls = [
        ("set_password", {"account_id": "A001", "password": PASSWORD}),  # argument, result, diff
        ("rotate_key", {"account_id": "A002", "key": API_KEY}),  # arg under a plain name, diff by field name
        ("get_account", {"account_id": "A002"}),  # result by key name
        ("set_note", {"account_id": "A003", "note": f"token {TOKEN}"}),  # the gateway's own token, in a diff
        ("set_note", {"account_id": "A003", "note": f"pw {PASSWORD} and a very long text here"}),  # an error
        ("set_note", {"account_id": "A001", "note": f"password={NEW_PASSWORD}"}),  # free text name=value
    ]
    text = _record(tmp_path, monkeypatch, calls, task=f"task with {TOKEN}")
    planted = [PASSWORD, API_KEY, TOKEN, NEW_PASSWORD, "changeme"]
    found = [p for p in planted if p in text]
    assert found == [], found
    assert "[redacted]" in text
    import json

    episode = json.loads(text.splitlines()[-1])
    results = [m["content"] for m in episode["messages"] if m["role"] == "tool"]
    assert json.loads(results[0])["account_id"] == "A001"  # still JSON, and not everything is redacted
    assert json.loads(results[0])["password"] == "[redacted]"
    assert [c["after"] for c in episode["world_diff"] if c["field"] in ("password", "api_key")] == [
        "[redacted]"
    ] * 2


def test_token_is_scrubbed_from_log_lines(caplog):
    from toolshift.gateway.secrets import scrub_logs

    r = Redactor((), ("tok-Secret-123",))
    scrub_logs(r)
    with caplog.at_level(logging.INFO):
        logging.getLogger("toolshift.test").info("sent %s to the backend", "tok-Secret-123")
    assert "tok-Secret-123" not in caplog.text and "[redacted]" in caplog.text


def test_free_text_pairs_and_json_results():
    r = Redactor(("ssn",))
    assert r.text('{"user": "bo", "ssn": "123", "nested": {"api_key": "k-1234"}}') == (
        '{"user": "bo", "ssn": "[redacted]", "nested": {"api_key": "[redacted]"}}'
    )
    assert r.scrub("the key k-1234 again") == "the key [redacted] again"  # learned from the result
    assert r.scrub("Authorization: Bearer abc.def failed") == "Authorization: [redacted] failed"
    assert r.text("plain result") == "plain result"


def test_redacting_twice_keeps_json_results_json():
    import json

    r = Redactor()
    once = r.text('{"password": "pw-12345", "n": 1}')
    assert json.loads(r.scrub(once)) == {"password": "[redacted]", "n": 1}


def test_a_gateway_without_recording_keeps_its_token_out_of_log_lines(monkeypatch, caplog):
    monkeypatch.setenv("TOOLSHIFT_GATEWAY_TOKEN", "gw-token-NoRec-551")
    gw = build_gateway(GatewayConfig(backends=[{"name": "clinic", "world": "clinic", "env": {}}]))
    with caplog.at_level(logging.WARNING):
        logging.getLogger("mcp.server").warning("rejected header Bearer %s", "gw-token-NoRec-551")
    assert gw.redactor is not None and "gw-token-NoRec-551" not in caplog.text


GENERATED_PASSWORD = "q7#Vd!2pLx@9Zr$4Kt^w"
"""What a password manager makes, typed where a name should go (issue 56: free text was not scanned)."""


def test_a_password_typed_into_a_search_field_and_key_formats_in_free_text_are_not_recorded(tmp_path):
    out = tmp_path / "rec"
    gw = build_gateway(
        GatewayConfig(
            backends=[{"name": "clinic", "world": "clinic"}], middleware=["record"], record={"out": str(out)}
        )
    )
    server = GatewayServer(gw)
    aws, github = "AKIAIOSFODNN7EXAMPLE", "ghp_1234567890abcdefghijklmnopqrstuvwxyzAB"

    async def main() -> None:
        await prepare(gw)
        async with gw.running(), in_memory_client(server) as client:
            await client.call_tool("search_patients", {"full_name": GENERATED_PASSWORD})
            await client.call_tool("search_patients", {"full_name": f"key {aws} and {github}"})
            await client.call_tool("search_patients", {"full_name": "Maria Garcia", "limit": 2})

    anyio.run(main)
    text = (out / "clinic.episodes.jsonl").read_text(encoding="utf-8")
    assert [s for s in (GENERATED_PASSWORD, aws, github) if s in text] == []
    assert text.count("[redacted]") >= 3 and "Maria Garcia" in text  # a name is not a secret


def test_the_free_text_scanner_catches_key_formats_and_random_tokens_not_words():
    r = Redactor()
    assert r.scrub("search for Tr0ub4dor&3xY!") == "search for [redacted]!"
    assert r.scrub("sk_live_4eC39HqLyjWDarjtT1zdp7dc") == "[redacted]"
    assert r.scrub("c2VjcmV0LXRva2VuLWZvci1hcGktYWNjZXNzLTEyMzQ1Njc4OQ==") == "[redacted]"
    for plain in ("Find patient Maria Garcia born 1980-02-03", "hana707@vendors.example.net", "APT-00003",
                  "https://example.com/a/b?c=1", "ap_search_vendors_then_create_vendor_invoice"):  # fmt: skip
        assert r.scrub(plain) == plain
    assert (
        Redactor(scan=False).scrub("sk_live_4eC39HqLyjWDarjtT1zdp7dc") == "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
    )
