"""The deployment files in deploy/ cannot drift from the program: they parse, every
`kairos` command line in them is one the CLI accepts, replicas are health-checked and start
after the one-shot migration, and the load balancer knows every replica."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.core import TyperGroup
from typer.main import get_command

from kairos.cli.main import app
from kairos.config import DEFAULTS

DEPLOY = Path(__file__).resolve().parent.parent / "deploy"
UNITS = DEPLOY / "systemd"


def accepted(argv: list[str]) -> dict[str, Any]:
    """The parameters the real CLI parses from ``argv`` (``kairos COMMAND …``); an unknown
    command, option or bad value fails."""
    assert Path(argv[0]).name == "kairos", argv
    group = get_command(app)
    assert isinstance(group, TyperGroup)
    ctx = group.make_context("kairos", argv[1:2])
    command = group.get_command(ctx, argv[1])
    assert command is not None, f"no command kairos {argv[1]}"
    return dict(command.make_context(argv[1], argv[2:]).params)


def _compose() -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / "compose.yaml").read_text("utf-8"))


def _replicas(services: dict[str, Any]) -> list[str]:
    return [n for n, s in services.items() if s.get("command", [None])[:2] == ["kairos", "serve"]]


def _upstreams(caddyfile: Path) -> list[str]:
    m = re.search(r"^\s*reverse_proxy\s+(.+?)\s*\{", caddyfile.read_text("utf-8"), re.M)
    assert m, caddyfile
    return m.group(1).split()


def test_compose_runs_postgres_a_one_shot_migration_replicas_and_a_balancer() -> None:
    services = _compose()["services"]
    assert services["db"]["image"].startswith("pgvector/pgvector:pg16")
    assert "pg_isready" in " ".join(services["db"]["healthcheck"]["test"])
    migrate = services["migrate"]
    assert accepted(migrate["command"]) == {}
    assert migrate["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert migrate["restart"] == "no"
    replicas = _replicas(services)
    assert len(replicas) >= 2
    for name in replicas:
        replica = services[name]
        assert accepted(replica["command"])["stateless"] is True
        assert replica["depends_on"] == {
            "migrate": {"condition": "service_completed_successfully"}}
        assert "/health" in " ".join(replica["healthcheck"]["test"])
        assert set(replica["environment"]) <= {f"KAIROS_{k.upper()}" for k in DEFAULTS}
    lb = services["lb"]
    assert {d: c["condition"] for d, c in lb["depends_on"].items()} == dict.fromkeys(
        replicas, "service_healthy")
    caddyfile = DEPLOY / "Caddyfile"
    assert f"./{caddyfile.name}:/etc/caddy/Caddyfile:ro" in lb["volumes"]
    assert _upstreams(caddyfile) == [f"{n}:8765" for n in replicas]
    assert "health_uri /health" in caddyfile.read_text("utf-8")


def test_the_image_serves_the_package() -> None:
    dockerfile = (DEPLOY / "Dockerfile").read_text("utf-8")
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", dockerfile, re.M).group(1))  # type: ignore[union-attr]
    assert accepted(cmd)["stateless"] is True
    assert 'pip install --no-cache-dir ".[postgres]"' in dockerfile


def _unit(name: str) -> configparser.ConfigParser:
    unit = configparser.ConfigParser(interpolation=None, strict=True)
    unit.optionxform = str  # type: ignore[assignment,method-assign]
    unit.read(UNITS / name, encoding="utf-8")
    return unit


def test_systemd_units_migrate_once_before_the_replicas() -> None:
    migrate, replica = _unit("kairos-migrate.service"), _unit("kairos@.service")
    assert migrate["Service"]["Type"] == "oneshot"
    assert accepted(shlex.split(migrate["Service"]["ExecStart"])) == {}
    assert "kairos-migrate.service" in replica["Unit"]["Requires"].split()
    assert "kairos-migrate.service" in replica["Unit"]["After"].split()
    params = accepted(shlex.split(replica["Service"]["ExecStart"].replace("%i", "8765")))
    assert params["stateless"] is True and params["port"] == 8765
    env = dict(line.split("=", 1) for line in (UNITS / "kairos.env").read_text(
        "utf-8").splitlines() if line and not line.startswith("#"))
    assert set(env) <= {f"KAIROS_{k.upper()}" for k in DEFAULTS}
    assert _upstreams(UNITS / "Caddyfile") == ["127.0.0.1:8765", "127.0.0.1:8766"]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze")
def test_systemd_analyze_verifies_the_units(tmp_path: Path) -> None:
    """systemd's own check, with the paths of this checkout in place of /opt and /etc."""
    kairos = Path(sys.executable).parent / "kairos"
    for unit in ("kairos-migrate.service", "kairos@.service"):
        text = (UNITS / unit).read_text("utf-8")
        text = text.replace("/opt/kairos/.venv/bin/kairos", str(kairos)).replace(
            "/etc/kairos/kairos.env", str(UNITS / "kairos.env"))
        (tmp_path / unit).write_text(text, "utf-8")
    (tmp_path / "kairos@8765.service").symlink_to(tmp_path / "kairos@.service")
    done = subprocess.run(["systemd-analyze", "verify", "./kairos-migrate.service",
                           "./kairos@8765.service"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")
