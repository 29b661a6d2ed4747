/* optiforge dashboard: draws the plots from the JSON the server embeds or serves, and polls a
   running campaign. The pages work without this file (tables, links, forms are plain HTML).
   Data is only ever handed to Plotly as numbers and as text labels (never as HTML). */
(function () {
  "use strict";
  var CONFIG = {displaylogo: false, responsive: true};
  var FONT = {family: "system-ui, sans-serif", size: 13, color: "#1a1a1a"};

  // Plotly reads a few HTML-like tags in labels; names and categorical values come from users,
  // so they are escaped to show as typed.
  function plain(text) {
    return String(text).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  }

  function layout(extra) {
    var base = {margin: {l: 60, r: 20, t: 10, b: 50}, font: FONT, hovermode: "closest",
                paper_bgcolor: "#ffffff", plot_bgcolor: "#ffffff", showlegend: true,
                legend: {orientation: "h", y: -0.25}};
    for (var k in extra) { base[k] = extra[k]; }
    return base;
  }

  function draw(id, traces, lay) {
    var el = document.getElementById(id);
    if (!el || !window.Plotly) { return Promise.resolve(); }
    return window.Plotly.react(el, traces, layout(lay), CONFIG).then(function () {
      el.setAttribute("data-rendered", "true");
    });
  }

  function readJSON(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function getJSON(url) {
    return fetch(url, {credentials: "same-origin", headers: {"Accept": "application/json"}})
      .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); });
  }

  // ---------------------------------------------------------------- campaign
  function drawCurve(h) {
    if (!h) { return; }
    var shapes = (h.collapse_rounds || []).filter(function (c) { return c.generated !== null; })
      .map(function (c) {
        return {type: "line", xref: "x", yref: "paper", x0: c.generated, x1: c.generated, y0: 0, y1: 1,
                line: {dash: "dash", color: "#a4161a", width: 1}};
      });
    draw("curve", [{x: h.generated, y: h.best, mode: "lines", line: {shape: "hv", color: "#0b57a4", width: 2},
                    name: "best so far", connectgaps: false}],
         {xaxis: {title: {text: "programs generated"}, zeroline: false},
          yaxis: {title: {text: "best score (lower is better)"}}, shapes: shapes, showlegend: false});
  }

  function drawRL(rows) {
    if (!rows || !rows.length) { return; }
    var v = rows.map(function (r) { return r.version; });
    draw("rl-plot", [
      {x: v, y: rows.map(function (r) { return r.mean_reward; }), name: "mean reward", mode: "lines+markers"},
      {x: v, y: rows.map(function (r) { return r.kl; }), name: "KL", mode: "lines+markers", yaxis: "y2"}
    ], {xaxis: {title: {text: "adapter version"}, dtick: 1}, yaxis: {title: {text: "mean reward"}},
        yaxis2: {title: {text: "KL"}, overlaying: "y", side: "right"}});
  }

  function poll(section) {
    var url = section.getAttribute("data-live-url");
    var seconds = Number(section.getAttribute("data-poll-seconds")) || 3;
    var timer = setInterval(function () {
      getJSON(url).then(function (d) {
        var status = document.getElementById("status");
        if (status) {
          var badge = document.createElement("span");
          badge.className = "status status-" + d.status;
          badge.textContent = d.status;  // text, never HTML
          status.replaceChildren(badge);
        }
        var bar = document.getElementById("progress");
        if (bar) { bar.value = Math.min(d.used, d.budget); }
        var text = document.getElementById("progress-text");
        if (text) { text.textContent = d.used + " / " + d.budget; }
        drawCurve(d.history);
        if (!d.live) {
          clearInterval(timer);
          var note = document.getElementById("live-note");
          if (note) { note.textContent = "The campaign has stopped (" + d.status + "). Reload the page for the final tables."; }
        }
      }).catch(function () { clearInterval(timer); });  // logged out or gone: stop asking
    }, seconds * 1000);
  }

  // ---------------------------------------------------------------- study
  var BIN_COLORS = ["#d9e3f0", "#bfd0e6", "#a1bada", "#7f9fcb", "#5d83bb", "#3d67a8", "#224d92", "#08306b"];

  function axisTicks(t) { return {tickvals: t.at, ticktext: t.text.map(plain), range: [-0.02, 1.02], zeroline: false}; }

  function drawStudy(d) {
    var c = d.convergence;
    var label = d.direction === "maximize" ? "best so far (max)" : "best so far (min)";
    draw("convergence", [
      {x: c.number, y: c.value, mode: "markers", name: "trial value", marker: {size: 5, color: "#7f9fcb"}},
      {x: c.number, y: c.best, mode: "lines", name: label, line: {shape: "hv", color: "#08306b", width: 2}}
    ], {xaxis: {title: {text: "trial"}}, yaxis: {title: {text: "objective"}}});

    var p = d.parallel;
    if (p.groups.length) {
      var traces = p.groups.filter(function (g) { return g.n > 0; }).map(function (g) {
        return {x: g.x, y: g.y, mode: "lines", line: {color: BIN_COLORS[g.bin], width: 1}, opacity: 0.7,
                name: "value bin " + (g.bin + 1) + " (" + g.n + ")", hoverinfo: "skip"};
      });
      var shapes = p.axes.map(function (_, i) {
        return {type: "line", x0: i, x1: i, y0: 0, y1: 1, line: {color: "#333", width: 1}};
      });
      var annotations = [];
      p.ticks.forEach(function (t, i) {
        t.at.forEach(function (u, k) {
          annotations.push({x: i, y: u, text: plain(t.text[k]), showarrow: false, xanchor: "left", xshift: 4,
                            font: {size: 11, color: "#4d4d4d"}});
        });
      });
      draw("parallel", traces, {xaxis: {tickvals: p.axes.map(function (_, i) { return i; }), ticktext: p.axes.map(plain),
                                         range: [-0.2, p.axes.length - 0.5], zeroline: false, showgrid: false},
                                yaxis: {visible: false, range: [-0.05, 1.05]}, shapes: shapes,
                                annotations: annotations, showlegend: false});
    }

    var q = d.partition;
    if (q) {
      draw("partition", [
        {x: q.outline.x, y: q.outline.y, mode: "lines", line: {color: "#9a9a9a", width: 1},
         name: q.n_regions + " regions (leaf size " + q.leaf_size + ")", hoverinfo: "skip"},
        {x: q.points.x, y: q.points.y, mode: "markers", name: "trials",
         text: q.points.number.map(function (n, i) { return "trial " + n + ": " + q.points.state[i]; }),
         hoverinfo: "text",
         marker: {size: 6, color: q.points.value, colorscale: "Viridis", reversescale: d.direction === "maximize",
                  showscale: true, colorbar: {title: {text: "value"}}, line: {width: 0.5, color: "#222"}}}
      ], {xaxis: Object.assign({title: {text: plain(q.names[0])}}, axisTicks(q.ticks[0])),
          yaxis: Object.assign({title: {text: plain(q.names[1])}, scaleanchor: "x"}, axisTicks(q.ticks[1]))});
    }
  }

  document.addEventListener("DOMContentLoaded", function () {
    drawCurve(readJSON("curve-data"));
    drawRL(readJSON("rl-data"));
    var live = document.querySelector("[data-live-url]");
    if (live) { poll(live); }
    var plots = document.querySelector("[data-plots-url]");
    if (plots) { getJSON(plots.getAttribute("data-plots-url")).then(drawStudy); }
  });
})();
