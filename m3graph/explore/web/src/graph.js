// Neighbourhood view of the memory graph (clip <-> memories <-> entities <-> characters).
// The page embeds the endpoint to read in data-src; nodes link to their pages. Large neighbourhoods use a
// concentric layout (linear time) instead of a force layout, so 2,000 drawn nodes stay responsive; the time
// to first draw is exposed as window.m3graphGraphStats for the benchmark.
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
    { selector: "node", style: { label: "data(caption)", "font-size": 8, width: 14, height: 14, color: "#222" } },
    ...byLabel,
    { selector: "node.Character", style: { width: 22, height: 22, "font-weight": "bold" } },
    { selector: "edge", style: { width: 1, "line-color": "#ccc", "curve-style": "haystack" } },
    { selector: "edge.SAME_AS", style: { width: 2, "line-color": "#e15759" } },
  ];
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
  cy.on("tap", "node", (event) => {
    const href = event.target.data("href");
    if (href) window.location.assign(href);
  });
  cy.ready(() => {
    window.m3graphGraphStats = {
      nodes: data.nodes.length, edges: data.edges.length, truncated: data.truncated,
      ms: performance.now() - started,
    };
    container.dataset.drawn = String(data.nodes.length);
  });
}

document.querySelectorAll("[data-graph]").forEach((el) => { draw(el); });
