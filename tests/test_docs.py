"""Documentation that cannot drift: the README's walkthrough runs, and every setting, MCP
tool and command is documented."""

from __future__ import annotations

import os
import re
import subprocess
import sys
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


@pytest.mark.slow
def test_the_walkthrough_runs(tmp_path: Path) -> None:
    env = {**os.environ, "KAIROS_EMBEDDER": "none", "TMPDIR": str(tmp_path),
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("KAIROS_DATABASE_URL", None)
    result = subprocess.run(["bash", "-euo", "pipefail", "-c", _walkthrough()], cwd=ROOT,
                            env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Publish a release of the web app" in result.stdout
    assert re.search(r"Run [0-9a-f-]{36}: 5 proofs, chain valid\.", result.stdout)


def test_every_setting_is_documented() -> None:
    missing = [k for k in DEFAULTS if f"KAIROS_{k.upper()}" not in README]
    assert missing == []


def test_every_mcp_tool_is_documented() -> None:
    assert [t for t in REGISTRY if f"`{t}`" not in README] == []


def test_every_command_is_documented() -> None:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in
             app.registered_commands]
    assert names and [n for n in names if f"kairos {n}" not in README] == []
