"""Real workload from tldr-pages (CC BY 4.0, (c) the tldr-pages team and contributors):
pages → KAIROS protocols and manual entries, and the "describe → find" retrieval task."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from kairos.domain.limits import Limits

_LABEL_CHARS = Limits().label_chars  # a few tldr examples' descriptions are longer

#: The checkout this file is in; the tldr pages are in the shared data directory beside it.
CHECKOUT = Path(__file__).resolve().parent.parent
DATA = CHECKOUT.parent / "shared" / "data" / "tldr" / "pages.jsonl"


@dataclass(frozen=True)
class Page:
    id: str
    platform: str
    name: str
    description: str
    examples: list[dict[str, str]]


def load_pages(path: Path = DATA, platform: str | None = None) -> list[Page]:
    pages = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            if platform is None or d["platform"] == platform:
                pages.append(Page(d["id"], d["platform"], d["name"], d["description"],
                                  d["examples"]))
    return pages


def _plain(command: str) -> str:
    return command.replace("{{", "").replace("}}", "")


def protocol_markdown(page: Page, *, with_description: bool = True,
                      title: str | None = None) -> str:
    """H1 = page name, the description as the intro, one H2 step per example with a shell
    challenge whose cmd is the example's command."""
    lines = [f"# {title or page.name}", ""]
    if with_description and page.description:
        lines += [page.description, ""]
    for ex in page.examples:
        label = ex["description"].rstrip(":").replace("\n", " ").replace("[", "").replace("]", "")
        cmd = _plain(ex["command"]).replace("\n", " ")
        block = json.dumps({"challenge": {"type": "shell", "shell": {
            "cmd": cmd, "timeout_seconds": 60}}}, ensure_ascii=False)
        # A label over the step-label limit: its first words head the step, all of it below.
        head = label if len(label) <= _LABEL_CHARS else label[:_LABEL_CHARS].rsplit(" ", 1)[0]
        intro = [label, ""] if head != label else []
        lines += [f"## {head}", "", *intro, f"`{cmd}`", "", "```json", block, "```", ""]
    return "\n".join(lines)


def manual_entry(page: Page) -> dict[str, object]:
    body = "\n".join(f"- {ex['description']}: `{_plain(ex['command'])}`" for ex in page.examples)
    return {"entity_type": "manual", "category": "tooling", "title": page.id[:120],
            "summary": page.description[:2000], "content": body or page.description,
            "author": "tldr-pages"}


_FIRST_SENTENCE = re.compile(r"^(.+?[.!?])(?:\s|$)")


def task_query(page: Page) -> str:
    """The first sentence of the description with the page's own name removed."""
    m = _FIRST_SENTENCE.match(page.description.strip())
    sentence = m.group(1) if m else page.description.strip()
    name = re.escape(page.name)
    query = re.sub(rf"(?i)(?<![\w-]){name}(?![\w-])", " ", sentence)
    return " ".join(query.split())


def task_items(limit: int | None = None) -> Iterator[tuple[Page, str]]:
    for page in load_pages(platform="common")[:limit]:
        query = task_query(page)
        if query:
            yield page, query
