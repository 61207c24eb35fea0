"""docs/datasets.md cannot drift: each format's example record is what the code makes of
the example runs, and each format's field table names exactly the record's keys."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kairos.domain import datasets as ds
from tests.domain.dataset_runs import bad, ok, play

DOC = (Path(__file__).resolve().parent.parent / "docs" / "datasets.md").read_text("utf-8")
WIN = "3f2a9c1e-5b7d-4e21-9a0c-6d8e4f1b2a37"
LOSE = "7b8a2848-1c3e-4f5a-8b6d-2e9f0a1c3d5b"


def examples() -> dict[str, dict[str, Any]]:
    win = play(WIN, [ok(0), ok(1), ok(2)], outcome="success",
               request="ship 1.4 to staging", message="Released 1.4 to staging.")
    lose = play(LOSE, [bad(0), ok(0), bad(1)], outcome="failure",
                created_at="2026-05-01T11:20:00+00:00", message="The release owner said no.")
    return {ds.TRACE: ds.trace_record(lose),
            ds.SFT: next(ds.sft_records([win])),
            ds.PREFERENCE: next(ds.preference_records([win, lose]))}


def documented(fmt: str) -> tuple[Any, set[str]]:
    section = DOC.split(f"<!-- format: {fmt} -->", 1)[1].split("<!-- format:", 1)[0]
    example = re.search(r"```json\n(.*?)```", section, re.DOTALL)
    assert example, f"no example for {fmt}"
    fields = set(re.findall(r"^\| `([a-z_]+)` \|", section, re.MULTILINE))
    return json.loads(example.group(1)), fields


@pytest.mark.parametrize("fmt", ds.FORMATS)
def test_the_documented_example_is_what_the_code_makes(fmt: str) -> None:
    made = examples()[fmt]
    example, fields = documented(fmt)
    assert example == json.loads(ds.to_jsonl(made))
    assert fields >= set(made), sorted(set(made) - fields)
    step_fields = {"index", "uri", "label", "content", "challenge", "state", "proof",
                   "refusals"}
    assert fields - set(made) <= (step_fields if fmt == ds.TRACE else set())
    if fmt == ds.TRACE:
        assert step_fields <= fields and set(made["steps"][0]) == step_fields


def pretty(fmt: str) -> str:
    """The example as the document prints it."""
    return json.dumps(json.loads(ds.to_jsonl(examples()[fmt])), indent=2, ensure_ascii=False)


def test_the_documented_trace_verifier_checks_traces_with_nothing_but_python(
        tmp_path: Path) -> None:
    block = DOC.split("<!-- verify-trace -->", 1)[1]
    code = re.search(r"```python\n(.*?)```", block, re.DOTALL)
    assert code
    script = tmp_path / "verify_trace.py"
    script.write_text(code.group(1), "utf-8")
    traces = [ds.trace_record(r) for r in (
        play(WIN, [ok(0), ok(1), ok(2)], outcome="success"),
        play(LOSE, [bad(0), ok(0), bad(1)], outcome="failure"))]
    good = "".join(ds.to_jsonl(t) + "\n" for t in traces)
    done = subprocess.run([sys.executable, str(script)], input=good, capture_output=True,
                          text=True, timeout=60, env={"PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [WIN, "verified", LOSE, "verified"]
    traces[0]["steps"][1]["proof"]["solution"]["user_input"]["confirmation"] = "yes!"
    tampered = "".join(ds.to_jsonl(t) + "\n" for t in traces)
    refused = subprocess.run([sys.executable, str(script)], input=tampered,
                             capture_output=True, text=True, timeout=60,
                             env={"PATH": "/usr/bin:/bin"})
    assert refused.returncode == 1
    assert refused.stderr.strip() == f"{WIN}: step 2 was changed"
