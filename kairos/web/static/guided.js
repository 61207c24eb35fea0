// The guided run: a person runs a protocol step by step in the page. Nothing is recorded
// until Start is pressed; each answer then goes to /runs/next, the last one (with the
// outcome) to /runs/attest, and a refused answer is sent again to the same call.

import { KINDS, add, api, fill, h, plural, provenBadge, render } from "./lib.js";
import { problem, refusal } from "./words.js";

const firstUri = (text) => (String(text || "").match(/kairos:\/\/mem\/[0-9a-f-]{36}/) || [null])[0];

function solutionForm(c, onSubmit) {
  const base = { type: c.type, nonce: c.nonce, proof_hash: c.proof_hash };
  const fields = [];
  let collect;
  if (c.type === "shell") {
    const code = h("input", { id: "exit-code", type: "number", value: 0, style: "width:6em" });
    const out = h("textarea", { id: "stdout", rows: 4 });
    const err = h("textarea", { id: "stderr", rows: 2 });
    fields.push(h("p", {}, "Run this command and paste the result: ", h("code", {}, c.shell.cmd)),
      h("div", { class: "field" }, h("label", { for: "exit-code" }, "Exit code"), code),
      h("div", { class: "field" }, h("label", { for: "stdout" }, "Output (stdout)"), out),
      h("div", { class: "field" }, h("label", { for: "stderr" }, "Errors (stderr)"), err));
    collect = () => ({ ...base, shell: { exit_code: parseInt(code.value, 10), stdout: out.value, stderr: err.value } });
  } else if (c.type === "mcp") {
    const ok = h("input", { id: "mcp-ok", type: "checkbox", checked: true });
    const res = h("textarea", { id: "mcp-result", rows: 4 });
    fields.push(h("p", {}, "Call the MCP tool ", h("code", {}, c.mcp.tool_name), " and paste its result."),
      h("label", { for: "mcp-ok" }, ok, " the call succeeded"),
      h("div", { class: "field" }, h("label", { for: "mcp-result" }, "Result"), res));
    collect = () => {
      let result = res.value;
      try { result = JSON.parse(res.value); } catch (e) { /* plain text */ }
      return { ...base, mcp: { tool_name: c.mcp.tool_name, success: ok.checked, result } };
    };
  } else if (c.type === "user_input") {
    const answer = h("input", { id: "confirmation", value: "yes" });
    fields.push(h("p", {}, h("strong", {}, c.user_input.prompt)),
      h("div", { class: "field" }, h("label", { for: "confirmation" }, "Your answer (yes to confirm)"), answer));
    collect = () => ({ ...base, user_input: { confirmation: answer.value } });
  } else {
    const text = h("textarea", { id: "comment", rows: 4 });
    fields.push(h("div", { class: "field" },
      h("label", { for: "comment" }, `What did you do, and what came of it? (at least ${c.comment.min_length} characters)`), text));
    collect = () => ({ ...base, comment: { text: text.value } });
  }
  return h("form", { id: "answer", onsubmit: (ev) => { ev.preventDefault(); onSubmit(collect()); } },
    ...fields, h("button", { class: "primary", type: "submit", id: "submit-answer" }, "Submit answer"));
}

export async function pageGo(id) {
  const overview = await api("GET", `/api/v1/protocols/${id}/overview`);
  const steps = Object.fromEntries(overview.steps.map((s) => [s.uri, s]));
  const stage = h("div", { id: "stage" });
  const log = h("ol", { class: "steps-list", "aria-label": "Answered steps" });
  // The call the next answer goes to: {tool: "next" | "attest", uri}. A refused answer
  // leaves it as it is: the same call, with the fresh challenge of the refusal.
  let pending = null;
  let shown = null;

  function finish(result) {
    fill(stage, h("div", { class: "notice ok", role: "status", id: "run-done" },
      `Run finished: ${result.outcome}, ${plural(result.proofs, "proof")}. `,
      h("a", { href: `#/run/${result.run_id}`, id: "run-link" }, "See its proof chain")));
    document.getElementById("run-link").focus();
  }

  async function attest(outcome, message, solution) {
    try {
      const body = { uri: pending ? pending.uri : overview.uri, outcome, message };
      if (solution) body.solution = solution;
      const r = await api("POST", "/api/v1/runs/attest", body);
      if (r.error_code) { show(r); return; }
      finish(r);
    } catch (e) { stage.prepend(problem(e)); }
  }

  function show(res) {
    shown = res;
    if (!res.error_code) {
      const na = res.next_action || "";
      pending = { tool: /kairos_attest/.test(na) ? "attest" : "next", uri: firstUri(na) };
    }
    const step = steps[res.current_step.uri];
    const outcome = h("input", { id: "final-message", value: "Done in the browser", "aria-label": "Outcome message" });
    fill(stage,
      res.error_code ? h("div", { class: "notice bad", role: "alert", id: "refused" }, refusal(res)) : null,
      h("section", { class: "card", "aria-label": "Current step" },
        h("h2", { style: "margin-top:0" }, step ? `Step ${step.position} of ${overview.step_count}: ${step.label}` : "Step"),
        step && step.body ? h("div", { class: "prose" }, step.body) : null,
        solutionForm(res.challenge, submit)),
      h("div", { class: "row" }, h("label", { for: "final-message" }, "Outcome message"), outcome,
        h("button", { type: "button", class: "danger", id: "stop-run", onclick: () => attest("failure", outcome.value || "Stopped in the browser") },
          "Stop the run (recorded as a failure)")));
    const first = stage.querySelector("#answer input, #answer textarea");
    if (first) first.focus();
  }

  async function submit(solution) {
    const step = steps[shown.current_step.uri];
    try {
      if (pending.tool === "attest") {
        await attest("success", document.getElementById("final-message").value || "Done in the browser", solution);
        return;
      }
      const r = await api("POST", "/api/v1/runs/next", { uri: pending.uri, solution });
      if (!r.error_code && step) add(log, h("li", {}, step.label, " ", provenBadge(true)));
      show(r);
    } catch (e) { stage.prepend(problem(e)); }
  }

  const start = h("button", { class: "primary", type: "button", id: "start-run", onclick: async () => {
    start.disabled = true;
    try { show(await api("POST", "/api/v1/runs/begin", { uri: overview.uri })); } catch (e) {
      start.disabled = false;
      stage.prepend(problem(e));
    }
  } }, "Start");
  render(`Run ${overview.chain_label}`, h("h1", {}, "Run: ", overview.chain_label), log,
    fill(stage, h("section", { class: "card", id: "before-start", "aria-label": "Before the run" },
      overview.intro ? h("p", {}, overview.intro) : null,
      h("p", {}, `${plural(overview.step_count, "step")}, answered here one at a time. Nothing is recorded until you press Start.`),
      h("ol", { class: "steps-list" }, overview.steps.map((s) => h("li", {}, s.label, " ",
        h("span", { class: "badge" }, KINDS[s.challenge.type] || s.challenge.type)))),
      start)));
  start.focus();
}
