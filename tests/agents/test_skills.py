"""Agent Skills in the agent loop: any folder skills-ref validates is offered by name and description, a skill's body
and files are read through `read_skill`, and each episode records what was offered and opened."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from skills_ref import validate

from toolshift.agents.embedded import EmbeddedModel
from toolshift.agents.loop import EpisodeLimits, run_episode
from toolshift.agents.skills import SKILL_TOOL, SkillShelf, materialise, read_skills
from toolshift.agents.tasks import task_from_path
from toolshift.agents.users import ScriptedUser
from toolshift.agents.worlds import world_opener
from toolshift.errors import BadInputError
from toolshift.models import UserInstruction

CANCEL = """---
name: cancel-appointment
description: Cancel a patient's appointment when they ask to cancel it and give its appointment id.
license: Apache-2.0
metadata:
  author: someone-else
---
# Cancelling an appointment

1. Call `cancel_appointment` with the appointment id the patient gave.
2. Tell the patient it is cancelled.

See references/policy.md for what may not be cancelled.
"""

EMAIL = """---
name: update-email
description: Change a patient's email address on file.
---
Call `update_patient` with the patient id and the new email.
"""


def foreign_folder(root: Path) -> Path:
    """Two skills as another tool would write them: one with a reference file, neither from toolshift."""
    (root / "cancel-appointment" / "references").mkdir(parents=True)
    (root / "cancel-appointment" / "SKILL.md").write_text(CANCEL, encoding="utf-8")
    (root / "cancel-appointment" / "references" / "policy.md").write_text("Past appointments stay.\n")
    (root / "update-email").mkdir()
    (root / "update-email" / "SKILL.md").write_text(EMAIL, encoding="utf-8")
    return root


def test_a_folder_skills_ref_validates_is_read_with_its_files(tmp_path: Path) -> None:
    root = foreign_folder(tmp_path / "skills")
    assert all(validate(p) == [] for p in root.iterdir())  # the reference validator accepts both
    skills = {s.name: s for s in read_skills(root)}
    assert set(skills) == {"cancel-appointment", "update-email"}
    assert skills["cancel-appointment"].files == {"references/policy.md": "Past appointments stay.\n"}
    assert skills["cancel-appointment"].front["metadata"] == {"author": "someone-else"}
    # written out again (an outside harness's native folder), it is the same library, still valid
    again = materialise(read_skills(root), tmp_path / "harness" / ".claude" / "skills")
    assert all(validate(p) == [] for p in again.iterdir())
    assert SkillShelf(read_skills(again)).digest() == SkillShelf(read_skills(root)).digest()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("---\nname: other-name\ndescription: d\n---\nbody\n", "name"),
        ("---\nname: bad\ndescription: d\nversion: 2\n---\nbody\n", "version"),
        ("---\nname: bad\n---\nbody\n", "description"),
        ("---\nname: Bad\ndescription: d\n---\nbody\n", "name"),
        ("no front matter\n", "front matter"),
    ],
)
def test_a_skill_skills_ref_refuses_is_refused_naming_its_field(
    tmp_path: Path, text: str, field: str
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "SKILL.md").write_text(text, encoding="utf-8")
    if field != "front matter":
        assert validate(folder), "skills-ref accepts what we refuse"
    with pytest.raises(BadInputError) as err:
        read_skills(tmp_path)
    assert err.value.field == field and str(folder / "SKILL.md") in str(err.value)


def test_the_tool_answers_bodies_and_files_and_the_session_records_them(tmp_path: Path) -> None:
    from toolshift.agents.chat import ProposedCall

    shelf = SkillShelf.from_folder(foreign_folder(tmp_path / "skills"), label="foreign")
    tool = shelf.tool()
    assert tool.input_schema["properties"]["name"]["enum"] == ["cancel-appointment", "update-email"]
    assert "cancel-appointment: Cancel a patient's appointment" in shelf.section()
    session = shelf.session()
    body = session.open(ProposedCall("1", SKILL_TOOL, {"name": "cancel-appointment"}))
    assert not body.error and "Call `cancel_appointment`" in body.text and "references/policy.md" in body.text
    ref = session.open(
        ProposedCall("2", SKILL_TOOL, {"name": "cancel-appointment", "file": "references/policy.md"})
    )
    assert ref.text == "Past appointments stay.\n"
    assert session.open(ProposedCall("3", SKILL_TOOL, {"name": "nope"})).error
    assert session.record()["opened"] == ["cancel-appointment", "cancel-appointment/references/policy.md"]
    assert session.record()["offered"] == ["cancel-appointment", "update-email"]


@pytest.mark.slow
def test_the_embedded_agent_opens_a_foreign_skill_through_the_tool(tmp_path: Path) -> None:
    shelf = SkillShelf.from_folder(foreign_folder(tmp_path / "skills"), label="foreign")
    task = task_from_path(
        "clinic",
        "cancel-named",
        "Please cancel my appointment.",
        UserInstruction(intent="Cancel appointment APT-00003.", facts={"appointment id": "APT-00003"}),
        [("cancel_appointment", {"appointment_id": "APT-00003"})],
    )
    # the first call is the read of the skill whose name the customer's words match (D400): one episode shows it
    episode = asyncio.run(
        run_episode(task, EmbeddedModel(seed=0), ScriptedUser(task.public_request, task.instruction),
                    world_opener("clinic"), episode_id="skills-0", limits=EpisodeLimits(max_turns=6), skills=shelf)
    )  # fmt: skip
    record = episode.source["skills"]
    assert record["offered"] == ["cancel-appointment", "update-email"] and record["library"] == "foreign"
    assert "# Skills" in (episode.messages[0].content or "")
    assert SKILL_TOOL not in episode.source["exposed_tools"]  # a harness tool, not a world tool
    reads = [m for m in episode.messages if m.role == "tool" and m.name == SKILL_TOOL]
    assert record["opened"] == ["cancel-appointment"] and len(reads) == 1
    assert "Call `cancel_appointment`" in (reads[0].content or "")  # the body, read through the tool
    calls = [c.name for m in episode.messages if m.role == "assistant" for c in m.tool_calls or []]
    assert calls[0] == SKILL_TOOL and "cancel_appointment" in calls  # read first, then acted


def test_a_preloaded_skill_is_in_the_prompt_and_not_offered_through_the_tool(tmp_path: Path) -> None:
    skills = read_skills(foreign_folder(tmp_path / "skills"))
    shelf = SkillShelf(skills, label="mixed", preload=["update-email"])
    section = shelf.section()
    assert "- update-email (loaded): Call `update_patient` with the patient id and the new email." in section
    assert "- cancel-appointment: Cancel a patient's appointment" in section and SKILL_TOOL in section
    assert shelf.tool().input_schema["properties"]["name"]["enum"] == ["cancel-appointment"]
    assert shelf.session().record()["preloaded"] == ["update-email"]
    alone = SkillShelf(skills[1:], preload=["update-email"])  # everything preloaded: no tool to read with
    assert alone.on_demand == [] and SKILL_TOOL not in alone.section()
