// A protocol's versions on its page: the list (number, content hash, when, runs on each)
// and the unified diff of any two, added and removed lines marked.

import { api, fill, h, when } from "./lib.js";
import { problem } from "./words.js";

const KIND_CLASS = { added: "diff-add", removed: "diff-del", hunk: "diff-hunk", context: "" };

function diffView(d) {
  if (!d.lines.length) return h("p", { class: "muted", id: "diff" }, `Versions ${d.from_version} and ${d.to_version} have the same text.`);
  return h("pre", { class: "diff", id: "diff", "aria-label": `Changes from version ${d.from_version} to ${d.to_version}` },
    d.lines.map((l) => h("span", { class: KIND_CLASS[l.kind], "data-kind": l.kind },
      l.kind === "added" ? h("ins", {}, l.text) : l.kind === "removed" ? h("del", {}, l.text) : l.text, "\n")));
}

export function versionPanel(id) {
  const box = h("section", { id: "versions", "aria-label": "Versions" }, h("h2", {}, "Versions"), h("p", { class: "muted" }, "Loading…"));
  api("GET", `/api/v1/protocols/${id}/versions`).then((v) => {
    const numbers = v.versions.map((x) => x.version);
    const pick = (label, value) => h("select", { "aria-label": label, name: label },
      numbers.map((n) => h("option", { value: n, selected: n === value }, `version ${n}`)));
    const older = pick("from", numbers.length > 1 ? numbers[numbers.length - 2] : numbers[0]);
    const newer = pick("to", numbers[numbers.length - 1]);
    const shown = h("div", {});
    const compare = async () => {
      try {
        fill(shown, diffView(await api("GET", `/api/v1/protocols/${id}/diff?from=${older.value}&to=${newer.value}`)));
      } catch (err) { fill(shown, problem(err)); }
    };
    fill(box, h("h2", {}, `Versions (${v.versions.length})`),
      h("p", { class: "muted" }, "Every change of this protocol is kept as a version; a run follows the version it began on to its end."),
      h("div", { class: "table-wrap" }, h("table", { class: "versions" },
        h("thead", {}, h("tr", {}, h("th", {}, "version"), h("th", {}, "content hash"), h("th", {}, "created"), h("th", {}, "steps"), h("th", {}, "runs"), h("th", {}, "ok / failed"))),
        h("tbody", {}, v.versions.map((x) => h("tr", { "data-version": x.version },
          h("td", {}, String(x.version), x.current ? h("span", { class: "badge" }, " current") : null),
          h("td", {}, h("code", { title: x.content_hash }, x.content_hash.slice(0, 12))),
          h("td", {}, when(x.created_at)), h("td", {}, x.step_count), h("td", {}, x.runs),
          h("td", {}, `${x.successes} / ${x.failures}`)))))),
      numbers.length > 1 ? h("div", { class: "row" }, "Compare ", older, " with ", newer,
        h("button", { type: "button", onclick: compare }, "Show the diff")) : null,
      shown);
  }).catch((err) => fill(box, h("h2", {}, "Versions"), problem(err)));
  return box;
}
