"""The record middleware: every client session's calls and results as one episode (`toolshift.episode/1`).

What is recorded: each call the client made (tool name as the client saw it, arguments with secrets
redacted) and the backend's result (text as the client reads it, the error flag), in order, one call per
assistant turn; the row changes a toolshift world reported, folded into `world_diff`; which calls a
lookup answered and which lookups the flows middleware made after each call (`source["gateway"]`).

What is not: the conversation. The gateway sees calls, not the model's text, the user's messages or the
system prompt, so an episode has no user or system messages, no token usage, no outcome (nothing judges
it), and calls the client made in parallel become consecutive turns. The task id is the client's
`_meta["toolshift/task"]` when it sends one, else the session id.

Secrets (`toolshift.gateway.secrets`): values under names that look secret (password, token, api key,
secret, credential, authorization, cookie, private key) or listed in `record.redact` are written
`[redacted]` in arguments, in JSON results and in `world_diff` (by field name); the gateway's bearer
token, every backend environment value and every value once seen under a secret name are redacted
wherever they appear (arguments, results, errors, diffs, the task id, log lines), and `name: value`
pairs with a secret name are redacted in free text.

Files: `<out>/<domain>.episodes.jsonl`, created with its header atomically, then appended one episode a line,
flushed and fsynced as each session ends (a torn last line from a crash is cut on the next open), and
`<out>/<domain>.catalog.json` from the backend's tool annotations (so `toolshift traces stats` and
`toolshift flows learn` read the folder as it is). Sessions still open at a graceful shutdown are written
with `termination_reason: gateway_shutdown`. Each call is also journalled as it completes
(`toolshift.gateway.journal`: appended and fsynced), so a kill -9 loses at most the call in flight: the
next start writes the sessions it left open as `gateway_killed` episodes.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types

from toolshift.gateway.chain import CallOutcome, GatewaySession, Middleware, Next
from toolshift.gateway.config import RecordConfig
from toolshift.gateway.journal import Journal, Orphan
from toolshift.gateway.secrets import REDACTED, Redactor, scrub_logs

__all__ = ["REDACTED", "RecordMiddleware"]

RECORDED_RESULT_CHARS = 20_000


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


class _Recording:
    def __init__(self, session: GatewaySession) -> None:
        self.session = session
        self.started = _now()
        self.messages: list[dict[str, Any]] = []
        self.changes: list[Any] = []
        self.changes_complete = True
        self.calls: list[dict[str, Any]] = []


class RecordMiddleware(Middleware):
    """Writes one episode per client session (see the module doc for what is and is not in it)."""

    name = "record"

    def __init__(
        self,
        config: RecordConfig,
        *,
        domain: str,
        secrets: tuple[str, ...] = (),
        ecosystem_version: str | None = None,
    ) -> None:
        self.config = config
        self.domain = domain
        self.ecosystem_version = ecosystem_version
        self.redactor = Redactor(config.redact, tuple(s for s in secrets if s))
        scrub_logs(self.redactor)
        self.path = Path(config.out) / f"{domain}.episodes.jsonl"
        self.journal = Journal(Path(config.out) / f"{domain}.journal.jsonl")
        self.recovered = 0
        self._lock = threading.Lock()
        self._fh: Any = None
        self.written = 0

    # --- files ---------------------------------------------------------------------------------

    def write_catalog(self, tools: list[types.Tool]) -> Path:
        """The backend's catalog beside the episodes (labels from its annotations, else the verb rule)."""
        from toolshift.traces.catalog import catalog_from_mcp_tools, catalog_path, save_catalog

        catalog = catalog_from_mcp_tools(self.domain, tools, source="toolshift gateway: backend tools/list")
        return save_catalog(catalog, catalog_path(Path(self.config.out), self.domain))

    def _open(self) -> Any:
        if self._fh is None:
            from toolshift.traces.store import EpisodeWriter

            if not self.path.exists():
                with EpisodeWriter(
                    self.path, meta={"recorded_by": "toolshift gateway", "domain": self.domain}
                ):
                    pass
            writer = EpisodeWriter(self.path, append=True)
            self._fh = writer.__enter__()
        return self._fh

    def flush_close(self) -> None:
        """At the end of serving: the episode file synced and closed; with no session left open, the journal
        is emptied (every session in it is in the episode file)."""
        with self._lock:
            if self._fh is not None:
                self._fh.sync()
                self._fh.__exit__(None, None, None)
                self._fh = None
        if self.gateway is None or not self.gateway.sessions:
            self.journal.clear()
        else:
            self.journal.close()

    def recover(self) -> int:
        """Write the sessions a killed gateway left open (from the journal) as `gateway_killed` episodes."""
        from toolshift.traces.store import iter_episodes

        orphans = self.journal.orphans()
        if orphans:
            existing = {e.id for e in iter_episodes(self.path)} if self.path.exists() else set()
            with self._lock:
                fh = self._open()
                for o in orphans:
                    if f"gateway-{o.session}" not in existing:
                        fh.write(self._orphan_episode(o))
                        self.recovered += 1
                fh.sync()
        self.journal.clear()
        return self.recovered

    # --- redaction -----------------------------------------------------------------------------

    def redact(self, value: Any) -> Any:
        """A JSON value (arguments) with its secrets redacted; values under secret names are learned first."""
        self.redactor.learn_from(value)
        return self.redactor.value(value)

    def scrub(self, text: str) -> str:
        return self.redactor.scrub(text)

    # --- the chain -----------------------------------------------------------------------------

    def _rec(self, session: GatewaySession) -> _Recording:
        rec = session.state.get(self.name)
        if rec is None:
            rec = session.state[self.name] = _Recording(session)
        return rec

    async def open(self, session: GatewaySession) -> None:
        self._rec(session)

    async def call(
        self, session: GatewaySession, name: str, arguments: dict[str, Any], call_next: Next
    ) -> CallOutcome:
        rec = self._rec(session)
        outcome = await call_next(session, name, arguments)
        self.note(rec, name, arguments, outcome)
        return outcome

    def note(self, rec: _Recording, name: str, arguments: dict[str, Any], outcome: CallOutcome) -> None:
        from toolshift.gateway.flows import result_text
        from toolshift.models import RowChange

        n = len(rec.calls)
        call_id = f"gw-{n}"
        args = self.redact(arguments)
        name = self.scrub(name)
        text = self.redactor.text(result_text(outcome.result))
        if len(text) > RECORDED_RESULT_CHARS:
            text = text[:RECORDED_RESULT_CHARS] + f"... [{len(text) - RECORDED_RESULT_CHARS} more characters]"
        rec.messages.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": call_id, "name": name, "arguments": args}],
                "timestamp": _now(),
            }
        )
        rec.messages.append(
            {
                "role": "tool",
                "tool_call_id": call_id,
                "name": name,
                "content": text,
                "error": bool(outcome.result.is_error),
                "timestamp": _now(),
            }
        )
        reported = (outcome.result.meta or {}).get("toolshift/changes")
        if isinstance(reported, list):
            try:
                rec.changes += [RowChange.model_validate(c) for c in reported]
                for c in reported:
                    if isinstance(c, dict) and self.redactor.is_secret_name(str(c.get("field", ""))):
                        self.redactor.learn(c.get("before"))
                        self.redactor.learn(c.get("after"))
            except ValueError:
                rec.changes_complete = False
        elif outcome.answered_by == "backend":
            rec.changes_complete = False
        rec.calls.append(
            {
                "answered_by": outcome.answered_by,
                "lookups": [
                    {"tool": lk.tool, "arguments": self.redact(lk.arguments), "score": round(lk.score, 4)}
                    for lk in outcome.lookups
                ],
            }
        )
        known = isinstance(reported, list) or outcome.answered_by != "backend"
        self.journal.append(
            {
                "session": rec.session.id,
                "started": rec.started,
                "task": self.scrub(rec.session.task) if rec.session.task else None,
                "at": _now(),
                "call": {
                    "messages": rec.messages[-2:],
                    "changes": [self.redactor.change(c) for c in reported if isinstance(c, dict)]
                    if known and isinstance(reported, list)
                    else ([] if known else None),
                    "source": rec.calls[-1],
                },
            }
        )

    def close(self, session: GatewaySession, reason: str) -> None:
        rec = session.state.get(self.name)
        if rec is None or not rec.messages:
            return
        episode = self.episode(rec, reason)
        with self._lock:
            fh = self._open()
            fh.write(episode)
            fh.sync()
            self.written += 1
        self.journal.append({"session": rec.session.id, "closed": True})

    def episode(self, rec: _Recording, reason: str) -> Any:
        session = rec.session
        return self._episode(
            session=session.id,
            task=session.task,
            messages=rec.messages,
            changes=rec.changes,
            changes_complete=rec.changes_complete,
            calls=rec.calls,
            started=rec.started,
            ended=_now(),
            reason=reason,
        )

    def _orphan_episode(self, o: Orphan) -> Any:
        from toolshift.models import RowChange

        try:
            changes = [RowChange.model_validate(c) for c in o.changes]
            complete = o.changes_complete
        except ValueError:
            changes, complete = [], False
        return self._episode(
            session=o.session, task=o.task, messages=o.messages, changes=changes, changes_complete=complete,
            calls=o.calls, started=o.started, ended=o.ended or _now(), reason="killed",
        )  # fmt: skip

    def _episode(
        self, *, session: str, task: str | None, messages: list[dict[str, Any]], changes: list[Any],
        changes_complete: bool, calls: list[dict[str, Any]], started: str, ended: str, reason: str,
    ) -> Any:  # fmt: skip
        from toolshift.traces.episode import Episode
        from toolshift.world import compose_changes

        ending = {"shutdown": "gateway_shutdown", "killed": "gateway_killed"}
        return Episode.model_validate(
            {
                "id": f"gateway-{session}",
                "task_id": self.scrub(task) if task else f"gateway-{session}",
                "domain": self.domain,
                "agent": self.config.agent,
                "harness": "toolshift-gateway",
                "ecosystem_version": self.ecosystem_version,
                "messages": self.redactor.value(messages),  # again: secrets learned later in the session
                "termination_reason": ending.get(reason, f"gateway_session_{reason}"),
                "world_diff": [
                    self.redactor.change(c.model_dump(mode="json")) for c in compose_changes(changes)
                ]
                if changes_complete
                else None,
                "start_time": started,
                "end_time": ended,
                "source": {"gateway": {"session": session, "calls": calls}},
            }
        )

    def metrics(self) -> dict[str, Any]:
        return {"episodes_written": self.written, "episodes_recovered": self.recovered}
