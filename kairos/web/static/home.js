// The home page: a search box, what the store holds (the newest protocols with their
// success and proven rates, the newest runs), and on an empty store how to fill it.

import { api, duration, h, idOf, pct, plural, provenRate, provenBadge, render, stateBadge, when } from "./lib.js";

const EXAMPLE = "examples/release.md";

function searchBox() {
  const input = h("input", { id: "q", type: "search", name: "q", size: 40, placeholder: "What do you want to do or know?", "aria-label": "Search" });
  return h("form", { class: "row", role: "search", onsubmit: (ev) => {
    ev.preventDefault();
    location.hash = `#/search?q=${encodeURIComponent(input.value.trim())}`;
  } }, input, h("button", { class: "primary", type: "submit" }, "Search"));
}

/** How to put the example protocol into the store this server serves. */
function firstRun(home) {
  const env = (home.store.home ? `KAIROS_HOME=${home.store.home} ` : "")
    + (home.space !== "default" ? `KAIROS_SPACE=${home.space} ` : "");
  const where = home.store.home
    ? `This server keeps its store in ${home.store.home}. A command run with another KAIROS_HOME (the README walkthrough uses a scratch one) fills another store, which this page does not show.`
    : "This server keeps its store in PostgreSQL: run the command with the server's KAIROS_DATABASE_URL.";
  return h("section", { class: "card", id: "first-run", "aria-label": "Getting started" },
    h("h2", { style: "margin-top:0" }, "Nothing is stored here yet"),
    h("p", {}, "Mint the example protocol from the KAIROS checkout, then reload this page:"),
    h("pre", {}, `${env}.venv/bin/kairos mint ${EXAMPLE}`),
    h("p", { class: "muted" }, where),
    h("p", {}, "Or ", h("a", { href: "#/editor" }, "write a protocol in the editor"),
      ", or run ", h("code", {}, "kairos demo"), " to mint a sample and watch an agent's calls."));
}

function recentProtocols(home) {
  const p = home.protocols;
  return [h("h2", {}, "Recent protocols"),
    h("div", { class: "table-wrap" }, h("table", { id: "recent-protocols" },
      h("thead", {}, h("tr", {}, h("th", {}, "protocol"), h("th", {}, "runs"), h("th", {}, "success"),
        h("th", {}, "proven"), h("th", { class: "hide-narrow" }, "changed"))),
      h("tbody", {}, p.recent.map((x) => h("tr", {},
        h("td", {}, h("a", { href: `#/protocol/${idOf(x.uri)}` }, x.chain_label),
          h("div", { class: "muted" }, plural(x.step_count, "step"))),
        h("td", {}, x.stats.runs), h("td", {}, pct(x.stats.success_rate)),
        h("td", { title: "finished runs whose every step was proven" }, pct(provenRate(x.stats))),
        h("td", { class: "hide-narrow" }, when(x.updated_at))))))),
    h("p", {}, h("a", { href: "#/protocols" }, `All protocols (${p.total}) →`))];
}

function recentRuns(home) {
  const r = home.runs;
  const expiry = home.run_idle_minutes
    ? `A run left without an answer for ${duration(home.run_idle_minutes)} is recorded as abandoned.` : "";
  return [h("h2", {}, "Recent runs"),
    r.recent.length ? h("div", { class: "table-wrap" }, h("table", { id: "recent-runs" },
      h("thead", {}, h("tr", {}, h("th", {}, "protocol"), h("th", {}, "state"), h("th", {}, "proof"),
        h("th", { class: "hide-narrow" }, "updated"))),
      h("tbody", {}, r.recent.map((x) => h("tr", {},
        h("td", {}, h("a", { href: `#/run/${x.run_id}` }, x.chain_label || "deleted protocol")),
        h("td", {}, stateBadge(x)), h("td", {}, provenBadge(x.proven)),
        h("td", { class: "hide-narrow" }, when(x.updated_at)))))))
      : h("p", { class: "muted" }, "No runs yet: open a protocol and press “Run it”."),
    h("p", {}, h("a", { href: "#/runs" }, `All runs (${r.total}) →`),
      r.active ? h("span", { class: "muted" }, ` · ${r.active} active`) : null),
    expiry ? h("p", { class: "muted" }, expiry) : null];
}

export async function pageHome() {
  const home = await api("GET", "/api/v1/home");
  const empty = home.protocols.total === 0;
  render("Home", h("h1", {}, "KAIROS"),
    h("p", { class: "muted" }, `Space ${home.space}: ${plural(home.protocols.total, "protocol")}, ${plural(home.runs.total, "run")}.`),
    searchBox(), empty ? firstRun(home) : [recentProtocols(home), recentRuns(home)]);
  document.getElementById("q").focus();
}
