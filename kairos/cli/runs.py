"""The run commands: ``run`` (walk a protocol in the terminal), ``demo``, ``runs``,
``verify`` and ``abort``."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, cast

import typer

from ..domain.jsontext import compact
from ..domain.limits import PAGE_MAX
from ..domain.requests import (
    AbandonRun,
    AbortRun,
    Attest,
    Begin,
    Dump,
    ListRuns,
    Mint,
    Next,
    NonceRef,
    RunRef,
)
from ..domain.responses import ProtocolDump, is_attested
from . import output as out
from . import prompts
from .base import JsonFlag, RunIdArg, command, opened, request
from .output import CliError
from .table import Col, day, short_id, when

SAMPLE = """# Sample: create a project skeleton

A three-step protocol that shows the execution loop.

## Create the source directory

PROOF OF WORK: timeout 10s mkdir -p src

## Write the configuration

PROOF OF WORK: echo config > src/config.json

## Review

Review what the two steps created: the src directory and src/config.json.

PROOF OF WORK: comment min_length=20
"""


@command()
def demo(as_json: JsonFlag = False) -> None:
    """Mint a sample protocol and run it to the end, showing every call and answer."""
    calls: list[dict[str, Any]] = []

    def show(call: str, arguments: dict[str, Any], response: Mapping[str, Any],
             summary: str) -> None:
        calls.append({"call": call, "arguments": arguments, "response": response})
        if not as_json:
            out.line(f"{call}({compact(arguments)})")
            out.line(f"  -> {summary}")

    def shown(response: Mapping[str, Any]) -> str:
        if "error_code" in response:
            return f"refused: {response['error_code']}: {response['message']}"
        step = response["current_step"]["uri"]
        index = steps.index(step) + 1
        return (f"step {index}/{len(steps)} {step}, challenge "
                f"{out.challenge(response['challenge'])}")

    with opened() as local:
        service, caller = local.service, local.caller
        minted = service.mint(request(Mint, markdown_doc=SAMPLE, force_update=True), caller)
        item = minted["items"][0]
        steps = [s["uri"] for s in item["steps"]]
        show("kairos_mint", {"markdown_doc": "<the sample protocol>", "force_update": True},
             minted, f"stored '{item['chain_label']}' ({item['step_count']} steps), step 1 "
                     f"{steps[0]}")
        response = service.begin(request(Begin, uri=steps[0]), caller)
        show("kairos_begin", {"uri": steps[0]}, response, shown(response))
        for uri in steps[1:]:
            ch = response["challenge"]
            solution = {"type": ch["type"], "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
                        "shell": {"exit_code": 0, "stdout": "", "stderr": ""}}
            response = service.next(request(Next, uri=uri, solution=solution), caller)
            show("kairos_next", {"uri": uri, "solution": solution}, response, shown(response))
            if "error_code" in response:
                raise CliError(f"the sample answer was refused: {response['message']}")
        ch = response["challenge"]
        solution = {"type": "comment", "nonce": ch["nonce"], "proof_hash": ch["proof_hash"],
                    "comment": {"text": "Reviewed what the steps created: the src directory "
                                        "and src/config.json both exist."}}
        arguments = {"uri": steps[-1], "outcome": "success",
                     "message": "Sample run finished.", "solution": solution}
        done = service.attest(request(Attest, **arguments), caller)
        if not is_attested(done):
            show("kairos_attest", arguments, done, shown(done))
            raise CliError(f"the sample answer was refused: {done['message']}")
        show("kairos_attest", arguments, done,
             f"run {done['run_id']} finished: {done['outcome']}, {done['proofs']} proofs")
        verified = service.verify_run(request(RunRef, run_id=done["run_id"]), caller)
        show("verify", {"run_id": done["run_id"]}, verified,
             f"chain {'valid' if verified['valid'] else 'BROKEN'} "
             f"({verified['proofs']} proofs)")
    if as_json:
        out.as_json({"calls": calls})


def _answer(challenge: dict[str, Any], assume_yes: bool) -> dict[str, Any] | None:
    """A solution for the challenge shown, asked at the terminal or (``--yes``) the answer
    of a step that went well; None when the person declines a confirmation. KAIROS never
    runs the command itself. Raises ``prompts.NoInput`` when stdin has ended."""
    kind = challenge["type"]
    base = {"type": kind, "nonce": challenge["nonce"], "proof_hash": challenge["proof_hash"]}
    if kind == "shell":
        code = 0 if assume_yes else prompts.number(
            f"Run `{challenge['shell']['cmd']}` yourself; its exit code", 0)
        return {**base, "shell": {"exit_code": code, "stdout": "", "stderr": ""}}
    if kind == "mcp":
        ok = assume_yes or prompts.confirm(
            f"Did the MCP tool {challenge['mcp']['tool_name']} succeed?", True)
        return {**base, "mcp": {"tool_name": challenge["mcp"]["tool_name"], "success": ok,
                                "arguments": {}, "result": None}}
    if kind == "user_input":  # "no" ends the run: Enter alone asks again
        if not (assume_yes or prompts.confirm(challenge["user_input"]["prompt"], None)):
            return None
        return {**base, "user_input": {"confirmation": "yes"}}
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    text = (f"Answered by kairos run --yes at {stamp}, without a person checking the step."
            if assume_yes else prompts.text(challenge["description"]))
    return {**base, "comment": {"text": text}}


def _refused_three_times(challenge: dict[str, Any], step_uri: str, message: str) -> str:
    """Why the run stopped after three refused answers, and what to do next: a command or
    a tool that kept failing is fixed where it runs; a refused comment or confirmation
    says more next time; the step itself is changed only when its challenge is wrong."""
    kind = challenge["type"]
    if kind == "shell":
        return (f"`{challenge['shell']['cmd']}` failed three times ({message}); fix what "
                "makes it fail, then start a new run")
    if kind == "mcp":
        return (f"the MCP tool {challenge['mcp']['tool_name']} failed three times "
                f"({message}); fix it, then start a new run")
    return (f"the answer was refused three times ({message}); if the step asks for the "
            f"wrong thing: kairos dump {step_uri} > step.md, edit it, kairos update "
            f"{step_uri} step.md")


@command()
def run(
    uri: Annotated[str, typer.Argument(metavar="URI",
                                       help="Step 1 of a protocol (kairos://mem/<uuid>), or "
                                            "its id as `kairos list` shows it.")],
    yes: Annotated[bool, typer.Option("--yes", help="Answer every challenge as a step "
                                                    "that went well (no prompts).")] = False,
    as_json: JsonFlag = False,
) -> None:
    """Walk a protocol in the terminal: each step, its challenge, your answer.

    Declining a confirmation aborts the run (Enter alone asks again). After three refused
    answers to a step you may try again or abort. When stdin ends before every step is
    answered, the run is recorded as abandoned. With --json the walk is shown on stderr
    and the outcome and its verification are printed as JSON."""
    from ..domain.texts import MAX_RETRIES_EXCEEDED

    say = out.note if as_json else out.line
    with opened() as local:
        service, caller = local.service, local.caller
        uri = local.expand(uri, "step")
        response = service.begin(request(Begin, uri=uri), caller)
        whole = cast(ProtocolDump, service.dump(request(Dump, uri=uri, protocol=True), caller))
        steps = [s["uri"] for s in whole["steps"]]
        labels = [s["label"] for s in whole["steps"]]
        run_id = service.run_of_nonce(request(NonceRef, nonce=response["challenge"]["nonce"]),
                                      caller)["run_id"]
        ids: Callable[[str], str] = short_id if out.is_terminal() else str
        say(f"Run {ids(run_id)}: {whole['chain_label']} ({len(steps)} steps)")
        index, last_refusal = 0, ""
        try:
            while True:
                step, challenge = response["current_step"], response["challenge"]
                index = steps.index(step["uri"])
                say("")
                say(f"Step {index + 1}/{len(steps)}: {labels[index]}  ({ids(step['uri'])})")
                say(step["content"].strip())
                if response.get("error_code") == MAX_RETRIES_EXCEEDED:
                    say(f"This step's answer was refused {response['retry_count']} times.")
                    if yes or not prompts.confirm("Try again?", None):
                        service.abort_run(request(
                            AbortRun, run_id=run_id,
                            message=f"Aborted from the command line at step {index + 1} "
                                    f"after {response['retry_count']} refused answers."),
                            caller)
                        raise CliError(f"run {run_id} aborted at step {index + 1}: "
                                       + _refused_three_times(challenge, step["uri"],
                                                              last_refusal))
                elif response.get("error_code"):
                    last_refusal = response["message"]
                    say(f"Not accepted: {response['message']}")
                say(f"Challenge: {challenge['description']}")
                solution = _answer(challenge, yes)
                if solution is None:
                    service.abort_run(request(
                        AbortRun, run_id=run_id, message=f"Declined at step {index + 1}: "
                                                         f"{challenge['user_input']['prompt']}"),
                        caller)
                    raise CliError(f"run {run_id} aborted: you declined "
                                   f"\"{challenge['user_input']['prompt']}\"")
                if index < len(steps) - 1:
                    response = service.next(request(Next, uri=steps[index + 1],
                                                    solution=solution), caller)
                    continue
                done = service.attest(request(
                    Attest, uri=step["uri"], outcome="success",
                    message="Run from the command line.", solution=solution), caller)
                if is_attested(done):
                    break
                response = done  # the last answer was refused: the same step, a fresh challenge
        except prompts.NoInput:
            closed = service.abandon_run(request(
                AbandonRun, run_id=run_id,
                reason=f"Abandoned: the terminal's input ended at step {index + 1}."), caller)
            state = ("recorded as abandoned" if closed else
                     "left completed (its last step is not proven)")
            raise CliError(f"no input left to answer step {index + 1} (stdin ended): run "
                           f"{run_id} {state}; answer at a terminal, or pass --yes") from None
        except KeyboardInterrupt:
            raise CliError(f"interrupted; run {run_id} is still active (`kairos abort "
                           f"{short_id(run_id)}` ends it)", 130) from None
        verified = service.verify_run(request(RunRef, run_id=done["run_id"]), caller)
    if as_json:
        out.as_json({"attestation": done, "verification": verified})
    else:
        say("")
        say(f"Run {done['run_id']}: {done['proofs']} proofs, chain "
            f"{'valid' if verified['valid'] else 'BROKEN'}.")
    if not verified["valid"]:
        raise CliError(f"the proof chain of run {done['run_id']} is broken")


@command()
def verify(run_id: RunIdArg, as_json: JsonFlag = False) -> None:
    """Recompute a run's proof chain and report the first broken link."""
    with opened() as local:
        result = local.service.verify_run(request(RunRef, run_id=local.expand(run_id, "run")),
                                          local.caller)
    if as_json:
        out.as_json(result)
    elif result["valid"]:
        out.line(f"Run {result['run_id']}: {result['proofs']} proofs, chain valid.")
    if not result["valid"]:
        broken = result["first_broken"]
        assert broken is not None  # an invalid chain names its first broken link
        raise CliError(f"run {result['run_id']}: chain broken at proof {broken['index']} "
                       f"({broken['step_uri']}): {broken['reason']}")


#: What runs prints per run: run id (short at a terminal), status, outcome, proven, step
#: (of the step count), last change, protocol.
RUNS = (Col("run", short_id), Col("status"), Col("outcome"), Col("proven"),
        Col("step", right=True), Col("updated", when, day), Col("protocol", flex=True))


@command()
def runs(
    limit: Annotated[int, typer.Option(metavar="N", min=1, max=PAGE_MAX,
                                       help="How many runs.")] = 20,
    status: Annotated[str | None, typer.Option(
        metavar="STATUS", help="Only runs in this state: active, completed, finished, "
                               "abandoned or imported.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Recent runs with their outcome and whether every step was proven.

    Prints one line per run: run id, status, outcome, proven (yes or no), step (of the
    step count), last change, protocol. Runs idle past KAIROS_RUN_IDLE_MINUTES are
    recorded as abandoned first."""
    with opened() as local:
        local.service.expire_runs()
        listed = local.service.list_runs(request(ListRuns, limit=limit, status=status),
                                         local.caller)
    if as_json:
        out.as_json(listed)
        return
    out.table(RUNS, [[r["run_id"], r["status"], r["outcome"] or "-",
                      "yes" if r["proven"] else "no", f"{r['step']}/{r['step_count']}",
                      r["updated_at"], r["chain_label"] or "?"] for r in listed["items"]])


@command()
def abort(
    run_id: RunIdArg,
    message: Annotated[str | None, typer.Option(
        metavar="TEXT", help="Why, for the record.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Abort a run: it finishes with outcome failure at the step it was waiting on."""
    with opened() as local:
        done = local.service.abort_run(request(
            AbortRun, run_id=local.expand(run_id, "run"),
            message=message or "Aborted from the command line."), local.caller)
    if as_json:
        out.as_json(done)
    else:
        out.line(f"Run {done['run_id']} aborted at {done['uri']}: outcome failure.")
