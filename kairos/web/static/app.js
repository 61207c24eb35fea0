// KAIROS web UI: plain JavaScript, no build step. Every page reads and writes through the
// public REST API (/api/v1) with fetch, sending the bearer token kept in sessionStorage.

import { ApiError, KINDS, TOKEN_KEY, add, api, article, auth, fill, h, idOf, main, pager, pct, plural,
  provenBadge, provenRate, query, render, stateBadge, when } from "./lib.js";
import { choiceLink, problem, searchNotices } from "./words.js";
import { pageHome } from "./home.js";
import { pageGo } from "./guided.js";
import { pageEditor } from "./editor.js";
import { versionPanel } from "./versions.js";

const SVG = "http://www.w3.org/2000/svg";
const MAX_BAR = 36; // the widest a day's bar is drawn, in the plot's 720-unit width

// --- token --------------------------------------------------------------------------------

const dialog = document.getElementById("token-dialog");
function askToken() {
  if (dialog.open) return;
  const stored = Boolean(sessionStorage.getItem(TOKEN_KEY));
  document.getElementById("token-why").textContent = auth.asked
    ? "This server asks for a token. It is kept in this browser tab only (session storage)."
    : stored ? "This tab sends the token it was given. Enter another one, or forget it."
      : "This server has not asked for a token: it answers without one. Enter one only if you were given one; it is kept in this browser tab only.";
  dialog.showModal();
  document.getElementById("token-input").focus();
}
window.addEventListener("kairos:token", askToken);
document.getElementById("token-form").addEventListener("submit", () => {
  sessionStorage.setItem(TOKEN_KEY, document.getElementById("token-input").value.trim());
  document.getElementById("token-input").value = "";
  route();
});
document.getElementById("token-clear").addEventListener("click", () => {
  sessionStorage.removeItem(TOKEN_KEY);
  dialog.close();
  route();
});
document.getElementById("token-btn").addEventListener("click", askToken);
document.getElementById("theme").addEventListener("click", () => {
  const dark = matchMedia("(prefers-color-scheme: dark)").matches;
  const current = document.documentElement.dataset.theme || (dark ? "dark" : "light");
  const next = current === "dark" ? "light" : "dark";
  document.documentElement.dataset.theme = next;
  try { localStorage.setItem("kairos.theme", next); } catch (e) { /* private mode */ }
});

// --- charts -------------------------------------------------------------------------------

function svg(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, v);
  for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

function qualityChart(series, label) {
  if (!series.length) return h("p", { class: "muted" }, "No runs yet: nothing to plot.");
  const W = 720, H = 240, L = 40, R = 40, T = 14, B = 34;
  const maxRuns = Math.max(...series.map((p) => p.runs), 1);
  const step = (W - L - R) / series.length;
  const y = (v) => T + (H - T - B) * (1 - v);
  const parts = [
    svg("line", { class: "axis", x1: L, y1: H - B, x2: W - R, y2: H - B }),
    svg("line", { class: "axis", x1: L, y1: T, x2: L, y2: H - B }),
    svg("text", { x: 4, y: T + 8 }, `${maxRuns}`), svg("text", { x: 4, y: H - B }, "0"),
    svg("text", { x: W - R + 4, y: T + 8 }, "100%"), svg("text", { x: W - R + 4, y: H - B }, "0%"),
  ];
  const pts = [];
  const bw = Math.min(step * 0.7, MAX_BAR);  // a day or two: bars of a day's width, not the plot's
  series.forEach((p, i) => {
    const bh = (H - T - B) * (p.runs / maxRuns);
    const bar = svg("rect", { class: "bar", x: L + i * step + (step - bw) / 2, y: H - B - bh, width: bw, height: bh });
    bar.append(svg("title", {}, `${p.date}: ${plural(p.runs, "run")}, success ${pct(p.success_rate)}`));
    parts.push(bar);
    if (p.cumulative_success_rate !== null) {
      pts.push(`${L + i * step + step / 2},${y(p.cumulative_success_rate)}`);
      parts.push(svg("circle", { class: "dot", cx: L + i * step + step / 2, cy: y(p.cumulative_success_rate), r: 4 }));
    }
    if (i === 0 || i === series.length - 1 || series.length < 8)
      parts.push(svg("text", { x: L + i * step + step / 2, y: H - B + 16, "text-anchor": "middle" }, p.date.slice(5)));
  });
  if (pts.length > 1) parts.push(svg("polyline", { class: "line", points: pts.join(" ") }));
  const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": `Runs per day (bars) and success rate (line) of ${label}` }, ...parts);
  const table = h("details", {}, h("summary", {}, "Data"), h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "day"), h("th", {}, "runs"), h("th", {}, "success"), h("th", {}, "failure"), h("th", {}, "success rate (cumulative)"))),
    h("tbody", {}, series.map((p) => h("tr", {}, h("td", {}, p.date), h("td", {}, p.runs), h("td", {}, p.successes), h("td", {}, p.failures), h("td", {}, pct(p.cumulative_success_rate))))))));
  return h("div", { class: "chart" }, root, h("p", { class: "muted" }, "Bars: runs started per day. Line: success rate so far."), table);
}

// --- pages --------------------------------------------------------------------------------

async function pageSearch(params) {
  const q = params.get("q") || "";
  const types = (params.get("types") || "protocol,experience,manual").split(",").filter(Boolean);
  const category = params.get("category") || "";
  const minScore = params.get("min_score") || "";
  let cats = [];
  try { cats = (await api("GET", "/api/v1/categories")).categories; } catch (e) { /* shown below */ }
  const input = h("input", { id: "q", type: "search", name: "q", value: q, placeholder: "What do you want to do or know?", size: 40, "aria-label": "Search" });
  const boxes = ["protocol", "experience", "manual"].map((t) => h("label", {},
    h("input", { type: "checkbox", name: "types", value: t, checked: types.includes(t) }), ` ${t}s`));
  const catSel = h("select", { name: "category", "aria-label": "Category" }, h("option", { value: "" }, "any category"),
    cats.map((c) => h("option", { value: c.code, selected: c.code === category }, c.name)));
  const minInput = h("input", { name: "min_score", type: "number", min: 0, max: 1, step: 0.05, value: minScore, placeholder: "min score", "aria-label": "Minimum score", style: "width:7em" });
  const form = h("form", { class: "row", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    const chosen = boxes.map((b) => b.querySelector("input")).filter((i) => i.checked).map((i) => i.value);
    location.hash = `#/search${query({ q: input.value.trim(), types: chosen.join(","), category: catSel.value, min_score: minInput.value })}`;
  } }, input, h("button", { class: "primary", type: "submit" }, "Search"), ...boxes, catSel, minInput);
  const results = h("div", { id: "results" });
  render("Search", h("h1", {}, "Search"), form, results);
  input.focus();
  if (!q) { add(results, h("p", { class: "muted" }, "Search protocols, experiences and manuals in one place.")); return; }
  if (types.includes("protocol")) {
    try {
      const r = await api("POST", "/api/v1/protocols/search", { query: q });
      add(results, h("h2", {}, "Protocols"), h("div", { class: "table-wrap" }, h("table", {},
        h("thead", {}, h("tr", {}, h("th", {}, "role"), h("th", {}, "protocol"), h("th", {}, "score"), h("th", { class: "hide-narrow" }, "tags"))),
        h("tbody", {}, r.choices.map((c) => h("tr", { "data-role": c.role },
          h("td", {}, h("span", { class: `badge ${c.role === "match" ? "ok" : ""}` }, c.role)),
          h("td", {}, choiceLink(c)),
          h("td", {}, c.score === null || c.score === undefined ? "–" : c.score.toFixed(2)),
          h("td", { class: "hide-narrow" }, (c.tags || []).join(", "))))))), explainPanel(q));
    } catch (e) { add(results, problem(e)); }
  }
  const entryTypes = types.filter((t) => t !== "protocol");
  if (entryTypes.length) {
    const body = { query: q, types: entryTypes, limit: 25 };
    if (category) body.category = category;
    if (minScore !== "") body.min_score = Number(minScore);
    try {
      const r = await api("POST", "/api/v1/search", body);
      add(results, h("h2", {}, "Experiences and manuals"),
        searchNotices(r),
        r.results.length || r.top_score !== null ? null : h("p", { class: "muted" }, "Nothing found."),
        r.results.map((x) => h("div", { class: "card" },
          h("h3", {}, h("a", { href: `#/entry/${x.entity_id}` }, x.title), " ", h("span", { class: "badge" }, x.entity_type), " ",
            x.section ? h("span", { class: "badge" }, x.section) : null, " ", h("span", { class: "muted" }, `score ${x.score.toFixed(2)}`)),
          h("div", {}, x.snippet))));
    } catch (e) { add(results, problem(e)); }
  }
}

async function pageProtocols(params) {
  const q = params.get("q") || "", sort = params.get("sort") || "updated";
  const offset = Number(params.get("offset") || 0);
  const input = h("input", { type: "search", value: q, placeholder: "Filter titles", "aria-label": "Filter titles" });
  const sortSel = h("select", { "aria-label": "Sort" }, [["updated", "recently changed"], ["title", "title"], ["runs", "most runs"]]
    .map(([v, t]) => h("option", { value: v, selected: v === sort }, t)));
  const form = h("form", { class: "row", onsubmit: (ev) => { ev.preventDefault(); location.hash = `#/protocols${query({ q: input.value.trim(), sort: sortSel.value })}`; } },
    input, sortSel, h("button", { type: "submit" }, "Filter"), h("a", { class: "button primary", href: "#/editor" }, "New protocol"));
  render("Protocols", h("h1", {}, "Protocols"), form, h("p", { class: "muted" }, "Loading…"));
  const data = await api("GET", `/api/v1/protocols${query({ title: q, sort, offset, limit: 25 })}`);
  fill(main, h("h1", {}, "Protocols"), form, h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "protocol"), h("th", {}, "steps"), h("th", {}, "runs"), h("th", {}, "success"), h("th", { class: "hide-narrow" }, "proven / unproven"), h("th", { class: "hide-narrow" }, "last run"))),
    h("tbody", {}, data.items.map((p) => h("tr", {},
      h("td", {}, h("a", { href: `#/protocol/${idOf(p.uri)}` }, p.chain_label)),
      h("td", {}, p.step_count), h("td", {}, p.stats.runs), h("td", {}, pct(p.stats.success_rate)),
      h("td", { class: "hide-narrow", title: `proven ${pct(provenRate(p.stats))}` }, `${p.stats.proven_runs} / ${p.stats.unproven_runs}`),
      h("td", { class: "hide-narrow" }, when(p.stats.last_run_at))))))),
    pager(data, (o) => `#/protocols${query({ q, sort, offset: o })}`));
}

function challengeText(c) {
  if (c.type === "shell") return h("code", {}, c.shell.cmd);
  if (c.type === "mcp") return h("span", {}, "MCP tool ", h("code", {}, c.mcp.tool_name));
  if (c.type === "user_input") return h("span", {}, `Ask: ${c.user_input.prompt}`);
  return h("span", {}, `Comment of at least ${c.comment.min_length} characters`);
}

async function pageProtocol(id) {
  const [p, quality, dump] = await Promise.all([
    api("GET", `/api/v1/protocols/${id}/overview`),
    api("GET", `/api/v1/protocols/${id}/quality`),
    api("GET", `/api/v1/protocols/${id}?protocol=true`)]);
  const s = p.stats;
  const del = h("button", { class: "danger", type: "button", onclick: async () => {
    if (!confirm(`Delete the protocol "${p.chain_label}"?`)) return;
    try {
      await api("POST", "/api/v1/protocols/delete", { uris: [p.uri], protocol: true });
      location.hash = "#/protocols";
    } catch (e) { main.prepend(problem(e)); }
  } }, "Delete");
  render(p.chain_label,
    h("h1", {}, p.chain_label),
    h("div", { class: "row" },
      h("a", { class: "button primary", href: `#/go/${idOf(p.uri)}` }, "Run it"),
      p.builtin ? null : h("a", { class: "button", href: `#/editor/${idOf(p.uri)}` }, "Edit"),
      h("a", { class: "button", href: `#/runs${query({ protocol: idOf(p.uri) })}` }, "Its runs"),
      p.builtin ? null : del),
    h("div", { class: "grid", style: "margin-top:12px" },
      h("div", { class: "stat" }, h("b", {}, s.runs), "runs"),
      h("div", { class: "stat" }, h("b", {}, pct(s.success_rate)), "success rate"),
      h("div", { class: "stat" }, h("b", {}, `${s.proven_runs} / ${s.unproven_runs}`), "proven / unproven"),
      h("div", { class: "stat" }, h("b", {}, when(s.last_run_at).slice(0, 10)), "last run")),
    p.intro ? h("p", {}, p.intro) : null,
    h("h2", {}, `Steps (${p.step_count})`),
    p.steps.map((st) => h("section", { class: "card", "aria-label": `Step ${st.position}` },
      h("h3", {}, `${st.position}. ${st.label}`),
      st.body ? h("div", { class: "prose" }, st.body) : null,
      h("div", { class: "challenge" }, h("span", { class: "badge" }, KINDS[st.challenge.type] || st.challenge.type), " ", challengeText(st.challenge)))),
    triggerPanel(id), versionPanel(id),
    h("h2", {}, "Quality over time"), qualityChart(quality.series, p.chain_label),
    h("h2", {}, "Markdown"),
    h("details", {}, h("summary", {}, "Show the protocol as markdown"), h("pre", { id: "markdown" }, dump.markdown_doc)));
}

async function pageRuns(params) {
  const offset = Number(params.get("offset") || 0), status = params.get("status") || "";
  const protocol = params.get("protocol") || "";
  const data = await api("GET", `/api/v1/runs${query({ offset, status, limit: 25, protocol: protocol ? `kairos://mem/${protocol}` : "" })}`);
  const sel = h("select", { "aria-label": "Status", onchange: (ev) => { location.hash = `#/runs${query({ status: ev.target.value, protocol })}`; } },
    ["", "active", "completed", "finished", "abandoned", "imported"].map((s) => h("option", { value: s, selected: s === status }, s || "any status")));
  render("Runs", h("h1", {}, "Runs"), h("div", { class: "row" }, sel, protocol ? h("a", { href: "#/runs" }, "all protocols") : null),
    h("div", { class: "table-wrap" }, h("table", { id: "runs" },
      h("thead", {}, h("tr", {}, h("th", {}, "run"), h("th", {}, "protocol"), h("th", {}, "state"), h("th", {}, "proof"), h("th", { class: "hide-narrow" }, "updated"))),
      h("tbody", {}, data.items.map((r) => h("tr", { "data-status": r.status },
        h("td", {}, h("a", { href: `#/run/${r.run_id}` }, r.run_id.slice(0, 8))),
        h("td", { class: "wrap" }, r.chain_label || h("span", { class: "muted" }, "deleted")),
        h("td", {}, stateBadge(r), r.status === "finished" ? null : h("div", { class: "muted" }, `step ${Math.min(r.step, r.step_count)}/${r.step_count}`)),
        h("td", { class: "proof" }, provenBadge(r.proven), h("div", { class: "muted" }, `${r.proofs}/${r.step_count}`)),
        h("td", { class: "hide-narrow" }, when(r.updated_at))))))),
    pager(data, (o) => `#/runs${query({ offset: o, status, protocol })}`));
}

async function pageRun(id) {
  const r = await api("GET", `/api/v1/runs/${encodeURIComponent(id)}`);
  const v = r.verification;
  const labels = Object.fromEntries(r.steps.map((s) => [s.uri, `${s.position}. ${s.label}`]));
  render(`Run ${id.slice(0, 8)}`,
    h("h1", {}, "Run ", h("code", {}, r.run_id)),
    h("p", {}, r.protocol ? h("a", { href: `#/protocol/${idOf(r.protocol.uri)}` }, r.protocol.chain_label) : "protocol deleted",
      " · ", stateBadge(r), " · ", provenBadge(r.proven), " · retries ", r.retry_count,
      " · started ", when(r.created_at)),
    r.message ? h("p", {}, h("em", {}, r.message)) : null,
    h("div", { id: "verdict", class: `notice ${v.valid ? "ok" : "bad"}`, role: "status" },
      v.valid ? `Chain verified: ${plural(v.proofs, "link")}, every hash recomputed.`
        : `Chain broken at link ${v.first_broken.index + 1}: ${v.first_broken.reason}.`),
    h("h2", {}, "Steps"),
    h("ol", { class: "steps-list" }, r.steps.map((s) => h("li", {}, s.label, " ", provenBadge(s.proven)))),
    h("h2", {}, "Proof chain"),
    r.links.length ? null : h("p", { class: "muted" }, "No proofs yet."),
    r.links.map((l) => h("section", { class: `card link ${l.state}`, "data-state": l.state, "aria-label": `Link ${l.index + 1}: ${l.state}` },
      h("h3", {}, `Link ${l.index + 1} · ${labels[l.step_uri] || l.step_uri} `,
        h("span", { class: `badge ${l.state === "valid" ? "ok" : l.state === "broken" ? "bad" : ""}` }, l.state === "broken" ? "first broken link" : l.state)),
      l.reason ? h("p", {}, h("strong", {}, l.reason)) : null,
      h("div", { class: "hash" }, "previous ", l.record.previous_hash),
      h("div", { class: "hash" }, "stored   ", l.record.proof_hash),
      l.state !== "valid" && l.expected_hash ? h("div", { class: "hash" }, "recomputed ", l.expected_hash) : null,
      h("details", {}, h("summary", {}, "Record"), h("pre", {}, JSON.stringify(l.record, null, 2))))));
}

async function pageEntries(params) {
  const type = params.get("type") || "experience", category = params.get("category") || "";
  const offset = Number(params.get("offset") || 0);
  const [cats, data] = await Promise.all([api("GET", "/api/v1/categories"),
    api("GET", `/api/v1/entries${query({ type, category, offset, limit: 25 })}`)]);
  render("Experiences and manuals",
    h("h1", {}, "Experiences and manuals"),
    h("div", { class: "row" },
      ["experience", "manual"].map((t) => h("a", { class: `button ${t === type ? "primary" : ""}`, href: `#/entries${query({ type: t, category })}`, "aria-current": t === type ? "page" : null }, `${t}s`)),
      h("a", { class: "button", href: `#/entry-new${query({ type })}` }, `Write ${article(type)}`)),
    h("nav", { class: "cats", "aria-label": "Categories" },
      h("a", { href: `#/entries${query({ type })}`, "aria-current": category ? null : "true" }, "all"),
      cats.categories.map((c) => h("a", { href: `#/entries${query({ type, category: c.code })}`, "aria-current": c.code === category ? "true" : null, title: c.description }, c.name))),
    data.items.length ? null : h("p", { class: "muted" }, "Nothing here yet."),
    data.items.map((e) => h("div", { class: "card" },
      h("h3", {}, h("a", { href: `#/entry/${e.entity_id}` }, e.title), " ", h("span", { class: "badge" }, e.category), " ",
        e.section ? h("span", { class: "badge" }, e.section) : null),
      h("div", {}, e.preview), h("div", { class: "muted" }, `${e.author || "anonymous"} · ${when(e.updated_at)}`))),
    pager(data, (o) => `#/entries${query({ type, category, offset: o })}`));
}

const ENTRY_FIELDS = {
  experience: [["title", "input"], ["playbook", "textarea"], ["context", "textarea"], ["section", "select"], ["author", "input"]],
  manual: [["title", "input"], ["content", "textarea"], ["summary", "textarea"], ["author", "input"]],
};

async function entryForm(type, entry) {
  const cats = (await api("GET", "/api/v1/categories")).categories;
  const inputs = {};
  const cat = h("select", { id: "f-category" }, cats.map((c) => h("option", { value: c.code, selected: entry && entry.category === c.code }, c.name)));
  inputs.category = cat;
  const rows = [h("div", { class: "field" }, h("label", { for: "f-category" }, "Category"), cat)];
  for (const [name, kind] of ENTRY_FIELDS[type]) {
    let el;
    if (kind === "select") el = h("select", { id: `f-${name}` }, ["useful", "harmful", "contextual"].map((s) => h("option", { value: s, selected: entry && entry.section === s }, s)));
    else el = h(kind, { id: `f-${name}`, rows: kind === "textarea" ? 6 : null, required: name === "title" || name === "playbook" || name === "content" });
    if (kind !== "select") el.value = (entry && entry[name]) || "";
    inputs[name] = el;
    rows.push(h("div", { class: "field" }, h("label", { for: `f-${name}` }, name), el));
  }
  const out = h("div", {});
  const form = h("form", { id: "entry-form", onsubmit: async (ev) => {
    ev.preventDefault();
    const fields = {};
    for (const [k, el] of Object.entries(inputs)) if (el.value !== "" || entry) fields[k] = el.value;
    try {
      const r = entry ? await api("PATCH", `/api/v1/entries/${entry.entity_id}`, fields)
        : await api("POST", "/api/v1/entries", { entity_type: type, ...fields });
      const eid = r.entity_id || entry.entity_id;
      fill(out, h("div", { class: "notice ok", role: "status" }, "Saved. ", h("a", { href: `#/entry/${eid}`, id: "entry-link" }, "Read it")),
        (r.duplicates || []).length ? h("div", { class: "notice warn" }, `Similar: ${r.duplicates.map((d) => d.title).join(", ")}`) : null);
    } catch (e) { fill(out, problem(e)); }
  } }, rows, h("button", { class: "primary", type: "submit" }, entry ? "Update" : "Write"), out);
  return form;
}

async function pageEntry(id) {
  const r = await api("POST", "/api/v1/entries/read", { ids: [id] });
  if (!r.entries.length) throw new ApiError(404, { error_code: "NOT_FOUND", message: `No entry ${id}.` });
  const e = r.entries[0];
  const edit = h("div", {});
  render(e.title, h("h1", {}, e.title),
    h("p", {}, h("span", { class: "badge" }, e.entity_type), " ", h("span", { class: "badge" }, e.category), " ",
      e.section ? h("span", { class: "badge" }, e.section) : null, " ", h("span", { class: "muted" }, `${e.author || "anonymous"} · updated ${when(e.updated_at)}`)),
    e.entity_type === "experience" ? [h("h2", {}, "Playbook"), h("pre", {}, e.playbook), e.context ? [h("h2", {}, "Context"), h("pre", {}, e.context)] : null]
      : [e.summary ? h("p", {}, h("em", {}, e.summary)) : null, h("pre", {}, e.content)],
    h("details", {}, h("summary", {}, "Edit"), edit));
  add(edit, await entryForm(e.entity_type, e));
}

async function pageEntryNew(params) {
  const type = params.get("type") === "manual" ? "manual" : "experience";
  render(`Write ${article(type)}`, h("h1", {}, `Write ${article(type)}`), await entryForm(type, null));
  document.getElementById("f-title").focus();
}

async function pageQuality(params) {
  const chosen = params.get("protocol") || "";
  const list = await api("GET", "/api/v1/protocols?sort=runs&limit=25");
  const sel = h("select", { id: "quality-protocol", "aria-label": "Protocol", onchange: (ev) => { location.hash = `#/quality${query({ protocol: ev.target.value })}`; } },
    list.items.map((p) => h("option", { value: idOf(p.uri), selected: idOf(p.uri) === chosen }, `${p.chain_label} (${plural(p.stats.runs, "run")})`)));
  const target = chosen || (list.items[0] ? idOf(list.items[0].uri) : "");
  render("Quality", h("h1", {}, "Quality over time"), list.items.length ? h("div", { class: "row" }, sel) : h("p", { class: "muted" }, "No protocols yet."));
  if (!target) return;
  const q = await api("GET", `/api/v1/protocols/${target}/quality`);
  add(main, h("h2", {}, h("a", { href: `#/protocol/${target}` }, q.chain_label)), qualityChart(q.series, q.chain_label));
}

// --- search evidence and triggers (begin) ---------------------------------------------------
// Why a search lists what it lists (the unified search's `explain`), and a protocol's
// author and learned triggers, with the removal of learned ones.

const num = (x) => (x === null || x === undefined ? "–" : Number(x).toFixed(2));

function explainPanel(q) {
  const body = h("div", { class: "table-wrap" }, h("p", { class: "muted" }, "Loading…"));
  const panel = h("details", { id: "explain" }, h("summary", {}, "Why these protocols? Each candidate's evidence"), body);
  panel.addEventListener("toggle", async () => {
    if (!panel.open || panel.dataset.loaded) return;
    panel.dataset.loaded = "yes";
    try {
      const r = await api("POST", "/api/v1/search", { query: q, types: ["protocol"], min_score: 0.3, limit: 10, explain: true });
      const e = r.explain;
      const rel = e.relevance.protocols;
      fill(body,
        rel ? h("p", {}, `${rel.relevant ? "Relevant" : "Nothing relevant enough"}: relevance ${num(rel.value)} against a boundary of ${num(rel.boundary)} (best cosine ${num(rel.best_cosine)}, background ${num(rel.background_cosine)}, ${rel.documents} protocols).`) : null,
        h("table", {},
          h("thead", {}, h("tr", {}, ["protocol", "score", "dense", "trigger", "learned", "words", "title", "why"].map((c) => h("th", {}, c)))),
          h("tbody", {}, e.candidates.map((c) => h("tr", { "data-listed": c.listed ? "yes" : "no" },
            h("td", {}, c.uri ? h("a", { href: `#/protocol/${idOf(c.uri)}` }, c.title) : c.title),
            h("td", {}, num(c.score)),
            h("td", {}, num(c.evidence.dense_by_role.doc)),
            h("td", {}, num(c.evidence.dense_by_role.trigger)),
            h("td", {}, num(c.evidence.dense_by_role.learned)),
            h("td", {}, pct(c.evidence.share)),
            h("td", {}, pct(c.evidence.title_share)),
            h("td", { class: "muted" }, c.why))))));
    } catch (err) { fill(body, problem(err)); }
  });
  return panel;
}

function triggerPanel(id) {
  const box = h("section", { id: "triggers", "aria-label": "Triggers" }, h("h2", {}, "Triggers"), h("p", { class: "muted" }, "Loading…"));
  const show = (t) => {
    const forget = async (path) => {
      try { show(await api("DELETE", path)); } catch (err) { box.append(problem(err)); }
    };
    fill(box, h("h2", {}, "Triggers"),
      h("p", { class: "muted" }, "Example requests that say when to use this protocol: the author's (front matter), and queries that led to proven successful runs (learned, at most ", String(t.learned_limit), ")."),
      t.triggers.length ? h("ul", { class: "author-triggers" }, t.triggers.map((x) => h("li", {}, x))) : h("p", { class: "muted" }, "No author triggers."),
      t.learned.length ? h("div", { class: "table-wrap" }, h("table", { class: "learned-triggers" },
        h("thead", {}, h("tr", {}, h("th", {}, "learned trigger"), h("th", {}, "runs"), h("th", {}, "last used"), h("th", {}, ""))),
        h("tbody", {}, t.learned.map((x) => h("tr", {},
          h("td", {}, x.text), h("td", {}, x.runs), h("td", {}, when(x.last_seen)),
          h("td", {}, h("button", { type: "button", class: "danger", "aria-label": `Remove the learned trigger ${x.text}`,
            onclick: () => forget(`/api/v1/protocols/${id}/triggers/${x.id}`) }, "Remove"))))))) : h("p", { class: "muted" }, "No learned triggers yet."),
      t.learned.length > 1 ? h("button", { type: "button", class: "danger", onclick: () => forget(`/api/v1/protocols/${id}/triggers`) }, "Remove all learned triggers") : null);
  };
  api("GET", `/api/v1/protocols/${id}/triggers`).then(show, (err) => fill(box, h("h2", {}, "Triggers"), problem(err)));
  return box;
}

// --- search evidence and triggers (end) -----------------------------------------------------

// --- router -------------------------------------------------------------------------------

const ROUTES = [
  [/^\/?$/, () => pageHome(), "home"],
  [/^\/search$/, (m, p) => pageSearch(p), "search"],
  [/^\/protocols$/, (m, p) => pageProtocols(p), "protocols"],
  [/^\/protocol\/([0-9a-f-]{36})$/, (m) => pageProtocol(m[1]), "protocols"],
  [/^\/editor$/, () => pageEditor(null), "editor"],
  [/^\/editor\/([0-9a-f-]{36})$/, (m) => pageEditor(m[1]), "editor"],
  [/^\/runs$/, (m, p) => pageRuns(p), "runs"],
  [/^\/run\/([^/]+)$/, (m) => pageRun(decodeURIComponent(m[1])), "runs"],
  [/^\/go\/([0-9a-f-]{36})$/, (m) => pageGo(m[1]), "protocols"],
  [/^\/entries$/, (m, p) => pageEntries(p), "entries"],
  [/^\/entry\/([0-9a-f-]{36})$/, (m) => pageEntry(m[1]), "entries"],
  [/^\/entry-new$/, (m, p) => pageEntryNew(p), "entries"],
  [/^\/quality$/, (m, p) => pageQuality(p), "quality"],
];

async function route() {
  const raw = location.hash.replace(/^#/, "") || "/";
  const [path, qs] = raw.split("?");
  const params = new URLSearchParams(qs || "");
  for (const [re, fn, nav] of ROUTES) {
    const m = path.match(re);
    if (!m) continue;
    highlight(nav);
    try { await fn(m, params); } catch (e) {
      render("Error", h("h1", {}, e.status === 404 ? "Not found" : "Something went wrong"), e instanceof ApiError ? problem(e) : h("pre", {}, String(e)));
    }
    main.dataset.ready = raw;
    return;
  }
  highlight(null);
  render("Not found", h("h1", {}, "Not found"), h("p", {}, "No such page. ", h("a", { href: "#/" }, "Home")));
  main.dataset.ready = raw;
}

/** Mark the navigation link of the page shown (none for a page that does not exist). */
function highlight(nav) {
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });
route();
