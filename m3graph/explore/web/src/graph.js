// Neighbourhood view of the memory graph (clip <-> memories <-> entities <-> characters).
// The page embeds the endpoint to read in data-src; nodes link to their pages. Large neighbourhoods use a
// concentric layout (linear time) instead of a force layout, so 2,000 drawn nodes stay responsive; the time
// to first draw is exposed as window.m3graphGraphStats for the benchmark.
// Readability at 2,000 nodes: no labels by default (thousands of overlapping captions are unreadable); a node's
// label shows on hover or selection, with its neighbours'; "all labels" shows every label; the legend's
// checkboxes hide or show each kind of node.
import cytoscape from "cytoscape";

const COLOURS = {
  Clip: "#4e79a7", Memory: "#bab0ac", Face: "#f28e2b", Voice: "#59a14f", Speaker: "#76b7b2",
  Character: "#e15759", Video: "#9c755f",
};

function style() {
  const byLabel = Object.entries(COLOURS).map(([label, colour]) => ({
    selector: `node.${label}`, style: { "background-color": colour },
  }));
  return [
    { selector: "node", style: { label: "", "font-size": 9, width: 14, height: 14, color: "#222",
                                 "text-background-color": "#fff", "text-background-opacity": 0.8,
                                 "text-background-padding": 1 } },
    ...byLabel,
    { selector: "node.Character", style: { width: 22, height: 22, "font-weight": "bold" } },
    { selector: "node.labelled, node.near, node:selected", style: { label: "data(caption)", "z-index": 10 } },
    { selector: "node:selected", style: { "border-width": 2, "border-color": "#222" } },
    { selector: "edge", style: { width: 1, "line-color": "#ccc", "curve-style": "haystack" } },
    { selector: "edge.near", style: { "line-color": "#888", width: 2 } },
    { selector: "edge.SAME_AS", style: { width: 2, "line-color": "#e15759" } },
    { selector: ".hidden", style: { display: "none" } },
  ];
}

function highlight(cy, node) {
  cy.elements(".near").removeClass("near");
  if (node) node.closedNeighborhood().addClass("near");
}

// The info line names the node (text only: captions are memory text) and links its page.
function describe(cy, node, withLink) {
  highlight(cy, node);
  const info = document.getElementById("graph-info");
  if (!info) return;
  info.textContent = `${node.classes()[0] || ""} ${node.data("caption")} `;
  const href = node.data("href");
  if (withLink && href) {
    const link = document.createElement("a");
    link.href = href;
    link.textContent = "open";
    info.appendChild(link);
  }
}

function tools(cy, data) {
  const info = document.getElementById("graph-info");
  document.querySelectorAll("#graph-filters input[data-kind]").forEach((box) => {
    const kind = box.dataset.kind;
    const count = document.querySelector(`[data-count="${kind}"]`);
    if (count) count.textContent = `(${cy.nodes(`.${kind}`).length})`;
    box.addEventListener("change", () => {
      cy.batch(() => cy.nodes(`.${kind}`).toggleClass("hidden", !box.checked));
    });
  });
  const all = document.getElementById("graph-labels");
  if (all) all.addEventListener("change", () => {
    cy.batch(() => cy.nodes().toggleClass("labelled", all.checked));
  });
  cy.on("mouseover", "node", (event) => describe(cy, event.target, false));
  cy.on("mouseout", "node", () => highlight(cy, cy.nodes(":selected")[0]));
  if (info && data.truncated) info.textContent += ` Showing the first ${data.nodes.length} nodes (the cap).`;
}

async function draw(container) {
  const started = performance.now();
  const response = await fetch(container.dataset.src, { credentials: "same-origin" });
  if (!response.ok) {
    container.textContent = `could not load the graph: ${response.status}`;
    return;
  }
  const data = await response.json();
  const elements = [
    ...data.nodes.map((n) => ({ data: { id: n.id, caption: n.caption, href: n.href }, classes: n.label })),
    ...data.edges.map((e) => ({ data: { id: e.id, source: e.source, target: e.target }, classes: e.type })),
  ];
  const large = data.nodes.length > 300;
  const cy = cytoscape({
    container,
    elements,
    style: style(),
    layout: large ? { name: "concentric", minNodeSpacing: 4, animate: false,
                      concentric: (n) => (n.hasClass("Character") ? 3 : n.hasClass("Memory") ? 1 : 2) }
                  : { name: "cose", animate: false, randomize: false },
    textureOnViewport: large,
    hideEdgesOnViewport: large,
    pixelRatio: 1,
  });
  // A tap selects (and labels) a node and its neighbours and offers its page; a double tap opens it.
  cy.on("tap", "node", (event) => describe(cy, event.target, true));
  cy.on("dbltap", "node", (event) => {
    const href = event.target.data("href");
    if (href) window.location.assign(href);
  });
  tools(cy, data);
  window.m3graphGraph = cy;  // for the browser tests and the benchmark
  cy.ready(() => {
    window.m3graphGraphStats = {
      nodes: data.nodes.length, edges: data.edges.length, truncated: data.truncated,
      ms: performance.now() - started,
    };
    container.dataset.drawn = String(data.nodes.length);
  });
}

document.querySelectorAll("[data-graph]").forEach((el) => { draw(el); });
