"""``scripts/setup`` (run by ``./scripts/serve`` and ``./scripts/test``) installs only when
the installed project is out of date; a stand-in venv records what it is asked to run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def checkout(tmp_path: Path) -> Path:
    """A copy of the scripts and pyproject.toml, with a .venv whose python logs its
    arguments instead of running pip."""
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup", root / "scripts" / "setup")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text('#!/bin/sh\necho "$*" >> "$(dirname "$0")/../calls"\n')
    (bin_dir / "kairos").write_text("#!/bin/sh\n")
    for name in ("python", "kairos"):
        (bin_dir / name).chmod(0o755)
    return root


def setup(root: Path, *args: str) -> list[str]:
    calls = root / ".venv" / "calls"
    calls.unlink(missing_ok=True)
    subprocess.run([str(root / "scripts" / "setup"), *args], check=True, timeout=60,
                   env={"PATH": "/usr/bin:/bin"})
    return calls.read_text().splitlines() if calls.exists() else []


def test_setup_runs_pip_only_when_the_project_changed(tmp_path: Path) -> None:
    root = checkout(tmp_path)
    assert setup(root) == ["-m pip install -q --upgrade pip", "-m pip install -q -e ."]
    assert setup(root) == []  # up to date: ./scripts/serve starts at once
    assert setup(root, "--dev")[-1] == "-m pip install -q -e .[dev]"
    assert setup(root, "--dev") == [] and setup(root) == []  # dev tools include the base
    with (root / "pyproject.toml").open("a") as fh:
        fh.write("\n# changed\n")
    assert setup(root)[-1] == "-m pip install -q -e .[dev]"  # keeps the dev tools
    assert setup(root, "--dev") == []
