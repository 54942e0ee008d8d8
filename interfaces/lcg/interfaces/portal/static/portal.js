// The portal's graph page: fetch /api/graph and draw it with the vendored cytoscape.js.
// Pan and zoom are cytoscape's; a click opens the concept's page; the check boxes filter by
// type, status and edge kind. Every text is set as text (never as HTML).
//
// A large graph is drawn in steps (ADR 0087): cytoscape's element creation is most of a big
// first draw (about 2 s for 5,000 nodes on a loaded box, before its first frame), so the
// first `data-first` nodes are drawn at once and the rest are added a batch at a time after
// it, the counter saying how many are shown. Past 150 nodes every node has its place on one
// grid sized for the whole page (preset positions: no layout pass, and nothing moves when a
// batch arrives); the viewport is fitted to the whole grid from the start.
(function () {
  "use strict";
  var box = document.getElementById("graph");
  if (!box) { return; }
  var SMALL = 150;  // force-directed up to this (drawn at once); a preset grid past it
  var BIG = 800;  // no labels, haystack edges, edges hidden while panning
  var BATCH = 1000;  // nodes added per step after the first draw
  var SPACING = 24;
  // the fetch starts before cytoscape.min.js is parsed (that script comes after this one)
  var arriving = fetch(box.dataset.api, { credentials: "same-origin" })
    .then(function (r) { if (!r.ok) { throw new Error("graph: HTTP " + r.status); } return r.json(); });
  var loaded = new Promise(function (resolve) {
    if (window.cytoscape) { resolve(); } else { window.addEventListener("load", resolve); }
  });
  function checkboxes(holder, values, onChange, className, on) {
    values.forEach(function (value) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "checkbox"; input.checked = on(value); input.value = value;
      input.className = className; input.addEventListener("change", onChange);
      label.appendChild(input); label.appendChild(document.createTextNode(" " + value));
      holder.appendChild(label);
    });
  }
  function draw(data) {
    var total = data.nodes.length;
    var big = total > BIG;
    var first = parseInt(box.dataset.first || "0", 10);  // 0: all at once
    first = first > 0 ? Math.min(first, total) : total;
    var small = total <= SMALL && first === total;  // drawn at once, laid out force-directed
    // Past 800 nodes the semantic edges (near-duplicate links, most of a big session's
    // edges) start unchecked: edges are most of the first draw's cost.
    var edgeOn = {};
    data.edges.forEach(function (e) { edgeOn[e.kind] = !(big && e.kind === "semantic"); });
    var nodeOn = {};
    var index = {};
    var cols = Math.max(1, Math.ceil(Math.sqrt(total * 1.5)));  // wider than tall
    var rows = Math.max(1, Math.ceil(total / cols));
    var nodes = data.nodes.map(function (n, i) {
      index[n.id] = i;
      var node = { group: "nodes", data: { id: n.id, label: n.content.slice(0, 40),
        type: n.concept_type, status: n.status } };
      if (!small) { node.position = { x: (i % cols) * SPACING, y: Math.floor(i / cols) * SPACING }; }
      return node;
    });
    // each edge is drawn with the later of its two ends
    var edges = data.edges.map(function (e, i) {
      return { at: Math.max(index[e.source], index[e.target]), kind: e.kind,
        element: { group: "edges", data: { id: "e" + i, source: e.source, target: e.target,
          kind: e.kind } } };
    });
    var drawn = 0;  // nodes 0..drawn-1 are in the graph
    function shown(node) {
      return nodeOn[node.data.type] !== false && nodeOn[node.data.status] !== false;
    }
    function part(lo, hi) {
      var out = [];
      for (var i = lo; i < hi; i++) {
        if (!shown(nodes[i])) { nodes[i].style = { display: "none" }; } else { delete nodes[i].style; }
        out.push(nodes[i]);
      }
      edges.forEach(function (e) {
        if (e.at >= lo && e.at < hi && edgeOn[e.kind]) { out.push(e.element); }
      });
      return out;
    }
    var width = box.clientWidth || 800;
    var height = box.clientHeight || 600;
    var extentX = (cols - 1) * SPACING + 2 * SPACING;
    var extentY = (rows - 1) * SPACING + 2 * SPACING;
    var zoom = Math.min(2, width / extentX, height / extentY);
    var started = performance.now();
    var cy = cytoscape({
      container: box, elements: part(0, first),
      layout: small ? { name: "cose", animate: false, numIter: 300 } : { name: "preset", fit: false },
      zoom: small ? 1 : zoom,
      pan: small ? { x: 0, y: 0 } : { x: (width - (extentX - 2 * SPACING) * zoom) / 2,
        y: (height - (extentY - 2 * SPACING) * zoom) / 2 },
      textureOnViewport: big, hideEdgesOnViewport: big, pixelRatio: 1, maxZoom: 2,
      boxSelectionEnabled: false, motionBlur: false,
      style: [  // plain selectors, no per-node style functions (cheap at 5,000 nodes)
        { selector: "node", style: { "background-color": "#4a78b5",
          "label": big ? "" : "data(label)", "font-size": 8, "width": 12, "height": 12 } },
        { selector: "node[status = 'Canonical']", style: { "background-color": "#c9a227" } },
        { selector: "node[status = 'Venerable']", style: { "background-color": "#5b4a9e" } },
        { selector: "node[status = 'Candidate']", style: { "background-color": "#2e7d32" } },
        { selector: "edge", style: { "width": 1, "line-color": "#bbb",
          "target-arrow-shape": big ? "none" : "triangle", "target-arrow-color": "#bbb",
          "label": big ? "" : "data(kind)", "font-size": 6, "color": "#777",
          "curve-style": big ? "haystack" : "bezier" } }
      ]
    });
    drawn = first;
    window.lcgGraph = cy;
    var counter = document.getElementById("graph-count");
    var pages = document.getElementById("graph-pages");
    var offset = pages ? parseInt(pages.dataset.offset || "0", 10) : 0;
    function count() {
      var more = drawn < total ? " (drawing the rest)" : "";
      var beyond = data.total_nodes > total ? " · nodes " + (total ? offset + 1 : 0) + "–" +
        (offset + total) + " of " + data.total_nodes : "";
      counter.textContent = "showing " + drawn + " of " + total + " nodes" + more + ", " +
        cy.edges().length + " edges" + beyond;
    }
    count();
    if (pages) {
      document.getElementById("graph-previous").hidden = offset === 0;
      document.getElementById("graph-next").hidden = offset + total >= data.total_nodes;
    }
    cy.on("tap", "node", function (ev) {
      location.href = box.dataset.concept + (box.dataset.concept.indexOf("?") < 0 ? "?" : "&") +
        "focus=" + encodeURIComponent(ev.target.id());
    });
    function distinct(key) {
      var seen = {};
      data.nodes.forEach(function (n) { seen[n[key]] = true; });
      return Object.keys(seen).sort();
    }
    function refilter() {
      document.querySelectorAll("input.filter").forEach(function (c) { nodeOn[c.value] = c.checked; });
      cy.batch(function () {
        cy.nodes().forEach(function (n) {
          n.style("display", nodeOn[n.data("type")] !== false &&
            nodeOn[n.data("status")] !== false ? "element" : "none");
        });
      });
    }
    function always() { return true; }
    checkboxes(document.getElementById("type-filters"), distinct("concept_type"), refilter,
      "filter", always);
    checkboxes(document.getElementById("status-filters"), distinct("status"), refilter,
      "filter", always);
    function toggleEdges(ev) {
      var kind = ev.target.value;
      edgeOn[kind] = ev.target.checked;
      if (ev.target.checked) {  // the drawn nodes' edges of this kind
        cy.add(edges.filter(function (e) { return e.kind === kind && e.at < drawn; })
          .map(function (e) { return e.element; }));
      } else {
        cy.remove(cy.edges().filter(function (e) { return e.data("kind") === kind; }));
      }
      count();
    }
    checkboxes(document.getElementById("edge-filters"), Object.keys(edgeOn).sort(), toggleEdges,
      "edge-filter", function (kind) { return edgeOn[kind]; });
    function rest() {  // one batch per task, so the page answers between them
      if (drawn >= total) {
        box.dataset.complete = String(drawn);
        window.lcgGraphAllDrawnAt = performance.now();
        return;
      }
      var upto = Math.min(total, drawn + BATCH);
      cy.add(part(drawn, upto));
      drawn = upto;
      count();
      setTimeout(rest, 0);
    }
    cy.one("render", function () {
      window.lcgGraphDrawnMs = performance.now() - started;  // from the data's arrival
      window.lcgGraphFirstDrawAt = performance.now();  // from navigation start
      box.dataset.drawn = String(cy.nodes().length);
      setTimeout(rest, 0);
    });
  }
  Promise.all([arriving, loaded])
    .then(function (done) { draw(done[0]); })
    .catch(function (error) {
      var p = document.createElement("p"); p.className = "error"; p.textContent = String(error);
      box.appendChild(p);
    });
})();
