// KAIROS web UI: plain JavaScript, no build step. Every page reads and writes through the
// public REST API (/api/v1) with fetch, sending the bearer token kept in sessionStorage.

const TOKEN_KEY = "kairos.token";
const SVG = "http://www.w3.org/2000/svg";
const main = document.getElementById("main");

// --- small helpers ------------------------------------------------------------------------

function h(tag, attrs, ...children) {
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

function fill(el, ...nodes) {
  el.replaceChildren(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  return el;
}

function add(el, ...nodes) {
  el.append(...nodes.flat(Infinity).filter((n) => n !== null && n !== undefined && n !== false));
  return el;
}

const idOf = (uri) => String(uri || "").replace("kairos://mem/", "");
const pct = (x) => (x === null || x === undefined ? "–" : `${Math.round(x * 100)} %`);
const when = (s) => (s ? s.replace("T", " ").slice(0, 19) : "–");
const firstUri = (text) => (String(text || "").match(/kairos:\/\/mem\/[0-9a-f-]{36}/) || [null])[0];

class ApiError extends Error {
  constructor(status, body) {
    super(body && body.message ? body.message : `HTTP ${status}`);
    this.status = status;
    this.body = body || {};
  }
}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem(TOKEN_KEY);
  if (token) headers.Authorization = `Bearer ${token}`;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await res.json(); } catch (e) { data = null; }
  if (res.status === 401) { askToken(); }
  if (!res.ok) throw new ApiError(res.status, data);
  return data;
}

function errorBox(err) {
  const b = err.body || {};
  return h("div", { class: "notice bad", role: "alert" },
    h("strong", {}, b.error_code || "Error"), " ",
    b.line ? `Line ${b.line}: ` : "", err.message,
    b.field ? h("span", { class: "muted" }, ` (field: ${b.field})`) : null);
}

function render(title, ...nodes) {
  document.title = title ? `${title} · KAIROS` : "KAIROS";
  fill(main, ...nodes);
}

function pager(data, hrefFor) {
  const prev = data.offset > 0 ? h("a", { class: "button", href: hrefFor(Math.max(0, data.offset - data.limit)) }, "← Previous") : null;
  const next = data.has_more ? h("a", { class: "button", href: hrefFor(data.offset + data.limit) }, "Next →") : null;
  const end = Math.min(data.total, data.offset + data.items.length);
  return h("div", { class: "row pager" }, prev,
    h("span", { class: "muted" }, data.total ? `${data.offset + 1}–${end} of ${data.total}` : "nothing yet"), next);
}

function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== null && v !== undefined && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? `?${s}` : "";
}

function outcomeBadge(outcome) {
  if (!outcome) return h("span", { class: "badge" }, "no outcome");
  return h("span", { class: `badge ${outcome === "success" ? "ok" : "bad"}` }, outcome);
}

function provenBadge(proven) {
  return h("span", { class: `badge ${proven ? "ok" : "warn"}` }, proven ? "proven" : "unproven");
}

// --- token --------------------------------------------------------------------------------

const dialog = document.getElementById("token-dialog");
function askToken() { if (!dialog.open) { dialog.showModal(); document.getElementById("token-input").focus(); } }
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
  series.forEach((p, i) => {
    const bh = (H - T - B) * (p.runs / maxRuns);
    const bar = svg("rect", { class: "bar", x: L + i * step + step * 0.15, y: H - B - bh, width: step * 0.7, height: bh });
    bar.append(svg("title", {}, `${p.date}: ${p.runs} runs, success ${pct(p.success_rate)}`));
    parts.push(bar);
    if (p.cumulative_success_rate !== null) {
      pts.push(`${L + i * step + step / 2},${y(p.cumulative_success_rate)}`);
      parts.push(svg("circle", { class: "dot", cx: L + i * step + step / 2, cy: y(p.cumulative_success_rate), r: 4 }));
    }
    if (i === 0 || i === series.length - 1 || series.length < 8)
      parts.push(svg("text", { x: L + i * step + 2, y: H - B + 16 }, p.date.slice(5)));
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
          h("td", {}, c.role === "match" ? h("a", { href: `#/protocol/${idOf(c.uri)}` }, c.chain_label) : h("span", {}, c.chain_label || c.label),
            c.role !== "match" ? h("div", { class: "muted" }, c.next_action) : null),
          h("td", {}, c.score === null || c.score === undefined ? "–" : c.score.toFixed(2)),
          h("td", { class: "hide-narrow" }, (c.tags || []).join(", "))))))), explainPanel(q));
    } catch (e) { add(results, errorBox(e)); }
  }
  const entryTypes = types.filter((t) => t !== "protocol");
  if (entryTypes.length) {
    const body = { query: q, types: entryTypes, limit: 25 };
    if (category) body.category = category;
    if (minScore !== "") body.min_score = Number(minScore);
    try {
      const r = await api("POST", "/api/v1/search", body);
      add(results, h("h2", {}, "Experiences and manuals"),
        r.degraded ? h("div", { class: "notice warn" }, `Search mode ${r.search_mode}: ${r.provider_hint || "degraded"}`) : null,
        (r.warnings || []).length ? h("div", { class: "notice warn" }, r.warnings.join(" ")) : null,
        r.results.length ? null : h("p", { class: "muted" }, `Nothing scored at least ${r.min_score}.`),
        r.results.map((x) => h("div", { class: "card" },
          h("h3", {}, h("a", { href: `#/entry/${x.entity_id}` }, x.title), " ", h("span", { class: "badge" }, x.entity_type), " ",
            x.section ? h("span", { class: "badge" }, x.section) : null, " ", h("span", { class: "muted" }, `score ${x.score.toFixed(2)}`)),
          h("div", {}, x.snippet))));
    } catch (e) { add(results, errorBox(e)); }
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
  const data = await api("GET", `/api/v1/protocols${query({ q, sort, offset, limit: 25 })}`);
  fill(main, h("h1", {}, "Protocols"), form, h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, h("th", {}, "protocol"), h("th", {}, "steps"), h("th", {}, "runs"), h("th", {}, "success"), h("th", { class: "hide-narrow" }, "proven / unproven"), h("th", { class: "hide-narrow" }, "last run"))),
    h("tbody", {}, data.items.map((p) => h("tr", {},
      h("td", {}, h("a", { href: `#/protocol/${idOf(p.uri)}` }, p.chain_label)),
      h("td", {}, p.step_count), h("td", {}, p.stats.runs), h("td", {}, pct(p.stats.success_rate)),
      h("td", { class: "hide-narrow" }, `${p.stats.proven_runs} / ${p.stats.unproven_runs}`),
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
    } catch (e) { main.prepend(errorBox(e)); }
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
      h("pre", {}, st.content),
      h("div", {}, h("span", { class: "badge" }, st.challenge.type), " ", challengeText(st.challenge)))),
    triggerPanel(id),
    h("h2", {}, "Quality over time"), qualityChart(quality.series, p.chain_label),
    h("h2", {}, "Markdown"),
    h("details", {}, h("summary", {}, "Show the protocol as markdown"), h("pre", { id: "markdown" }, dump.markdown_doc)));
}

function lineGutter(textarea, gutter, errLines) {
  const n = textarea.value.split("\n").length;
  fill(gutter, ...Array.from({ length: n }, (_, i) =>
    h("span", { class: errLines.has(i + 1) ? "err" : "" }, i + 1)));
  gutter.scrollTop = textarea.scrollTop;
}

async function pageEditor(id) {
  let original = "", existingUri = null;
  if (id) {
    const dump = await api("GET", `/api/v1/protocols/${id}?protocol=true`);
    original = dump.markdown_doc; existingUri = dump.uri;
  }
  const sample = "# My protocol\n\n## Prepare\nCheck the working tree is clean.\n\nPROOF OF WORK: git status --porcelain\n\n## Approve\nPROOF OF WORK: user_input \"Ship it?\"\n";
  const ta = h("textarea", { id: "markdown-input", spellcheck: "false", "aria-label": "Protocol markdown", "aria-describedby": "validation" });
  ta.value = original || sample;
  const gutter = h("div", { class: "gutter", "aria-hidden": "true" });
  const status = h("div", { id: "validation", "aria-live": "polite" });
  const force = h("input", { type: "checkbox", id: "force" });
  const save = h("button", { class: "primary", type: "button", id: "save" }, existingUri ? "Update" : "Mint");
  const result = h("div", {});
  let errLines = new Set(), timer = null, seq = 0;
  async function validate() {
    const mine = ++seq;
    try {
      const v = await api("POST", "/api/v1/protocols/validate", { markdown_doc: ta.value });
      if (mine !== seq) return;
      errLines = new Set(v.errors.map((e) => e.line).filter(Boolean));
      const warn = v.protocols.flatMap((p) => p.warnings.filter((w) => !(existingUri && p.existing_uri === existingUri && w.startsWith("DUPLICATE_CHAIN"))));
      fill(status,
        v.valid ? h("div", { class: "notice ok" }, `Valid: ${v.protocols.map((p) => `${p.chain_label} (${p.step_count} steps)`).join(", ")}`) : null,
        v.errors.map((e) => h("div", { class: "notice bad", role: "alert", "data-line": e.line || "" }, h("strong", {}, e.line ? `Line ${e.line}` : e.error_code), `: ${e.message}`)),
        warn.map((w) => h("div", { class: "notice warn" }, w)),
        v.protocols.flatMap((p) => p.duplicates.filter((d) => d.score < 0.9).map((d) => h("div", { class: "muted" },
          `FYI: ${Math.round(d.score * 100)} % similar to `, h("a", { href: `#/protocol/${idOf(d.uri)}` }, d.chain_label)))),
        v.protocols.map((p) => h("ol", { class: "steps-list" }, p.steps.map((s) => h("li", {}, s.label, " ", h("span", { class: "badge" }, s.challenge.type))))));
      save.disabled = !v.valid || (warn.length > 0 && !force.checked);
      save.title = save.disabled && v.valid ? "Tick 'replace / mint anyway' to save despite the warning" : "";
    } catch (e) { fill(status, errorBox(e)); }
    lineGutter(ta, gutter, errLines);
  }
  ta.addEventListener("input", () => { lineGutter(ta, gutter, errLines); clearTimeout(timer); timer = setTimeout(validate, 250); });
  ta.addEventListener("scroll", () => { gutter.scrollTop = ta.scrollTop; });
  ta.addEventListener("keydown", (ev) => { if ((ev.ctrlKey || ev.metaKey) && ev.key === "s") { ev.preventDefault(); if (!save.disabled) save.click(); } });
  force.addEventListener("change", validate);
  save.addEventListener("click", async () => {
    fill(result);
    try {
      const r = await api("POST", "/api/v1/protocols", { markdown_doc: ta.value, force_update: Boolean(existingUri) || force.checked });
      const first = r.items[0];
      fill(result, h("div", { class: "notice ok", role: "status" }, `${first.updated ? "Updated" : "Minted"} `,
        h("a", { href: `#/protocol/${idOf(first.uri)}`, id: "minted-link" }, first.chain_label), ` (${first.step_count} steps).`));
    } catch (e) { fill(result, errorBox(e)); }
  });
  render(existingUri ? "Edit protocol" : "New protocol",
    h("h1", {}, existingUri ? "Edit protocol" : "New protocol"),
    h("div", { class: "editor" },
      h("div", {}, h("div", { class: "code" }, gutter, ta),
        h("div", { class: "row", style: "margin-top:8px" }, save,
          h("label", { for: "force", style: "font-weight:400" }, force, " replace / mint anyway"),
          h("span", { class: "muted" }, "Ctrl+S saves")), result),
      h("div", {}, h("h2", { style: "margin-top:0" }, "Check"), status,
        h("details", {}, h("summary", {}, "Syntax"), h("pre", {},
          "# Title (one per protocol)\n## Step label (one per step)\nPROOF OF WORK: mkdir -p src\nPROOF OF WORK: mcp tool_name\nPROOF OF WORK: user_input \"Approve?\"\nPROOF OF WORK: comment min_length=20")))));
  lineGutter(ta, gutter, errLines);
  ta.focus();
  validate();
}

async function pageRuns(params) {
  const offset = Number(params.get("offset") || 0), status = params.get("status") || "";
  const protocol = params.get("protocol") || "";
  const data = await api("GET", `/api/v1/runs/list${query({ offset, status, limit: 25, protocol: protocol ? `kairos://mem/${protocol}` : "" })}`);
  const sel = h("select", { "aria-label": "Status", onchange: (ev) => { location.hash = `#/runs${query({ status: ev.target.value, protocol })}`; } },
    ["", "active", "completed", "finished"].map((s) => h("option", { value: s, selected: s === status }, s || "any status")));
  render("Runs", h("h1", {}, "Runs"), h("div", { class: "row" }, sel, protocol ? h("a", { href: "#/runs" }, "all protocols") : null),
    h("div", { class: "table-wrap" }, h("table", {},
      h("thead", {}, h("tr", {}, h("th", {}, "run"), h("th", {}, "protocol"), h("th", {}, "status"), h("th", {}, "outcome"), h("th", {}, "proof"), h("th", { class: "hide-narrow" }, "updated"))),
      h("tbody", {}, data.items.map((r) => h("tr", {},
        h("td", {}, h("a", { href: `#/run/${r.run_id}` }, r.run_id.slice(0, 8))),
        h("td", {}, r.chain_label || h("span", { class: "muted" }, "deleted")),
        h("td", {}, `${r.status} (step ${Math.min(r.step, r.step_count)}/${r.step_count})`),
        h("td", {}, outcomeBadge(r.outcome)),
        h("td", {}, provenBadge(r.proven), ` ${r.proofs}/${r.step_count}`),
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
      " · ", r.status, " · ", outcomeBadge(r.outcome), " · ", provenBadge(r.proven), " · retries ", r.retry_count,
      " · started ", when(r.created_at)),
    r.message ? h("p", {}, h("em", {}, r.message)) : null,
    h("div", { id: "verdict", class: `notice ${v.valid ? "ok" : "bad"}`, role: "status" },
      v.valid ? `Chain verified: ${v.proofs} link(s), every hash recomputed.`
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

function solutionForm(challenge, onSubmit) {
  const c = challenge;
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
    fields.push(h("div", { class: "field" }, h("label", { for: "comment" }, `Comment (at least ${c.comment.min_length} characters)`), text));
    collect = () => ({ ...base, comment: { text: text.value } });
  }
  return h("form", { id: "answer", onsubmit: (ev) => { ev.preventDefault(); onSubmit(collect()); } },
    ...fields, h("button", { class: "primary", type: "submit", id: "submit-answer" }, "Submit answer"));
}

async function pageGo(id) {
  const overview = await api("GET", `/api/v1/protocols/${id}/overview`);
  const stage = h("div", {});
  const log = h("ol", { class: "steps-list", "aria-label": "Answered steps" });
  render(`Run ${overview.chain_label}`, h("h1", {}, "Run: ", overview.chain_label), log, stage);
  let response;
  try { response = await api("POST", "/api/v1/runs/begin", { uri: overview.uri }); } catch (e) { fill(stage, errorBox(e)); return; }
  let pendingUri = null, finalUri = null;

  function finish(result) {
    fill(stage, h("div", { class: "notice ok", role: "status", id: "run-done" },
      `Run finished: ${result.outcome}, ${result.proofs} proof(s). `,
      h("a", { href: `#/run/${result.run_id}`, id: "run-link" }, "See its proof chain")));
    document.getElementById("run-link").focus();
  }

  async function attest(outcome, message, solution) {
    try {
      const body = { uri: finalUri || pendingUri || overview.uri, outcome, message };
      if (solution) body.solution = solution;
      const r = await api("POST", "/api/v1/runs/attest", body);
      if (r.error_code) { show(r); return; }
      finish(r);
    } catch (e) { stage.prepend(errorBox(e)); }
  }

  function show(res) {
    response = res;
    const na = res.next_action || "";
    const step = overview.steps.find((s) => s.uri === res.current_step.uri);
    if (res.error_code === "MAX_RETRIES_EXCEEDED") { /* keep the uri we were answering for */ }
    else if (/kairos_attest/.test(na) && !res.error_code) { finalUri = firstUri(na); pendingUri = null; }
    else { pendingUri = firstUri(na); finalUri = null; }
    const outcome = h("input", { id: "final-message", value: "Done in the browser", "aria-label": "Outcome message" });
    fill(stage,
      res.error_code ? h("div", { class: "notice bad", role: "alert" }, h("strong", {}, res.error_code), ": ", res.message) : null,
      h("section", { class: "card", "aria-label": "Current step" },
        h("h2", { style: "margin-top:0" }, step ? `Step ${step.position} of ${overview.step_count}: ${step.label}` : "Step"),
        h("pre", {}, res.current_step.content),
        h("p", { class: "muted" }, res.challenge.description),
        solutionForm(res.challenge, submit)),
      h("div", { class: "row" }, outcome,
        h("button", { type: "button", class: "danger", onclick: () => attest("failure", outcome.value || "Stopped in the browser") }, "Stop: record a failure")));
    const first = stage.querySelector("#answer input, #answer textarea");
    if (first) first.focus();
  }

  async function submit(solution) {
    const step = overview.steps.find((s) => s.uri === response.current_step.uri);
    try {
      if (finalUri) {
        const msg = document.getElementById("final-message").value || "Done in the browser";
        await attest("success", msg, solution);
        return;
      }
      const r = await api("POST", "/api/v1/runs/next", { uri: pendingUri, solution });
      if (!r.error_code && step) add(log, h("li", {}, step.label, " ", provenBadge(true)));
      show(r);
    } catch (e) { stage.prepend(errorBox(e)); }
  }
  show(response);
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
      h("a", { class: "button", href: `#/entry-new${query({ type })}` }, `Write a ${type}`)),
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
    } catch (e) { fill(out, errorBox(e)); }
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
  render(`Write a ${type}`, h("h1", {}, `Write a ${type}`), await entryForm(type, null));
  document.getElementById("f-title").focus();
}

async function pageQuality(params) {
  const chosen = params.get("protocol") || "";
  const list = await api("GET", "/api/v1/protocols?sort=runs&limit=25");
  const sel = h("select", { id: "quality-protocol", "aria-label": "Protocol", onchange: (ev) => { location.hash = `#/quality${query({ protocol: ev.target.value })}`; } },
    list.items.map((p) => h("option", { value: idOf(p.uri), selected: idOf(p.uri) === chosen }, `${p.chain_label} (${p.stats.runs} runs)`)));
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
    } catch (err) { fill(body, errorBox(err)); }
  });
  return panel;
}

function triggerPanel(id) {
  const box = h("section", { id: "triggers", "aria-label": "Triggers" }, h("h2", {}, "Triggers"), h("p", { class: "muted" }, "Loading…"));
  const show = (t) => {
    const forget = async (path) => {
      try { show(await api("DELETE", path)); } catch (err) { box.append(errorBox(err)); }
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
  api("GET", `/api/v1/protocols/${id}/triggers`).then(show, (err) => fill(box, h("h2", {}, "Triggers"), errorBox(err)));
  return box;
}

// --- search evidence and triggers (end) -----------------------------------------------------

// --- router -------------------------------------------------------------------------------

const ROUTES = [
  [/^\/?$/, (m, p) => pageSearch(p), "search"],
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
    for (const a of document.querySelectorAll("[data-nav]")) {
      if (a.dataset.nav === nav) a.setAttribute("aria-current", "page");
      else a.removeAttribute("aria-current");
    }
    try { await fn(m, params); } catch (e) {
      render("Error", h("h1", {}, e.status === 404 ? "Not found" : "Something went wrong"), e instanceof ApiError ? errorBox(e) : h("pre", {}, String(e)));
    }
    main.dataset.ready = raw;
    return;
  }
  render("Not found", h("h1", {}, "Not found"), h("p", {}, "No such page. ", h("a", { href: "#/" }, "Search")));
  main.dataset.ready = raw;
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });
route();
