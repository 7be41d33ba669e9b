"""docs/screenshots: every picture `bench/docs_screenshots.py` takes is there, at the size it takes it, and is
listed in the folder's README; nothing else is (a picture no script makes again would go stale unseen)."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

from .pages import png_size

ROOT = Path(__file__).resolve().parents[2]


def test_the_screenshots_are_the_scripts_and_listed():
    spec = importlib.util.spec_from_file_location("docs_screenshots", ROOT / "bench" / "docs_screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    folder = ROOT / "docs" / "screenshots"
    listed = set(re.findall(r"\[([\w-]+\.png)\]\(\1\)", (folder / "README.md").read_text(encoding="utf-8")))
    made = {shot.name: shot for shot in module.SHOTS}
    assert listed == set(made) == {p.name for p in folder.glob("*.png")}
    assert {s.scheme for s in made.values()} == {"light", "dark"}
    for name, shot in made.items():
        assert png_size((folder / name).read_bytes()) == (shot.width, shot.height), name
