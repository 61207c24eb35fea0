"""Every requirement id of the manifest is covered by at least one test, and every id a
test names exists."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.requirements import REQUIREMENTS

ROOT = Path(__file__).parent


def _covered() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in ROOT.rglob("test_*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for deco in node.decorator_list:
                if (isinstance(deco, ast.Call) and isinstance(deco.func, ast.Attribute)
                        and deco.func.attr == "req"):
                    for arg in deco.args:
                        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                            found.setdefault(arg.value, []).append(f"{path.name}::{node.name}")
    return found


def test_every_requirement_is_covered() -> None:
    covered = _covered()
    assert sorted(set(REQUIREMENTS) - set(covered)) == []


def test_every_named_requirement_exists() -> None:
    assert sorted(set(_covered()) - set(REQUIREMENTS)) == []
