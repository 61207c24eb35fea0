// Words for people: the API speaks to agents (error codes, "call kairos_begin with …");
// the pages say the same things as plain sentences.

import { h, idOf } from "./lib.js";

export const CREATE_ID = "00000000-0000-0000-0000-000000002001";
export const REFINE_ID = "00000000-0000-0000-0000-000000002002";

// What a person can do about an error the API reports, by its code.
const ADVICE = {
  NO_ACTIVE_RUN: "This run is no longer waiting for an answer: it was finished, stopped or left idle too long. Start the protocol again.",
  DUPLICATE_CHAIN: "A protocol with this title exists already. Tick “replace / mint anyway” to replace it, or give this one another title.",
  SIMILAR_MEMORY_FOUND: "A very similar protocol exists already. Look at it first; tick “replace / mint anyway” to save this one as well.",
  BUILTIN_READ_ONLY: "Built-in protocols cannot be changed.",
  UNAUTHORIZED: "This server asks for a token: use the Token button.",
  OVERLOADED: "The server is busy. Try again in a moment.",
  REQUEST_TOO_LARGE: "This is larger than the server accepts.",
};

// Agent directives inside API messages ("Call kairos_begin with kairos://mem/… first.").
const DIRECTIVE = /[^.;]*\b(kairos_\w+|force_update|next_action)\b[^.;]*[.;]?/g;

/** An API message without the sentences that tell an agent which tool to call next. */
export function plainMessage(message) {
  const text = String(message || "").replace(DIRECTIVE, "").replace(/\s+/g, " ").trim();
  return text || "The request was refused.";
}

/** An error as a person reads it: what to do about it (when there is advice for its
 * code), and what went wrong. */
export function problem(err) {
  const b = err.body || {};
  const what = plainMessage(err.message);
  const advice = ADVICE[b.error_code];
  return h("div", { class: "notice bad", role: "alert", "data-code": b.error_code || "" },
    b.line ? `Line ${b.line}: ` : "", advice || what,
    advice ? h("span", { class: "muted" }, ` ${what}`) : null);
}

/** A refused answer in a guided run. */
export function refusal(res) {
  if (res.error_code === "MAX_RETRIES_EXCEEDED")
    return `This answer was refused ${res.retry_count} times. Check the step, then answer again, or stop the run.`;
  return `Not accepted: ${plainMessage(res.message)}`;
}

/** What the unified search says about how it ranked, from its fields (not its
 * warnings, which are written for agents). */
export function searchNotices(r) {
  const notes = [];
  if (r.degraded) {
    notes.push(r.provider === "none"
      ? "Results are ranked by their words only: this server runs without its language model."
      : "Results are ranked by their words only: the language model is not available right now.");
  }
  if (r.top_score !== null && r.top_score !== undefined && r.top_score < r.min_score) {
    notes.push(`Nothing matched well: the best result scored ${r.top_score.toFixed(2)}, and only results scoring at least ${Number(r.min_score).toFixed(2)} are shown. Try other words, or lower the minimum score.`);
  }
  return notes.map((n) => h("div", { class: "notice warn", role: "status" }, n));
}

/** The refine and create choices of a protocol search, as links to their guided runs. */
export function choiceLink(choice) {
  if (choice.role === "refine")
    return [h("a", { href: `#/go/${REFINE_ID}` }, "Refine the search"),
      h("div", { class: "muted" }, "A guided run that turns a vague request into better search words.")];
  if (choice.role === "create")
    return [h("a", { href: `#/go/${CREATE_ID}` }, "Create a protocol"),
      h("div", { class: "muted" }, "A guided run that helps you write a new protocol for this.")];
  return h("a", { href: `#/protocol/${idOf(choice.uri)}` }, choice.chain_label);
}
