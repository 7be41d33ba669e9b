"""Where the shared data is looked for: TOOLSHIFT_SHARED, else beside the checkout, never inside a venv."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import toolshift
from toolshift import shared

PRINT_ROOT = "from toolshift.shared import shared_root; print(shared_root())"


def _python(code: str, path: Path, **env: str) -> str:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("TOOLSHIFT_SHARED", "XDG_DATA_HOME", "PYTHONPATH")
    }
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(path)!r}); {code}"],
        capture_output=True, text=True, timeout=300, env={**clean, **env}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_source_checkout_looks_beside_the_repository(monkeypatch):
    monkeypatch.delenv("TOOLSHIFT_SHARED", raising=False)
    checkout = Path(toolshift.__file__).resolve().parents[2]
    assert shared.source_checkout() == checkout
    assert shared.shared_root() == checkout.parent / "shared"
    monkeypatch.setenv("TOOLSHIFT_SHARED", "/somewhere/shared")
    assert shared.shared_root() == Path("/somewhere/shared")


def test_an_installed_package_never_looks_inside_its_venv(tmp_path):
    # the package's files as a wheel lays them out: site-packages/toolshift/..., no pyproject.toml above
    site = tmp_path / "venv" / "lib" / "python3.11" / "site-packages"
    (site / "toolshift").mkdir(parents=True)
    for name in ("__init__.py", "shared.py"):
        shutil.copyfile(Path(shared.__file__).with_name(name), site / "toolshift" / name)
    root = Path(_python(PRINT_ROOT, site, XDG_DATA_HOME=str(tmp_path / "xdg")))
    assert root == tmp_path / "xdg" / "toolshift" / "shared"
    assert not root.is_relative_to(tmp_path / "venv")
    home = Path(_python(PRINT_ROOT, site, HOME=str(tmp_path / "home")))
    assert home == tmp_path / "home" / ".local" / "share" / "toolshift" / "shared"
    assert Path(_python(PRINT_ROOT, site, TOOLSHIFT_SHARED=str(tmp_path / "data"))) == tmp_path / "data"
