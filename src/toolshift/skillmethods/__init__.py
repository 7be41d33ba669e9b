"""The skill-maintenance methods seed 000 compares Steward with (EvoSkill, AutoSkill, Trace2Skill, SkillOpt), beside it."""
