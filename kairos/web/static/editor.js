// The editor: markdown with line numbers, checked as you type by the server's own parser
// (every problem with its line), minted or updated in place.

import { KINDS, api, fill, h, idOf, plural, render } from "./lib.js";
import { problem } from "./words.js";

const SAMPLE = "# My protocol\n\n## Prepare\nCheck the working tree is clean.\n\nPROOF OF WORK: git status --porcelain\n\n## Approve\nPROOF OF WORK: user_input \"Ship it?\"\n";
const SYNTAX = "# Title (one per protocol)\n## Step label (one per step)\nPROOF OF WORK: mkdir -p src\nPROOF OF WORK: mcp tool_name\nPROOF OF WORK: user_input \"Approve?\"\nPROOF OF WORK: comment min_length=20";

function lineGutter(textarea, gutter, errLines) {
  const n = textarea.value.split("\n").length;
  fill(gutter, ...Array.from({ length: n }, (_, i) =>
    h("span", { class: errLines.has(i + 1) ? "err" : "" }, i + 1)));
  gutter.scrollTop = textarea.scrollTop;
}

/** What would stop a mint of protocol ``p`` (a title in use, a near copy), in words,
 * leaving out the protocol being edited. */
function blockers(p, editing) {
  const out = [];
  if (p.existing_uri && p.existing_uri !== editing)
    out.push(h("div", { class: "notice warn" }, "A protocol titled “", h("a", { href: `#/protocol/${idOf(p.existing_uri)}` }, p.chain_label),
      "” already exists. Tick “replace / mint anyway” to replace it, or change the title."));
  for (const d of p.duplicates.filter((x) => x.blocks_mint && x.uri !== editing && x.uri !== p.existing_uri))
    out.push(h("div", { class: "notice warn" }, `This protocol is ${Math.round(d.score * 100)} % like “`,
      h("a", { href: `#/protocol/${idOf(d.uri)}` }, d.chain_label), "”. Look at it first; tick “replace / mint anyway” to mint this one as well."));
  return out;
}

export async function pageEditor(id) {
  let original = "", existingUri = null;
  if (id) {
    const dump = await api("GET", `/api/v1/protocols/${id}?protocol=true`);
    original = dump.markdown_doc; existingUri = dump.uri;
  }
  const ta = h("textarea", { id: "markdown-input", spellcheck: "false", "aria-label": "Protocol markdown", "aria-describedby": "validation" });
  ta.value = original || SAMPLE;
  let saved = original || null; // the text as stored: nothing to save until it changes
  const gutter = h("div", { class: "gutter", "aria-hidden": "true" });
  const status = h("div", { id: "validation", "aria-live": "polite" });
  const force = h("input", { type: "checkbox", id: "force" });
  const save = h("button", { class: "primary", type: "button", id: "save" }, existingUri ? "Update" : "Mint");
  const heading = h("h1", {}, existingUri ? "Edit protocol" : "New protocol");
  const result = h("div", {});
  let errLines = new Set(), timer = null, seq = 0;
  async function validate() {
    const mine = ++seq;
    try {
      const v = await api("POST", "/api/v1/protocols/validate", { markdown_doc: ta.value });
      if (mine !== seq) return;
      errLines = new Set(v.errors.map((e) => e.line).filter(Boolean));
      const blocking = v.protocols.flatMap((p) => blockers(p, existingUri));
      const unchanged = saved !== null && ta.value === saved;
      fill(status,
        v.valid && unchanged ? h("div", { class: "notice ok", id: "saved-state" }, "Saved: no changes since.") : null,
        v.valid && !unchanged ? h("div", { class: "notice ok" }, `Valid: ${v.protocols.map((p) => `${p.chain_label} (${plural(p.step_count, "step")})`).join(", ")}`) : null,
        v.errors.length > 1 ? h("p", {}, `${v.errors.length} problems:`) : null,
        v.errors.map((e) => h("div", { class: "notice bad", role: "alert", "data-line": e.line || "" }, h("strong", {}, e.line ? `Line ${e.line}` : "Document"), `: ${e.message}`)),
        blocking,
        v.protocols.flatMap((p) => p.duplicates.filter((d) => !d.blocks_mint && d.uri !== existingUri).map((d) => h("div", { class: "muted" },
          `Similar (${Math.round(d.score * 100)} %): `, h("a", { href: `#/protocol/${idOf(d.uri)}` }, d.chain_label)))),
        v.protocols.map((p) => h("ol", { class: "steps-list" }, p.steps.map((s) => h("li", {}, s.label, " ", h("span", { class: "badge" }, KINDS[s.challenge.type] || s.challenge.type))))));
      save.disabled = !v.valid || unchanged || (blocking.length > 0 && !force.checked);
      save.title = save.disabled && v.valid && !unchanged ? "Tick “replace / mint anyway” to save despite the warning" : "";
    } catch (e) { fill(status, problem(e)); }
    lineGutter(ta, gutter, errLines);
  }
  ta.addEventListener("input", () => { lineGutter(ta, gutter, errLines); clearTimeout(timer); timer = setTimeout(validate, 250); });
  ta.addEventListener("scroll", () => { gutter.scrollTop = ta.scrollTop; });
  ta.addEventListener("keydown", (ev) => { if ((ev.ctrlKey || ev.metaKey) && ev.key === "s") { ev.preventDefault(); if (!save.disabled) save.click(); } });
  force.addEventListener("change", validate);
  save.addEventListener("click", async () => {
    fill(result);
    save.disabled = true;
    try {
      const r = await api("POST", "/api/v1/protocols", { markdown_doc: ta.value, force_update: Boolean(existingUri) || force.checked });
      const first = r.items[0];
      // From now on this page edits what was just stored.
      existingUri = first.uri; saved = ta.value; force.checked = false;
      save.textContent = "Update"; heading.textContent = "Edit protocol";
      history.replaceState(null, "", `#/editor/${idOf(first.uri)}`);
      fill(result, h("div", { class: "notice ok", role: "status" }, `${first.updated ? "Updated" : "Minted"} `,
        h("a", { href: `#/protocol/${idOf(first.uri)}`, id: "minted-link" }, first.chain_label), ` (${plural(first.step_count, "step")}).`));
    } catch (e) { fill(result, problem(e)); }
    await validate();
  });
  render(existingUri ? "Edit protocol" : "New protocol", heading,
    h("div", { class: "editor" },
      h("div", {}, h("div", { class: "code" }, gutter, ta),
        h("div", { class: "row", style: "margin-top:8px" }, save,
          h("label", { for: "force", style: "font-weight:400" }, force, " replace / mint anyway"),
          h("span", { class: "muted" }, "Ctrl+S saves")), result),
      h("div", {}, h("h2", { style: "margin-top:0" }, "Check"), status,
        h("details", {}, h("summary", {}, "Syntax"), h("pre", {}, SYNTAX)))));
  lineGutter(ta, gutter, errLines);
  ta.focus();
  await validate();
}
