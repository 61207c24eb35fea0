"""Layer direction, read from the imports of every module of ``kairos/``: each part of the
package may import only the parts below it (``docs/architecture.md``), so an upward import
from any module fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "kairos"
ROOT = ""  # kairos/__init__.py: the version, nothing else
SURFACES = ("api", "mcp", "cli", "web")

#: What each part of the package may import (besides itself and the package root).
ALLOWED: dict[str, set[str]] = {
    "domain": set(),
    "config": {"domain"},
    "workers": {"domain"},
    "store": {"domain"},
    "search": {"domain", "store"},
    "service": {"domain", "store", "search", "config"},
    # Surfaces parse, call the service and render; they read the settings at the edge.
    "api": {"domain", "service", "config"},
    "mcp": {"domain", "service", "config"},
    "web": set(),  # the web UI's files (``static/``)
    "builtin": set(),  # the built-in protocols' markdown
    # The command line is the program: it starts the composition root for `serve`/`mcp`.
    "cli": {"domain", "service", "config", "server"},
    # The composition root puts the surfaces together into running processes.
    "server": {"domain", "store", "search", "service", "config", "workers", "api", "mcp"},
}


def _part(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return ROOT if parts == ("__init__",) else parts[0]


def _imports_of(source: str, where: Path) -> set[str]:
    """The parts of ``kairos`` that ``source``, standing at ``where`` in the package,
    imports (relative imports resolved), at any depth: inside functions and
    ``TYPE_CHECKING`` blocks too."""
    module = where.relative_to(PACKAGE.parent).with_suffix("").parts
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            base = list(module[: len(module) - node.level]) if node.level else []
            targets.append(base + (node.module.split(".") if node.module else []))
        elif isinstance(node, ast.Import):
            targets += [alias.name.split(".") for alias in node.names]
        for target in targets:
            if target and target[0] == "kairos":
                out.add(target[1] if len(target) > 1 else ROOT)
    return out


def _upward(source: str, where: Path) -> set[str]:
    """What ``source`` at ``where`` imports from above its part."""
    part = _part(where)
    return _imports_of(source, where) - ALLOWED.get(part, set()) - {part, ROOT}


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_part_of_the_package_has_a_place_in_the_layers() -> None:
    assert {_part(path) for path in MODULES} - {ROOT} <= set(ALLOWED)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_upwards(path: Path) -> None:
    assert not _upward(path.read_text("utf-8"), path)


def test_surfaces_never_import_each_other() -> None:
    for surface in SURFACES:
        assert not (ALLOWED[surface] & (set(SURFACES) - {surface}))


@pytest.mark.parametrize(("where", "source"), [
    ("domain/engine.py", "from ..store import schema"),
    ("domain/__init__.py", "import kairos.config"),
    ("config.py", "from .service import Kairos"),
    ("store/repo.py", "from ..search.documents import DocSpec"),
    ("search/ranking.py", "def f():\n    from ..service import app"),
    ("service/app.py", "from ..api import create_app"),
    ("api/routes.py", "from ..mcp.tools import TOOLS"),
    ("mcp/tools.py", "from kairos.server import serve_http"),
    ("cli/main.py", "from ..api import create_app"),
    ("workers.py", "from .server import ServeError"),
    ("__init__.py", "from .domain import limits"),
])
def test_an_upward_import_is_caught(where: str, source: str) -> None:
    """The check itself: each of these imports, in that module, would fail it."""
    assert _upward(source, PACKAGE / where)


#: A string that is a SQL statement (as ``text(...)`` or a driver would run it).
SQL = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|WITH|CREATE|ALTER|DROP|PRAGMA|TRUNCATE|"
                 r"BEGIN|SET|SHOW|VACUUM|ANALYZE)\s")
#: Calls that run statements: only the store holds a connection to run them on.
RUNS_SQL = {"execute", "exec_driver_sql", "executemany"}


def _sql_in(source: str) -> set[str]:
    """What ``source`` does that only ``kairos/store/`` may: import SQLAlchemy (at any
    depth), write a SQL statement as a string, or run one."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out |= {f"import {a.name}" for a in node.names if a.name.split(".")[0] == "sqlalchemy"}
        elif isinstance(node, ast.ImportFrom) and not node.level and (
                (node.module or "").split(".")[0] == "sqlalchemy"):
            out.add(f"from {node.module} import")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(
                node.value):
            out.add(f"SQL {node.value.strip()[:40]!r}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in RUNS_SQL):
            out.add(f".{node.func.attr}(...)")
    return out


OUTSIDE_STORE = [path for path in MODULES if _part(path) != "store"]


@pytest.mark.parametrize("path", OUTSIDE_STORE, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_sql_lives_in_the_store(path: Path) -> None:
    assert not _sql_in(path.read_text("utf-8"))


@pytest.mark.parametrize("source", [
    "from sqlalchemy import select",
    "import sqlalchemy.exc",
    "def f():\n    from sqlalchemy.engine import Connection",
    "if TYPE_CHECKING:\n    import sqlalchemy",
    "q = text('SELECT 1')",
    "conn.execute(q)",
    "conn.exec_driver_sql(q)",
    'STATEMENT = """\n    UPDATE runs SET status = :s"""',
])
def test_sql_outside_the_store_is_caught(source: str) -> None:
    """The check itself: each of these, in any module outside the store, fails it."""
    assert _sql_in(source)


def test_the_check_lets_plain_text_and_the_store_be() -> None:
    assert not _sql_in("prompts.text('Select a protocol')\nrow.text('title', 80)\n"
                       "search_docs.rows(repo.conn, rids)")
    assert _sql_in((PACKAGE / "store" / "repo.py").read_text("utf-8"))


def test_the_domain_does_no_io() -> None:
    banned = {"sqlalchemy", "os", "socket", "subprocess", "pathlib", "httpx2", "random",
              "secrets", "time"}
    for path in (PACKAGE / "domain").rglob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import)
                 for a in n.names}
        names |= {(n.module or "").split(".")[0] for n in ast.walk(tree)
                  if isinstance(n, ast.ImportFrom) and not n.level}
        assert not (names & banned), (path, names & banned)
