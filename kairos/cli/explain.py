"""The command line's view of search evidence and triggers: ``kairos search --explain``
and ``kairos triggers`` (registered on the application by ``main``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from . import output as out
from .main import JsonFlag, _caller, _json_mode, _using, command
from .table import Col, day, short_id, when


def _num(value: Any) -> str:
    return "" if value is None else f"{value:.2f}"


def show_explain(result: dict[str, Any]) -> None:
    """``Kairos.explain_search`` for a person: the query's relevance on stderr, then one
    row per candidate (tab-separated in a pipe), its reason last."""
    for kind, rel in result["relevance"].items():
        verdict = "relevant" if rel["relevant"] else "not relevant"
        out.note(f"{kind}: {verdict} (relevance {rel['value']:.3f}, boundary "
                 f"{rel['boundary']:.3f}; best cosine {_num(rel['best_cosine'])}, "
                 f"background {_num(rel['background_cosine'])}, {rel['documents']} "
                 f"documents); strongest: {rel['strongest']}")
    full, brief = [], []
    for c in result["candidates"]:
        e = c["evidence"]
        roles = e["dense_by_role"]
        uri = c.get("uri") or c.get("entity_id") or ""
        full.append([
            "yes" if c["listed"] else "no", f"{c['score']:.2f}", uri, c["title"],
            _num(roles["doc"]), _num(roles["trigger"]), _num(roles["learned"]),
            _num(e["text"]), _num(e["title_share"]), _num(e["share"]),
            "yes" if e["rare_and_complete"] else "", f"{e['strength']:.3f}",
            f"{e['below_strongest']:.3f}",
            f"{e['quality_boost']:+.3f}" if e["quality_boost"] else "", c["why"]])
        brief.append(["yes" if c["listed"] else "no", f"{c['score']:.2f}", uri,
                      _num(roles["doc"]), _num(e["share"]), f"{e['below_strongest']:.3f}",
                      f"{c['title']}: {c['why']}"])
    if not out.is_terminal():  # every figure, tab-separated, the reason last
        out.table([Col(name) for name in EVIDENCE], full)
        return
    out.table([Col("match"), Col("score", right=True), Col("id", short_id),
               Col("dense", right=True), Col("words", right=True), Col("below", right=True),
               Col("protocol: why", flex=True)], brief)


#: The columns of ``--explain`` in a pipe (and of its ``--json`` candidates' evidence).
EVIDENCE = ("match", "score", "uri", "protocol", "dense", "trigger", "learned", "text",
            "title", "words", "rare", "strength", "below", "boost", "why")


@command()
def triggers(
    uri: Annotated[str, typer.Argument(metavar="URI", help="A step URI of the protocol.")],
    forget: Annotated[list[str] | None, typer.Option(
        "--forget", metavar="ID", help="Remove this learned trigger (repeatable).")] = None,
    forget_all: Annotated[bool, typer.Option(
        "--forget-all", help="Remove every learned trigger of the protocol.")] = False,
    as_json: JsonFlag = False,
) -> None:
    """A protocol's author triggers and learned triggers (queries that led to proven
    successful runs); --forget removes learned ones."""
    _json_mode(as_json)
    with _using() as k:
        if forget or forget_all:
            result = k.forget_triggers(uri, None if forget_all else forget, _caller(k))
        else:
            result = k.triggers(uri, _caller(k))
    if as_json:
        out.as_json(result)
        return
    if result.get("removed") is not None:
        out.note(f"removed {result['removed']} learned trigger(s)")
    out.note(f"{result['chain_label']}: {len(result['triggers'])} author trigger(s), "
             f"{len(result['learned'])} of at most {result['learned_limit']} learned")
    out.table([Col("kind"), Col("id", short_id), Col("runs", right=True),
               Col("last used", when, day), Col("trigger", flex=True)],
              [["author", "", "", "", text] for text in result["triggers"]]
              + [["learned", t["id"], t["runs"], t["last_seen"], t["text"]]
                 for t in result["learned"]])
