"""MCP prompts: what a person picks in a host to start work with KAIROS. Each does its
first query on the server and returns one user message that names the next tool calls.
Arguments arrive as strings; a missing or malformed one is ``INVALID_PARAMS`` naming it."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server import ServerRequestContext

from ..domain.caller import Caller
from ..domain.errors import NotFoundError, ValidationError
from ..domain.limits import PAGE_MAX, QUERY_CHARS
from ..domain.requests import Dump, ListRuns, Search
from ..domain.uris import parse_uri, to_uri
from .guarded import guarded, mcp_error

if TYPE_CHECKING:
    from .server import Identify, ServiceRef

DAYS_DEFAULT, DAYS_MAX = 7, 365
FAILURES_SHOWN = 20
PROCEDURE_CHARS = 20_000


def _arg(name: str, description: str, required: bool = False) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=required)


PROMPTS = (
    types.Prompt(name="run-protocol", title="Run a protocol",
                 description="Find the protocol for a request and run it step by step with "
                             "proof.",
                 arguments=[_arg("request", "What to do, in the person's words.", True)]),
    types.Prompt(name="write-protocol", title="Write a protocol",
                 description="Turn a procedure into a protocol KAIROS can store and run.",
                 arguments=[_arg("procedure", "The procedure, as the person describes it.",
                                 True),
                            _arg("title", "The protocol's title.")]),
    types.Prompt(name="review-runs", title="Review failed runs",
                 description="Recent failed runs and which steps to improve.",
                 arguments=[_arg("protocol", "Only the runs of this protocol (the URI of any "
                                             "step)."),
                            _arg("days", f"How many days back to look (1–{DAYS_MAX}, default "
                                         f"{DAYS_DEFAULT}).")]),
)
BY_NAME = {p.name: p for p in PROMPTS}


def _text(args: dict[str, str], name: str, limit: int, *, required: bool = False
          ) -> str | None:
    value = args.get(name) or ""
    if not value.strip() and not required:
        return None
    if not value.strip() or len(value) > limit:
        raise ValidationError(name, f"a non-empty text of up to {limit} characters")
    return value.strip()


def _arguments(spec: types.Prompt, given: dict[str, str] | None) -> dict[str, str]:
    args = dict(given or {})
    known = {a.name for a in spec.arguments or ()}
    for name in args:
        if name not in known:
            raise ValidationError(name, "one of " + ", ".join(sorted(known)),
                                  message=f"Unknown argument {name!r} of {spec.name}: "
                                          f"expected {', '.join(sorted(known))}.")
    return args


def run_protocol(service: Any, args: dict[str, str], who: Caller) -> str:
    request = str(_text(args, "request", QUERY_CHARS, required=True))
    found = service.search(Search(query=request), who)
    lines = [f"The person asks: {request}", "",
             "KAIROS searched its protocols for this request (kairos_search). Choices:"]
    for c in found["choices"]:
        score = "" if c["score"] is None else f" (score {c['score']:.2f})"
        lines.append(f"- [{c['role']}] {c['chain_label']}{score}: {c['uri']}")
    lines += ["", "Pick the choice that fits the request and follow its next_action: "
              "kairos_begin with its uri; do the step shown; answer its challenge with "
              "kairos_next (copy the challenge's type, nonce and proof_hash); repeat until "
              "the protocol is completed; then kairos_attest with the last uri, the outcome, "
              "a message and the last solution. Obey must_obey and follow next_action "
              "literally. No choice fits: refine the search or create a protocol as the "
              "matching choice says."]
    return "\n".join(lines)


def write_protocol(service: Any, args: dict[str, str], who: Caller) -> str:
    procedure = _text(args, "procedure", PROCEDURE_CHARS, required=True)
    title = _text(args, "title", service.limits.title_chars)
    heading = f"# {title}" if title else "# <a short title that names the task>"
    return "\n".join([
        "Turn this procedure into a KAIROS protocol and store it.", "",
        "The procedure:", "", str(procedure), "",
        "Write it as markdown:",
        f"- one H1, the title: `{heading}`; text before the first step is the intro;",
        "- one `## <label>` per step, in order, each saying what to do;",
        "- per step, the proof that it was done: a line `PROOF OF WORK: <form>` with "
        "`timeout 30s <shell command>`, `mcp <tool name>`, `user_input \"<question>\"` or "
        "`comment min_length=20`, or a trailing fenced json block "
        "`{\"challenge\": {...}}`.",
        "",
        "Check it with kairos_mint (it stores the protocol, or refuses with errors that name "
        "the line to fix); fix what it refuses and call it again until it is stored. A title "
        "already used is refused unless force_update is true: only replace a protocol the "
        "person means to replace."])


def _days(args: dict[str, str]) -> int:
    text = (args.get("days") or "").strip()
    if not text:
        return DAYS_DEFAULT
    if not text.isdigit() or not 1 <= int(text) <= DAYS_MAX:
        raise ValidationError("days", f"a whole number of days from 1 to {DAYS_MAX}")
    return int(text)


def review_runs(service: Any, args: dict[str, str], who: Caller) -> str:
    raw = _text(args, "protocol", service.limits.title_chars)
    uri = None if raw is None else to_uri(parse_uri(raw, "protocol"))
    days = _days(args)
    if uri is not None:  # what the caller cannot see answers as an unknown protocol
        try:
            service.dump(Dump(uri=uri), who)
        except NotFoundError:
            raise NotFoundError(f"No protocol {uri}.", field="protocol") from None
    since = (datetime.now(UTC) - timedelta(days=days)).isoformat()
    page = service.list_runs(ListRuns(limit=PAGE_MAX, status="finished", protocol=uri), who)
    failed = [r for r in page["items"] if r["outcome"] == "failure" and r["updated_at"] >= since]
    scope = f"of {uri} " if uri else ""
    if not failed:
        return (f"No run {scope}failed in the last {days} days. Nothing to review; "
                "kairos_search finds the protocols to run.")
    where = Counter((r["chain_label"], r["step"], r["step_count"]) for r in failed)
    lines = [f"{len(failed)} runs {scope}failed in the last {days} days.", "",
             "Where they failed (protocol, step, failures):"]
    lines += [f"- {label}: step {step} of {count}: {n}"
              for (label, step, count), n in where.most_common()]
    lines += ["", "The latest failures:"]
    for r in failed[:FAILURES_SHOWN]:
        message = json.dumps(r["message"], ensure_ascii=False) if r["message"] else "no message"
        lines.append(f"- run {r['run_id']} ({r['chain_label']}, step {r['step']} of "
                     f"{r['step_count']}, {r['retry_count']} refusals): {message}")
    lines += ["", "Read a run in full as the resource kairos://runs/<run_id> and a protocol "
              "with kairos_dump. For the steps that fail most, propose kairos_update changes "
              "(clearer instructions, a challenge that can be met) and explain each; apply "
              "them once the person agrees."]
    return "\n".join(lines)


RENDER = {"run-protocol": run_protocol, "write-protocol": write_protocol,
          "review-runs": review_runs}


def prompt_handlers(service: ServiceRef, identify: Identify) -> dict[str, Any]:
    """The ``Server`` constructor arguments that serve prompts."""
    async def list_prompts(ctx: ServerRequestContext[Any, Any],
                           params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=list(PROMPTS))

    async def get_prompt(ctx: ServerRequestContext[Any, Any],
                         params: types.GetPromptRequestParams) -> types.GetPromptResult:
        spec = BY_NAME.get(params.name)
        if spec is None:
            raise mcp_error(NotFoundError(f"Unknown prompt {params.name!r}. Known prompts: "
                                          f"{', '.join(BY_NAME)}.", field="name"))
        who, render = identify(ctx.request)[0], RENDER[spec.name]
        text = await guarded(f"prompt {spec.name}", lambda: render(
            service.get(), _arguments(spec, params.arguments), who))
        return types.GetPromptResult(description=spec.description, messages=[
            types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])

    return {"on_list_prompts": list_prompts, "on_get_prompt": get_prompt}


__all__ = ["PROMPTS", "prompt_handlers"]
