"""Live episodes over HTTP (`toolshift frameworks serve`): a framework in its own environment drives the episode.

The driver here is what a verifiers environment does: it opens an episode of an instance, its agent calls the
episode's tools at the MCP door with the MCP SDK's own client (the task's gold path: the measuring instrument),
it sends the agent's reply and reads the user's next message, then asks for the verdict. The verdict and the
episode must be those `toolshift run --model oracle` gives on the same task: same calls, same world changes.
"""

from __future__ import annotations

import asyncio

import httpx
from mcp import Client

from toolshift.agents.demo import demo_tasks
from toolshift.agents.policies import DONE_TEXT
from toolshift.agents.serving import serving_app
from toolshift.frameworks.instances import world_tasks
from toolshift.frameworks.service import EpisodeService
from toolshift.taskfile import write_tasks
from toolshift.traces.episode import Episode
from toolshift.traces.store import iter_episodes

from .conftest import toolshift
from .test_inspect import calls, verdict


async def drive(tasks) -> dict[str, tuple[dict, Episode]]:
    service = EpisodeService(world_tasks("clinic", tasks))
    out = {}
    async with (
        serving_app(service.app(), name="frameworks") as base,
        httpx.AsyncClient(base_url=base, timeout=120) as http,
    ):
        listed = (await http.get("/instances")).json()["instances"]
        assert [i["id"] for i in listed] == [t.id for t in tasks]
        bad = await http.post("/episodes", json={"instance": "no-such-task"})
        assert bad.status_code == 404
        for task in tasks:
            opened = (await http.post("/episodes", json={"instance": task.id})).json()
            assert opened["message"] == task.public_request and opened["instructions"]
            async with Client(opened["mcp_url"]) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {c.tool for c in task.gold_path} <= names and "end_conversation" in names
                for step in task.gold_path:
                    assert not (await client.call_tool(step.tool, step.arguments)).is_error
            answer = (
                await http.post(f"/episodes/{opened['episode']}/reply", json={"text": DONE_TEXT})
            ).json()
            assert answer["message"] is None or isinstance(answer["message"], str)
            result = (await http.post(f"/episodes/{opened['episode']}/finish")).json()
            out[task.id] = (result["verdict"], Episode.model_validate(result["episode"]))
        assert not service.live
    return out


def test_live_episodes_over_http_are_judged_as_toolshift_run_judges(tmp_path):
    tasks = demo_tasks()[:2]
    got = asyncio.run(drive(tasks))
    write_tasks(tmp_path / "tasks.jsonl", tasks)
    toolshift(
        "run",
        "--world",
        "clinic",
        "--tasks",
        str(tmp_path / "tasks.jsonl"),
        "--model",
        "oracle",
        "--out",
        str(tmp_path / "runs"),
    )
    theirs = {e.task_id: e for f in (tmp_path / "runs").glob("*.episodes.jsonl") for e in iter_episodes(f)}
    for task in tasks:
        value, episode = got[task.id]
        assert value["judged"] == 1.0 and value["success"] == 1.0 and value["collateral"] == 0.0
        assert calls(episode) == calls(theirs[task.id])
        assert episode.world_diff == theirs[task.id].world_diff
        assert verdict(episode)[:3] == verdict(theirs[task.id])[:3]
        assert episode.agent == "verifiers" and episode.harness == "toolshift.live"
