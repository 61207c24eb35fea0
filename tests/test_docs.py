"""Documentation that cannot drift: the README's walkthrough runs, and every setting, MCP
tool and command is documented."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx2
import pytest

from kairos.cli.main import app
from kairos.config import DEFAULTS
from kairos.mcp.tools import REGISTRY

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text("utf-8")


def _walkthrough(name: str = "walkthrough") -> str:
    m = re.search(rf"<!-- {name}:[^>]*-->\s*```bash\n(.*?)```", README, re.DOTALL)
    assert m, f"README has no {name} block"
    return m.group(1)


def _shell(tmp_path: Path) -> dict[str, str]:
    """What a reader's fresh shell has: a clean PATH and nothing of KAIROS."""
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(tmp_path),
            "LANG": "C.UTF-8"}


@pytest.mark.timeout(300)
def test_the_walkthrough_runs(tmp_path: Path) -> None:
    """The README's block exactly as printed, in bash with a clean PATH and nothing of
    KAIROS in the environment: what a reader's fresh shell has."""
    env = _shell(tmp_path)
    result = subprocess.run(["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c",
                             _walkthrough()], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Publish a release of the web app" in result.stdout
    assert re.search(r"Run [0-9a-f-]{36}: 5 proofs, chain valid\.", result.stdout)
    assert "Traceback" not in result.stderr


@pytest.mark.timeout(300)
def test_the_walkthrough_opens_its_store_in_the_browser(tmp_path: Path) -> None:
    """The walkthrough, then its web UI step as printed (on a free port instead of 8766,
    which another server may hold): the banner names the UI, and the home page it names
    shows what the walkthrough stored."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    serve = _walkthrough("walkthrough-ui").replace("8766", str(port))
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        proc = subprocess.Popen(["bash", "--noprofile", "--norc", "-euo", "pipefail", "-c",
                                 _walkthrough() + serve], cwd=ROOT, env=_shell(tmp_path),
                                stdout=subprocess.DEVNULL, stderr=err,
                                stdin=subprocess.DEVNULL, start_new_session=True)
    ui = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 240
        while f"web UI {ui}," not in log.read_text("utf-8", "replace"):
            assert proc.poll() is None, log.read_text("utf-8", "replace")
            assert time.monotonic() < deadline, log.read_text("utf-8", "replace")
            time.sleep(0.1)  # a process we do not control; bounded by the deadline
        assert "<title>KAIROS</title>" in httpx2.get(ui, timeout=30).text
        home = httpx2.get(f"{ui}api/v1/home", timeout=30).json()
        (protocol,) = home["protocols"]["recent"]
        assert protocol["chain_label"] == "Publish a release of the web app"
        assert protocol["stats"]["success_rate"] == 1.0 and protocol["stats"]["proven_runs"] == 1
        assert [r["status"] for r in home["runs"]["recent"]] == ["finished"]
    finally:
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(timeout=60)


def test_every_host_snippet_registers_kairos_once() -> None:
    snippets = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", README,
                                                          re.DOTALL) if "mcpServers" in block]
    assert len(snippets) >= 3  # Claude Desktop, Cursor started by the host, Cursor shared
    assert all(list(s["mcpServers"]) == ["kairos"] for s in snippets)
    assert "**Claude Desktop**" in README and "claude_desktop_config.json" in README


def test_every_setting_is_documented() -> None:
    missing = [k for k in DEFAULTS if f"KAIROS_{k.upper()}" not in README]
    assert missing == []


def test_every_mcp_tool_is_documented() -> None:
    assert [t for t in REGISTRY if f"`{t}`" not in README] == []


def test_every_command_is_documented() -> None:
    names = [c.name or (c.callback.__name__ if c.callback else "") for c in
             app.registered_commands]
    assert names and [n for n in names if f"kairos {n}" not in README] == []
