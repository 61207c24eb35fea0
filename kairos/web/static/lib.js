// Helpers every page uses: building the DOM, calling the REST API, formatting.

export const TOKEN_KEY = "kairos.token";
export const main = document.getElementById("main");

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "class") el.className = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

const kept = (nodes) => nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false);

export function fill(el, ...nodes) {
  el.replaceChildren(...kept(nodes));
  return el;
}

export function add(el, ...nodes) {
  el.append(...kept(nodes));
  return el;
}

export const idOf = (uri) => String(uri || "").replace("kairos://mem/", "");
export const pct = (x) => (x === null || x === undefined ? "–" : `${Math.round(x * 100)} %`);
export const when = (s) => (s ? s.replace("T", " ").slice(0, 16) : "–");

/** "1 step", "2 steps"; ``many`` when the plural is not the word plus "s". */
export const plural = (n, word, many) => `${n} ${n === 1 ? word : many || `${word}s`}`;

/** A number of minutes in the largest whole unit: "24 hours", "2 days", "90 minutes". */
export function duration(minutes) {
  if (minutes % 1440 === 0) return plural(minutes / 1440, "day");
  if (minutes % 60 === 0) return plural(minutes / 60, "hour");
  return plural(minutes, "minute");
}

/** What a challenge asks for, in a word. */
export const KINDS = { shell: "command", mcp: "MCP tool", user_input: "confirmation", comment: "comment" };

/** "a protocol", "an experience". */
export const article = (word) => `${/^[aeiou]/i.test(word) ? "an" : "a"} ${word}`;

/** Proven runs out of the finished ones, or null when none finished. */
export function provenRate(stats) {
  const done = stats.proven_runs + stats.unproven_runs;
  return done ? stats.proven_runs / done : null;
}

export class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

/** Whether this tab has been asked for a token (a 401 from the API). */
export const auth = { asked: false };

export async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (res.status === 401) {
    auth.asked = true;
    window.dispatchEvent(new CustomEvent("kairos:token"));
  }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

export function render(title, ...nodes) {
  document.title = title ? `${title} · KAIROS` : "KAIROS";
  fill(main, ...nodes);
}

export function pager(data, hrefFor) {
  const prev = data.offset > 0 ? h("a", { class: "button", href: hrefFor(Math.max(0, data.offset - data.limit)) }, "← Previous") : null;
  const next = data.has_more ? h("a", { class: "button", href: hrefFor(data.offset + data.limit) }, "Next →") : null;
  const end = Math.min(data.total, data.offset + data.items.length);
  return h("div", { class: "row pager" }, prev,
    h("span", { class: "muted" }, data.total ? `${data.offset + 1}–${end} of ${data.total}` : "nothing yet"), next);
}

export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A run's state in one badge: active or completed, its outcome once finished, or
 * abandoned (idle past the expiry, counted neither way). */
export function stateBadge(run) {
  if (run.status === "abandoned") return h("span", { class: "badge warn", title: run.message || "" }, "abandoned");
  if (run.status === "active") return h("span", { class: "badge" }, "active");
  if (!run.outcome) return h("span", { class: "badge" }, run.status);
  return h("span", { class: `badge ${run.outcome === "success" ? "ok" : "bad"}` }, run.outcome);
}

export function provenBadge(proven) {
  return h("span", { class: `badge ${proven ? "ok" : "warn"}` }, proven ? "proven" : "unproven");
}
