"""Which documents mint differently with this checkout's parser than with an earlier one.

The earlier parser is taken from a git revision (default ``main``) into a temporary
directory and imported under another name; both parse the same documents:

- the tldr pages as the benchmark mints them (a json challenge block per step);
- the same pages with each command on a ``PROOF OF WORK:`` line, as written;
- the same pages with each command on a ``PROOF OF WORK:`` line, in a code span;
- every markdown file of the repository.

Reports, per corpus, how many documents mint the same (same protocols, steps and
challenges), how many mint differently, and how many one parser refuses, with examples.

    python bench/parser_compat.py [--rev main] [--examples 5]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

from workload import _plain, load_pages, protocol_markdown  # noqa: E402

from kairos.domain import limits, markdown  # noqa: E402

Parse = Callable[[str], Any]
#: Both parsers take documents of any number of steps.
STEPS = 100_000


def _earlier(rev: str, root: Path) -> Parse:
    """The markdown parser of ``rev``, imported as ``earlier_kairos.domain.markdown``."""
    archive = subprocess.run(["git", "-C", str(HERE.parent), "archive", rev, "kairos"],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    spec = importlib.util.spec_from_file_location(
        "earlier_kairos", root / "kairos" / "__init__.py",
        submodule_search_locations=[str(root / "kairos")])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["earlier_kairos"] = module
    spec.loader.exec_module(module)
    earlier = importlib.import_module("earlier_kairos.domain.limits")
    parse = importlib.import_module("earlier_kairos.domain.markdown").parse
    if hasattr(earlier, "configure"):  # a revision whose limits were one module global
        earlier.configure(steps=STEPS)
        return parse  # type: ignore[no-any-return]
    return partial(parse, lim=earlier.Limits(steps=STEPS))


def _minted(parse: Parse, doc: str) -> Any:
    try:
        return [(p.title, p.intro, [(s.label, s.content, s.challenge.to_dict())
                                    for s in p.steps]) for p in parse(doc)]
    except Exception as exc:
        return ("refused", getattr(exc, "code", type(exc).__name__),
                getattr(exc, "message", str(exc)))


def corpora() -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {"tldr, json blocks": [],
                                             "tldr, PROOF OF WORK lines": [],
                                             "tldr, PROOF OF WORK in code spans": [],
                                             "repository markdown": []}
    for page in load_pages():
        out["tldr, json blocks"].append((page.id, protocol_markdown(page)))
        for name, wrap in (("tldr, PROOF OF WORK lines", "{}"),
                           ("tldr, PROOF OF WORK in code spans", "`{}`")):
            lines = [f"# {page.name}", ""]
            for ex in page.examples:
                cmd = wrap.format(_plain(ex["command"]).replace("\n", " "))
                lines += [f"## {ex['description'].replace(chr(10), ' ')[:150]}", "",
                          f"PROOF OF WORK: {cmd}", ""]
            out[name].append((page.id, "\n".join(lines)))
    for path in sorted(HERE.parent.rglob("*.md")):
        if ".venv" not in path.parts and "node_modules" not in path.parts:
            out["repository markdown"].append((str(path.relative_to(HERE.parent)),
                                               path.read_text("utf-8")))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rev", default="main", help="the earlier parser's revision [main]")
    p.add_argument("--examples", type=int, default=5, help="examples per kind [5]")
    args = p.parse_args()
    now_parse = partial(markdown.parse, lim=limits.Limits(steps=STEPS))
    with tempfile.TemporaryDirectory(prefix="kairos-compat-") as tmp:
        earlier = _earlier(args.rev, Path(tmp))
        for name, docs in corpora().items():
            kinds: Counter[str] = Counter()
            examples: dict[str, list[str]] = {}
            for ident, doc in docs:
                before, now = _minted(earlier, doc), _minted(now_parse, doc)
                if before == now:
                    kinds["same"] += 1
                    continue
                kind = ("refused now" if isinstance(now, tuple) and now[0] == "refused"
                        else "refused before" if isinstance(before, tuple)
                        else "minted differently")
                kinds[kind] += 1
                detail = now[2] if kind == "refused now" else _difference(before, now)
                examples.setdefault(kind, []).append(f"{ident}: {detail}"[:220])
            print(f"{name}: {len(docs)} documents, " + ", ".join(
                f"{n} {k}" for k, n in kinds.most_common()))
            for kind, found in examples.items():
                for line in found[:args.examples]:
                    print(f"    {kind}: {line}")


def _difference(before: Any, now: Any) -> str:
    if isinstance(before, tuple) or isinstance(now, tuple):
        return f"{before} -> {now}"
    for a, b in zip(before, now, strict=False):
        for s, t in zip(a[2], b[2], strict=False):
            if s != t:
                return f"step {s[0]!r}: {s[2]} -> {t[2]}"
    return "protocol structure"


if __name__ == "__main__":
    main()
