// The portal's graph page: fetch /api/graph and draw it with the vendored cytoscape.js.
// Pan and zoom are cytoscape's; a click opens the concept's page; the check boxes filter by
// type, status and edge kind. Every text is set as text (never as HTML).
//
// A large graph is drawn in steps (ADR 0087): cytoscape's element creation is most of a big
// first draw (about 2 s for 5,000 nodes on a loaded box, before its first frame), so the
// first `data-first` nodes are fetched and drawn alone, and the page's other nodes are
// fetched next and added a batch at a time, the counter saying how many are shown. Past 150
// nodes every node has its place on one grid sized for the whole page (preset positions: no
// layout pass, and nothing moves when a batch arrives); the viewport is fitted to the whole
// grid from the start.
(function () {
  "use strict";
  var box = document.getElementById("graph");
  if (!box) { return; }
  var SMALL = 150;  // force-directed up to this (drawn at once); a preset grid past it
  var BIG = 800;  // no labels, haystack edges, edges hidden while panning
  var BATCH = 1000;  // nodes added per step after the first draw
  var SPACING = 24;
  var api = new URL(box.dataset.api, location.href);
  var limit = parseInt(api.searchParams.get("limit") || "5000", 10);
  var first = parseInt(box.dataset.first || "0", 10);  // 0: all at once
  var stepped = first > 0 && first < limit;
  function get(url) {
    return fetch(url, { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) { throw new Error("graph: HTTP " + r.status); }
      return r.json();
    });
  }
  // the first fetch starts before cytoscape.min.js is parsed (that script comes after this
  // one); with steps it asks for the first nodes only, the whole page once those are drawn
  var head = new URL(api.href);
  if (stepped) { head.searchParams.set("limit", String(first)); }
  var arriving = get(head.href);
  var loaded = new Promise(function (resolve) {
    if (window.cytoscape) { resolve(); } else { window.addEventListener("load", resolve); }
  });
  function checkboxes(holder, values, onChange, className, on) {
    var have = {};
    holder.querySelectorAll("input").forEach(function (c) { have[c.value] = true; });
    values.forEach(function (value) {
      if (have[value]) { return; }
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "checkbox"; input.checked = on(value); input.value = value;
      input.className = className; input.addEventListener("change", onChange);
      label.appendChild(input); label.appendChild(document.createTextNode(" " + value));
      holder.appendChild(label);
    });
  }
  function draw(data) {
    var offset = parseInt((document.getElementById("graph-pages") || box).dataset.offset ||
      "0", 10);
    // the page's size: what the session holds past the offset, at most the page's limit
    var total = stepped ? Math.max(0, Math.min(limit, data.total_nodes - offset)) :
      data.nodes.length;
    var big = total > BIG;
    var upfront = stepped ? data.nodes.length : (first > 0 ? Math.min(first, total) : total);
    var small = total <= SMALL && upfront >= total;  // drawn at once, laid out force-directed
    var cols = Math.max(1, Math.ceil(Math.sqrt(total * 1.5)));  // wider than tall
    var rows = Math.max(1, Math.ceil(total / cols));
    // Past 800 nodes the semantic edges (near-duplicate links, most of a big session's
    // edges) start unchecked: edges are most of the first draw's cost.
    var edgeOn = {};
    var nodeOn = {};
    var nodes = [];  // the page's nodes in order, as cytoscape elements
    var edges = [];  // {ends: [index, index], kind, element}
    var inGraph = {};  // the ids of the nodes and edges cytoscape holds
    var next = 0;  // nodes before this one are all in the graph
    function take(found) {  // the nodes and edges of a fetch (the whole page replaces the head)
      var index = {};
      nodes = found.nodes.map(function (n, i) {
        index[n.id] = i;
        var node = { group: "nodes", data: { id: n.id, label: n.content.slice(0, 40),
          type: n.concept_type, status: n.status } };
        if (!small) { node.position = { x: (i % cols) * SPACING, y: Math.floor(i / cols) * SPACING }; }
        return node;
      });
      edges = found.edges.map(function (e) {
        if (!(e.kind in edgeOn)) { edgeOn[e.kind] = !(big && e.kind === "semantic"); }
        var id = e.kind + " " + e.source + " " + e.target;
        return { ends: [index[e.source], index[e.target]], kind: e.kind,
          element: { group: "edges", data: { id: id, source: e.source, target: e.target,
            kind: e.kind } } };
      });
    }
    function shown(node) {
      return nodeOn[node.data.type] !== false && nodeOn[node.data.status] !== false;
    }
    function edgesIn(kind) {  // the edges of a kind (any: null) whose two ends are drawn
      var out = [];
      edges.forEach(function (e) {
        var element = e.element;
        if ((kind === null ? edgeOn[e.kind] : e.kind === kind) && !inGraph[element.data.id] &&
            inGraph[element.data.source] && inGraph[element.data.target]) {
          inGraph[element.data.id] = true;
          out.push(element);
        }
      });
      return out;
    }
    function part(upto) {  // the nodes up to `upto` not drawn yet, and the edges they close
      var out = [];
      for (; next < upto; next++) {
        var node = nodes[next];
        if (inGraph[node.data.id]) { continue; }
        if (!shown(node)) { node.style = { display: "none" }; } else { delete node.style; }
        inGraph[node.data.id] = true;
        out.push(node);
      }
      return out.concat(edgesIn(null));
    }
    take(data);
    var width = box.clientWidth || 800;
    var height = box.clientHeight || 600;
    var extentX = (cols - 1) * SPACING + 2 * SPACING;
    var extentY = (rows - 1) * SPACING + 2 * SPACING;
    var zoom = Math.min(2, width / extentX, height / extentY);
    var started = performance.now();
    var cy = cytoscape({
      container: box, elements: part(upfront),
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
    window.lcgGraph = cy;
    var counter = document.getElementById("graph-count");
    var pages = document.getElementById("graph-pages");
    function count() {
      var drawn = cy.nodes().length;
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
    function refilter() {
      document.querySelectorAll("input.filter").forEach(function (c) { nodeOn[c.value] = c.checked; });
      cy.batch(function () {
        cy.nodes().forEach(function (n) {
          n.style("display", nodeOn[n.data("type")] !== false &&
            nodeOn[n.data("status")] !== false ? "element" : "none");
        });
      });
    }
    function toggleEdges(ev) {
      var kind = ev.target.value;
      edgeOn[kind] = ev.target.checked;
      if (ev.target.checked) {
        cy.add(edgesIn(kind));
      } else {
        var gone = cy.edges().filter(function (e) { return e.data("kind") === kind; });
        gone.forEach(function (e) { delete inGraph[e.id()]; });
        cy.remove(gone);
      }
      count();
    }
    function filters(found) {
      function distinct(key) {
        var seen = {};
        found.nodes.forEach(function (n) { seen[n[key]] = true; });
        return Object.keys(seen).sort();
      }
      function always() { return true; }
      checkboxes(document.getElementById("type-filters"), distinct("concept_type"), refilter,
        "filter", always);
      checkboxes(document.getElementById("status-filters"), distinct("status"), refilter,
        "filter", always);
      checkboxes(document.getElementById("edge-filters"), Object.keys(edgeOn).sort(),
        toggleEdges, "edge-filter", function (kind) { return edgeOn[kind]; });
    }
    filters(data);
    function rest() {  // one batch per task, so the page answers between them
      if (next >= nodes.length) {
        box.dataset.complete = String(cy.nodes().length);
        window.lcgGraphAllDrawnAt = performance.now();
        count();
        return;
      }
      cy.add(part(Math.min(nodes.length, next + BATCH)));
      count();
      setTimeout(rest, 0);
    }
    cy.one("render", function () {
      window.lcgGraphDrawnMs = performance.now() - started;  // from the data's arrival
      window.lcgGraphFirstDrawAt = performance.now();  // from navigation start
      box.dataset.drawn = String(cy.nodes().length);
      if (!stepped || data.nodes.length >= total) { setTimeout(rest, 0); return; }
      get(api.href).then(function (whole) {  // the page's other nodes, drawn in batches
        data = whole;
        total = whole.nodes.length;  // the session may have grown since the head was read
        take(whole);
        next = 0;  // the head's nodes are skipped: they are in the graph already
        filters(whole);
        rest();
      }).catch(failed);
    });
  }
  function failed(error) {
    var p = document.createElement("p"); p.className = "error"; p.textContent = String(error);
    box.appendChild(p);
  }
  Promise.all([arriving, loaded])
    .then(function (done) { draw(done[0]); })
    .catch(failed);
})();
