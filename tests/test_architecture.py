"""Layer direction, read from the imports: domain imports nothing of the project; the
service never imports a surface; surfaces never import each other."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "kairos"
SURFACES = {"cli", "mcp", "api"}


def _imports(path: Path) -> set[str]:
    """Top-level kairos subpackages a module imports (relative imports resolved)."""
    module = path.relative_to(PACKAGE.parent).with_suffix("").parts
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(module[: len(module) - node.level])
                target = base + (node.module.split(".") if node.module else [])
            else:
                target = (node.module or "").split(".")
            if target and target[0] == "kairos":
                out.add(target[1] if len(target) > 1 else "")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "kairos":
                    out.add(parts[1] if len(parts) > 1 else "")
    return out


def _layer(path: Path) -> str:
    return path.relative_to(PACKAGE).parts[0]


def test_domain_imports_nothing_of_the_project() -> None:
    for path in (PACKAGE / "domain").rglob("*.py"):
        assert _imports(path) <= {"domain"}, path


def test_service_and_store_never_import_surfaces() -> None:
    for layer in ("service", "store", "search"):
        for path in (PACKAGE / layer).rglob("*.py"):
            assert not (_imports(path) & SURFACES), path


def test_only_the_composition_root_knows_every_surface() -> None:
    """kairos/server.py puts the surfaces together; nothing below the surfaces imports it."""
    for layer in ("domain", "store", "search", "service", "mcp", "api"):
        for path in (PACKAGE / layer).rglob("*.py"):
            assert "server" not in _imports(path) or layer == "mcp", path


def test_surfaces_never_import_each_other() -> None:
    for path in PACKAGE.rglob("*.py"):
        layer = _layer(path)
        if layer in SURFACES:
            assert not (_imports(path) & (SURFACES - {layer})), path


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
