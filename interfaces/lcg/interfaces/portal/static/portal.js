// The portal's graph page: fetch /api/graph and draw it with the vendored cytoscape.js.
// Pan and zoom are cytoscape's; a click opens the concept's page; the check boxes filter by
// type and status. Every text is set as text (never as HTML).
(function () {
  "use strict";
  var box = document.getElementById("graph");
  if (!box) { return; }
  function checkboxes(holder, values, onChange) {
    values.forEach(function (value) {
      var label = document.createElement("label");
      var input = document.createElement("input");
      input.type = "checkbox"; input.checked = true; input.value = value;
      input.className = "filter"; input.addEventListener("change", onChange);
      label.appendChild(input); label.appendChild(document.createTextNode(" " + value));
      holder.appendChild(label);
    });
  }
  fetch(box.dataset.api, { credentials: "same-origin" })
    .then(function (r) { if (!r.ok) { throw new Error("graph: HTTP " + r.status); } return r.json(); })
    .then(function (data) {
      var big = data.nodes.length > 800;  // no labels, haystack edges, edges hidden on pan
      var small = data.nodes.length <= 150;  // force-directed; a grid past that (draws at once)
      // Past 800 nodes the semantic edges (near-duplicate links, most of a big session's
      // edges) start unchecked: edges are most of the first draw's cost.
      var edgeOn = big ? { semantic: false } : {};
      function edgesOf(kind) {
        var out = [];
        data.edges.forEach(function (e, i) {
          if (e.kind === kind) {
            out.push({ group: "edges", data: { id: "e" + i, source: e.source,
              target: e.target, kind: e.kind } });
          }
        });
        return out;
      }
      var elements = data.nodes.map(function (n) {
        return { group: "nodes", data: { id: n.id, label: n.content.slice(0, 40),
          type: n.concept_type, status: n.status } };
      });
      var kinds = {};
      data.edges.forEach(function (e) { kinds[e.kind] = true; });
      Object.keys(kinds).forEach(function (kind) {
        if (edgeOn[kind] !== false) { elements = elements.concat(edgesOf(kind)); }
      });
      var started = performance.now();
      var cy = cytoscape({
        container: box, elements: elements,
        layout: small ? { name: "cose", animate: false, numIter: 300 } : { name: "grid" },
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
        var on = {};
        document.querySelectorAll("input.filter").forEach(function (c) { on[c.value] = c.checked; });
        cy.batch(function () {
          cy.nodes().forEach(function (n) {
            n.style("display", on[n.data("type")] !== false && on[n.data("status")] !== false ?
              "element" : "none");
          });
        });
      }
      checkboxes(document.getElementById("type-filters"), distinct("concept_type"), refilter);
      checkboxes(document.getElementById("status-filters"), distinct("status"), refilter);
      var edgeBox = document.getElementById("edge-filters");
      Object.keys(kinds).sort().forEach(function (kind) {
        var label = document.createElement("label");
        var input = document.createElement("input");
        input.type = "checkbox"; input.checked = edgeOn[kind] !== false; input.value = kind;
        input.className = "edge-filter";
        input.addEventListener("change", function () {
          if (input.checked) { cy.add(edgesOf(kind)); } else {
            cy.remove(cy.edges().filter(function (e) { return e.data("kind") === kind; }));
          }
        });
        label.appendChild(input); label.appendChild(document.createTextNode(" " + kind));
        edgeBox.appendChild(label);
      });
      document.getElementById("graph-count").textContent = data.nodes.length + " of " +
        data.total_nodes + " nodes, " + data.edges.length + " edges";
      cy.one("render", function () {
        window.lcgGraphDrawnMs = performance.now() - started;  // from the data's arrival
        window.lcgGraphFirstDrawAt = performance.now();  // from navigation start
        box.dataset.drawn = String(cy.nodes().length);
      });
      window.lcgGraph = cy;
    })
    .catch(function (error) {
      var p = document.createElement("p"); p.className = "error"; p.textContent = String(error);
      box.appendChild(p);
    });
})();
