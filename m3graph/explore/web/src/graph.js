// Neighbourhood view of the memory graph (clip <-> memories <-> entities <-> characters).
// The page embeds the endpoint to read in data-src; nodes link to their pages. Large neighbourhoods use a
// concentric layout (linear time) instead of a force layout, so 2,000 drawn nodes stay responsive; the time
// to first draw is exposed as window.m3graphGraphStats for the benchmark.
// Readability at 2,000 nodes: no labels by default (thousands of overlapping captions are unreadable); a node's
// label shows on hover or selection, with its neighbours'; "all labels" shows every label; the legend's
// checkboxes hide or show each kind of node.
// The overview (data-view="overview", a conversation's default) draws only the clips (sessions) and the people
// in them, labelled, sessions in time order left to right and people below; clicking a session adds its turns
// (the detail endpoint for that one clip, data-detail) around it, and clicking it again removes them.
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
    { selector: "node.keep", style: { label: "data(caption)", "font-size": 11, "text-wrap": "wrap",
                                      "text-max-width": 150 } },
    { selector: "node.Clip.keep", style: { shape: "round-rectangle", width: 18, height: 18,
                                           "text-valign": "top", "text-margin-y": -4 } },
    { selector: "node.Character.keep", style: { width: 30, height: 30, "text-valign": "bottom",
                                                "text-margin-y": 4, "font-size": 13 } },
    { selector: "node.expanded", style: { "border-width": 3, "border-color": "#2f3b52" } },
    { selector: "edge.IN", style: { width: "mapData(weight, 1, 40, 1, 6)", "line-color": "#d0c4c4",
                                    "curve-style": "bezier", opacity: 0.8 } },
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

function counts(cy) {
  document.querySelectorAll("#graph-filters input[data-kind]").forEach((box) => {
    const count = document.querySelector(`[data-count="${box.dataset.kind}"]`);
    if (count) count.textContent = `(${cy.nodes(`.${box.dataset.kind}`).length})`;
  });
}

function tools(cy, data) {
  const info = document.getElementById("graph-info");
  counts(cy);
  document.querySelectorAll("#graph-filters input[data-kind]").forEach((box) => {
    const kind = box.dataset.kind;
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

function elementsOf(data) {
  return [
    ...data.nodes.map((n) => ({ data: { id: n.id, caption: n.caption, href: n.href, expand: n.expand },
                                classes: n.label })),
    ...data.edges.map((e) => ({ data: { id: e.id, source: e.source, target: e.target, weight: e.weight || 1 },
                                classes: e.type })),
  ];
}

// Sessions left to right in time order (two rows when there are many), people in a row below them.
function overviewLayout(cy, container) {
  const clips = cy.nodes(".Clip").sort((a, b) => a.data("expand") - b.data("expand"));
  const people = cy.nodes(".Character");
  const width = Math.max(container.clientWidth, 600);
  const perRow = Math.max(1, Math.min(clips.length, Math.floor(width / 190)));  // room for "Session N (M memories)"
  const step = width / (perRow + 1);
  clips.forEach((n, i) => {
    n.position({ x: step * ((i % perRow) + 1), y: 60 + 150 * Math.floor(i / perRow) });
  });
  const rows = Math.ceil(clips.length / perRow);
  const pstep = width / (people.length + 1);
  people.forEach((n, i) => { n.position({ x: pstep * (i + 1), y: 60 + 150 * rows + 120 }); });
  cy.nodes().addClass("keep");
  cy.fit(undefined, 30);
}

// A conversation's speaker nodes stand for the people already drawn: a turn links straight to its person.
function throughSpeakers(data) {
  const personOf = {};
  data.edges.filter((e) => e.type === "IS" && e.source.startsWith("speaker:"))
    .forEach((e) => { personOf[e.source] = e.target; });
  const nodes = data.nodes.filter((n) => !(n.id in personOf));
  const edges = data.edges.filter((e) => !(e.type === "IS" && e.source in personOf)).map((e) => (
    e.target in personOf ? { ...e, id: `${e.source}|SAID_BY|${personOf[e.target]}`, target: personOf[e.target] }
      : e));
  return { ...data, nodes, edges };
}

// A session's turns, fetched once and placed in an arc under it; a second click removes them.
async function toggleTurns(cy, node, detail) {
  if (node.hasClass("expanded")) {
    node.removeClass("expanded");
    cy.remove(cy.elements(`[owner = "${node.id()}"]`));
    counts(cy);
    return;
  }
  const n = node.data("expand");
  const response = await fetch(`${detail}&start=${n}&end=${n}`, { credentials: "same-origin" });
  if (!response.ok) return;
  const data = throughSpeakers(await response.json());
  const fresh = elementsOf(data).filter((el) => cy.getElementById(el.data.id).empty());
  fresh.forEach((el) => { el.data.owner = node.id(); });
  const added = cy.add(fresh);
  const arc = added.nodes();
  const centre = node.position();
  const radius = 70 + arc.length * 4;
  arc.forEach((m, i) => {  // from left to right below the session, in turn order
    const angle = Math.PI * (0.92 - (0.84 * i) / Math.max(arc.length - 1, 1));
    m.position({ x: centre.x + radius * Math.cos(angle), y: centre.y + 30 + radius * Math.sin(angle) });
  });
  node.addClass("expanded");
  counts(cy);
  document.querySelectorAll("#graph-filters input[data-kind]").forEach((box) => {
    if (!box.checked) cy.nodes(`.${box.dataset.kind}`).addClass("hidden");
  });
  cy.fit(cy.elements().filter((el) => el.visible()), 30);
}

async function draw(container) {
  const started = performance.now();
  const response = await fetch(container.dataset.src, { credentials: "same-origin" });
  if (!response.ok) {
    container.textContent = `could not load the graph: ${response.status}`;
    return;
  }
  const data = await response.json();
  const overview = container.dataset.view === "overview";
  const large = data.nodes.length > 300;
  const cy = cytoscape({
    container,
    elements: elementsOf(data),
    style: style(),
    layout: overview ? { name: "preset" }
      : large ? { name: "concentric", minNodeSpacing: 4, animate: false,
                  concentric: (n) => (n.hasClass("Character") ? 3 : n.hasClass("Memory") ? 1 : 2) }
        : { name: "cose", animate: false, randomize: false },
    textureOnViewport: large,
    hideEdgesOnViewport: large,
    pixelRatio: 1,
  });
  if (overview) overviewLayout(cy, container);
  // A tap selects (and labels) a node and its neighbours and offers its page; a double tap opens it. In the
  // overview a tap on a session also shows or hides its turns.
  cy.on("tap", "node", (event) => {
    describe(cy, event.target, true);
    if (overview && event.target.data("expand") !== undefined) toggleTurns(cy, event.target, container.dataset.detail);
  });
  cy.on("dbltap", "node", (event) => {
    const href = event.target.data("href");
    if (href) window.location.assign(href);
  });
  tools(cy, data);
  window.m3graphGraph = cy;  // for the browser tests and the benchmark
  window.m3graphToggle = (id) => toggleTurns(cy, cy.getElementById(id), container.dataset.detail);
  cy.ready(() => {
    window.m3graphGraphStats = {
      nodes: data.nodes.length, edges: data.edges.length, truncated: data.truncated, view: overview ? "overview" : "detail",
      ms: performance.now() - started,
    };
    container.dataset.drawn = String(data.nodes.length);
  });
}

document.querySelectorAll("[data-graph]").forEach((el) => { draw(el); });
