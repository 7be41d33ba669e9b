"""inspect_ai logs as episodes and back: `traces convert inspect LOG` and `traces export-inspect EPISODES`.

A sample of a toolshift task run in inspect (`toolshift.frameworks.inspect_tasks`) carries its judged episode in
the sample's store (`toolshift_episode`): converting gives that episode as `toolshift run` would have written
it (its calls, world diff and verdict), with where it came from in `source.inspect`. Any other inspect sample
becomes an episode of its messages (system, user, assistant with its tool calls, tool results and their
errors), its outcome the first score's value (`C`/`I`, a number, or a dict's `success`) judged by
`inspect:<scorer>`, no world diff. The export writes episodes as an inspect log (`.eval` or `.json`, by inspect's
own writer, so `inspect view` opens it): one sample per episode, its messages, toolshift's verdict as the score
and the episode in the store, so converting the export gives the episodes back. Reading uses inspect's own
log reader (the `inspect` extra); a log is data, nothing in it runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from toolshift.errors import BadInputError
from toolshift.fileio import MAX_JSON_BYTES, require_regular
from toolshift.traces.conversion import Conversion
from toolshift.traces.episode import Episode, Message, Outcome, ToolCall

STORE_KEY = "toolshift_episode"
SUFFIXES = (".eval", ".json")


def _inspect() -> Any:
    try:
        import inspect_ai.log as log
    except ImportError:
        raise BadInputError(
            "reading or writing inspect logs needs inspect_ai: pip install 'toolshift[inspect]'"
        ) from None
    return log


def inspect_files(path: Path) -> list[Path]:
    """A log file, or the logs (`*.eval`, `*.json`) in a folder (inspect's `--log-dir`)."""
    if path.is_dir():
        found = sorted(p for p in path.iterdir() if p.suffix in SUFFIXES and not p.is_dir())
        if not found:
            raise BadInputError("no inspect logs (*.eval, *.json) in this folder", source=str(path))
        return found
    return [require_regular(path, what="inspect log file or folder")]


def convert_inspect(path: Path, *, skip_bad: bool = False) -> Conversion:
    """Every sample of one inspect log as an episode (see the module's docstring)."""
    log_module = _inspect()
    conv = Conversion(converter="inspect", inputs=[str(path)])
    require_regular(path, what="inspect log")  # its reader would wait on a FIFO
    if path.stat().st_size > MAX_JSON_BYTES:
        raise BadInputError(f"larger than {MAX_JSON_BYTES} bytes", source=str(path))
    try:
        log = log_module.read_eval_log(str(path))
    except Exception as exc:  # inspect's reader refuses what is not a log it can read
        raise BadInputError(
            f"not an inspect log: {type(exc).__name__}: {str(exc)[:200]}", source=str(path)
        ) from None
    for k, sample in enumerate(log.samples or []):
        conv.records += 1
        try:
            episode = _sample_episode(log, sample, str(path), k)
        except BadInputError as exc:
            conv.skip_bad(exc, skip_bad=skip_bad)
            continue
        episode.source["inspect"] = {
            "log": str(path), "eval_id": log.eval.eval_id, "task": log.eval.task, "sample": str(sample.id),
            "epoch": sample.epoch, "model": log.eval.model,
        }  # fmt: skip
        conv.episodes.append(episode)
    if not log.samples:
        conv.notes.append(f"{path.name}: the log holds no samples (status {log.status})")
    return conv


def _sample_episode(log: Any, sample: Any, source: str, record: int) -> Episode:
    stored = (sample.store or {}).get(STORE_KEY)
    if stored is not None:
        try:
            return Episode.model_validate(stored)
        except Exception as exc:
            raise BadInputError(
                f"the stored toolshift episode is not an episode: {str(exc)[:200]}",
                source=source, record=record, field=f"store.{STORE_KEY}",
            ) from None  # fmt: skip
    messages = [_message(m, source, record) for m in sample.messages or []]
    return Episode(
        id=f"inspect:{log.eval.eval_id}:{sample.id}:{sample.epoch}",
        task_id=str(sample.id),
        trial=max(0, int(sample.epoch or 1) - 1),
        domain=str(log.eval.task).replace("/", "_"),
        agent=log.eval.model,
        model=log.eval.model,
        harness="inspect_ai",
        messages=messages,
        termination_reason="agent_error" if sample.error else "agent_stop",
        outcome=_outcome(sample),
        source={},
    )


def _message(m: Any, source: str, record: int) -> Message:
    role = m.role
    if role not in ("system", "user", "assistant", "tool"):
        raise BadInputError(
            f"unknown message role {role!r}", source=source, record=record, field="messages.role"
        )
    if role == "assistant":
        calls = [
            ToolCall(id=c.id or "", name=c.function, arguments=c.arguments if isinstance(c.arguments, dict) else {"_raw": str(c.arguments)},
                     malformed=None if isinstance(c.arguments, dict) else True)
            for c in (m.tool_calls or [])
        ]  # fmt: skip
        return Message(
            role="assistant", content=m.text or None, tool_calls=calls or None, requestor="assistant"
        )
    if role == "tool":
        error = m.error.message if m.error is not None else None
        return Message(
            role="tool",
            content=error or m.text,
            tool_call_id=m.tool_call_id,
            name=m.function,
            error=m.error is not None,
        )
    return Message(role=role, content=m.text)


def _outcome(sample: Any) -> Outcome | None:
    if not sample.scores:
        return None
    name, score = next(iter(sample.scores.items()))
    value = score.value
    if isinstance(value, dict):
        value = value.get("success")
    success: bool | None
    if value in ("C", "I"):
        success = value == "C"
    elif isinstance(value, bool | int | float):
        success = float(value) >= 1.0
    else:
        success = None
    reward = float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return Outcome(
        reward=reward, success=success, judged_by=f"inspect:{name}", info={"explanation": score.explanation}
    )


def export_inspect(episodes: list[Episode], out: Path, *, task: str = "toolshift/episodes") -> Path:
    """Write episodes as one inspect log (by inspect's own writer; `.eval` or `.json` by `out`'s suffix)."""
    log_module = _inspect()
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSample, EvalSpec, EvalStats
    from inspect_ai.model import ModelOutput
    from inspect_ai.scorer import Score

    if out.suffix not in SUFFIXES:
        raise BadInputError("the export must end in .eval or .json", source=str(out), field="out")
    samples = []
    for ep in episodes:
        value = verdict_value(ep)
        samples.append(
            EvalSample(
                id=ep.id,
                epoch=ep.trial + 1,
                input=_first_user(ep) or ep.task_id,
                target="Δgold ⊆ Δagent",
                messages=[_inspect_message(m) for m in ep.messages],
                output=ModelOutput.from_content(model=ep.model or "toolshift", content=_last_reply(ep)),
                scores={
                    "toolshift_verdict": Score(
                        value=value, answer=_last_reply(ep), explanation=ep.termination_reason or ""
                    )
                },
                metadata={"task_id": ep.task_id, "domain": ep.domain},
                store={STORE_KEY: json.loads(ep.model_dump_json())},
            )
        )
    models = sorted({ep.model or "toolshift" for ep in episodes})
    spec = EvalSpec(
        task=task, created=episodes[0].start_time if episodes and episodes[0].start_time else "1970-01-01T00:00:00+00:00",
        model=models[0] if len(models) == 1 else "mixed", dataset=EvalDataset(name=task, samples=len(samples)),
        config=EvalConfig(),
    )  # fmt: skip
    starts = sorted(ep.start_time for ep in episodes if ep.start_time)
    ends = sorted(ep.end_time for ep in episodes if ep.end_time)
    log = EvalLog(
        eval=spec, status="success", samples=samples,
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples)),
        stats=EvalStats(started_at=starts[0] if starts else "", completed_at=ends[-1] if ends else ""),
    )  # fmt: skip
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp{out.suffix}")
    log_module.write_eval_log(log, str(tmp))
    tmp.replace(out)
    return out


def verdict_value(episode: Episode) -> dict[str, float]:
    """An episode's verdict as an inspect score's value: `judged` 0 and nothing else where the judge recorded
    none (unknown is no number); else success, strict success, collateral writes, and τ²'s reward on τ²'s tasks."""
    outcome = episode.outcome
    if outcome is None or outcome.success is None:
        return {"judged": 0.0}
    info = outcome.info
    strict = info.get("strict_success")
    value = {
        "judged": 1.0,
        "success": float(bool(outcome.success)),
        "strict_success": float(bool(outcome.success if strict is None else strict)),
        "collateral": float(info.get("collateral_changes") or 0),
    }
    if outcome.judged_by and outcome.judged_by != "delta-cover" and outcome.reward is not None:
        value["reward"] = float(outcome.reward)
    return value


def _first_user(ep: Episode) -> str | None:
    return next((m.content for m in ep.messages if m.role == "user" and m.content), None)


def _last_reply(ep: Episode) -> str:
    return next(
        (
            m.content
            for m in reversed(ep.messages)
            if m.role == "assistant" and m.content and not m.tool_calls
        ),
        "",
    )


def _inspect_message(m: Message) -> Any:
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall as InspectCall
    from inspect_ai.tool import ToolCallError

    if m.role == "system":
        return ChatMessageSystem(content=m.content or "")
    if m.role == "assistant":
        calls = [
            InspectCall(id=c.id, function=c.name, arguments=c.arguments, type="function")
            for c in m.tool_calls or []
        ]
        return ChatMessageAssistant(content=m.content or "", tool_calls=calls or None)
    if m.role == "tool":
        error = ToolCallError(type="unknown", message=m.content or "") if m.error else None
        return ChatMessageTool(
            content=m.content or "", tool_call_id=m.tool_call_id, function=m.name, error=error
        )
    return ChatMessageUser(content=m.content or "")
