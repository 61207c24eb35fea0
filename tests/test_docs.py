"""Documentation that cannot drift: the README's walkthrough runs, and every setting, MCP
tool and command is documented."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from kairos.cli.main import app
from kairos.config import DEFAULTS
from kairos.mcp.tools import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")


def _walkthrough() -> str:
    m = re.search(r"<!-- walkthrough[^>]*-->\s*```bash\n(.*?)```", README, re.DOTALL)
    assert m, "README has no walkthrough block"
    return m.group(1)


@pytest.mark.timeout(300)
def test_the_walkthrough_runs(tmp_path: Path) -> None:
    """The README's block exactly as printed, in bash with a clean PATH and nothing of
    KAIROS in the environment: what a reader's fresh shell has."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
           "LANG": "C.UTF-8"}
    result = subprocess.run(["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c",
                             _walkthrough()], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Publish a release of the web app" in result.stdout
    assert re.search(r"Run [0-9a-f-]{36}: 5 proofs, chain valid\.", result.stdout)
    assert "Traceback" not in result.stderr


def test_every_setting_is_documented() -> None:
    missing = [k for k in DEFAULTS if f"KAIROS_{k.upper()}" not in README]
    assert missing == []


def test_every_mcp_tool_is_documented() -> None:
    assert [t for t in REGISTRY if f"`{t}`" not in README] == []


def test_every_command_is_documented() -> None:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in
             app.registered_commands]
    assert names and [n for n in names if f"kairos {n}" not in README] == []
