// drivelab charts: draws every div.chart of the page from the
// JSON inside it with uPlot (see crates/plot/src/html.rs). Once a chart is
// drawn its container gets data-points="N"; any error is listed in #errors.
(function () {
  "use strict";
  var errorsShown = 0;
  function showError(msg) {
    var box = document.getElementById("errors");
    if (!box) {
      box = document.createElement("ul");
      box.id = "errors";
      document.body.insertBefore(box, document.body.firstChild);
    }
    box.hidden = false;
    var li = document.createElement("li");
    li.textContent = String(msg);
    box.appendChild(li);
    errorsShown += 1;
    document.body.setAttribute("data-errors", String(errorsShown));
  }
  window.addEventListener("error", function (ev) {
    showError("script error: " + ev.message + " (" + (ev.filename || "page") + ":" + ev.lineno + ")");
  });
  window.addEventListener("unhandledrejection", function (ev) {
    showError("script error: " + ev.reason);
  });
  if (typeof uPlot === "undefined") {
    showError("the chart library did not load: charts cannot be drawn");
    return;
  }

  function num(v) {
    var a = Math.abs(v);
    if (v === 0) return "0";
    if (a >= 1e9) return (v / 1e9).toFixed(3) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(3) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(1) + "k";
    if (Number.isInteger(v)) return v.toFixed(0);
    if (a >= 100) return v.toFixed(1);
    if (a >= 0.01) return String(parseFloat(v.toFixed(3)));
    return v.toExponential(2);
  }
  function binary(v, suffix) {
    var u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"], i = 0;
    while (Math.abs(v) >= 1024 && i < u.length - 1) { v /= 1024; i++; }
    return (Number.isInteger(v) ? v.toFixed(0) : v.toFixed(1)) + " " + u[i] + suffix;
  }
  function dur(ns) {
    var a = Math.abs(ns);
    if (a >= 1e9) return num(ns / 1e9) + " s";
    if (a >= 1e6) return num(ns / 1e6) + " ms";
    if (a >= 1e3) return num(ns / 1e3) + " µs";
    return num(ns) + " ns";
  }
  // The same writing as drivelab_plot::format.
  function fmt(unit, v) {
    if (v == null || !isFinite(v)) return "–";
    switch (unit) {
      case "bytes": return binary(v, "");
      case "bytes_per_sec": return binary(v, "/s");
      case "ns": return dur(v);
      case "ms": return dur(v * 1e6);
      case "seconds": return v !== 0 && Math.abs(v) < 1 ? dur(v * 1e9) : num(v) + " s";
      case "percent": return num(v) + "%";
      case "fraction": return num(v * 100) + "%";
      default: return num(v);
    }
  }
  function percentileAt(x) { return 100 * (1 - Math.pow(10, -x)); }

  function heightFor(el) {
    return el.clientWidth < 600 ? 240 : 320;
  }

  var plots = [];

  function draw(el) {
    var holder = el.querySelector("script[type='application/json']");
    var spec = JSON.parse(holder.textContent);
    var xs = spec.x_scale.kind;
    var cats = xs === "categories" ? spec.x_scale.labels : null;
    var xVal = function (v) {
      if (cats) return cats[Math.round(v)] !== undefined ? cats[Math.round(v)] : "";
      if (xs === "nines") return num(parseFloat(percentileAt(v).toPrecision(6)));
      return fmt(spec.x.unit, v);
    };
    var xAxis = {
      label: spec.x.label,
      values: function (u, splits) { return splits.map(xVal); }
    };
    if (cats) {
      xAxis.splits = function () {
        var every = Math.max(1, Math.ceil(cats.length / Math.max(2, el.clientWidth / 60)));
        var out = [];
        for (var i = 0; i < cats.length; i += every) out.push(i);
        return out;
      };
      xAxis.rotate = -45;
      xAxis.size = 70;
      xAxis.gap = 4;
    } else if (xs === "nines") {
      xAxis.splits = function (u, ai, min, max) {
        var out = [];
        for (var i = Math.ceil(min); i <= Math.floor(max); i++) out.push(i);
        return out;
      };
    }
    var series = [{ label: spec.x.label, value: function (u, v) { return v == null ? "–" : xVal(v); } }];
    var bars = uPlot.paths && uPlot.paths.bars ? uPlot.paths.bars({ size: [0.7, 80] }) : null;
    spec.series.forEach(function (s, i) {
      var c = spec.colors[i];
      var unit = s.right && spec.y2 ? spec.y2.unit : spec.y.unit;
      var o = {
        label: s.label,
        stroke: c,
        width: 1.5,
        scale: s.right ? "y2" : "y",
        spanGaps: true,
        value: function (u, v) { return fmt(unit, v); }
      };
      if (s.mark === "bars") {
        o.paths = bars;
        o.fill = c;
        o.points = { show: false };
      } else if (s.mark === "points") {
        o.paths = function () { return null; };
        o.points = { show: true, size: 3, width: 0, stroke: c, fill: c };
      } else {
        // uPlot's default: dots on a line only where they are sparse (a
        // one-point line is a dot).
        o.points = { size: 5, fill: c };
      }
      series.push(o);
    });
    var scales = { x: { time: false }, y: {} };
    if (cats) scales.x.range = function () { return [-0.5, cats.length - 0.5]; };
    var fromZero = function (u, min, max) {
      var lo = Math.min(0, min), hi = Math.max(0, max);
      if (hi <= lo) hi = lo + 1;
      return [lo, hi + (hi - lo) * 0.05];
    };
    var anyPoints = spec.series.some(function (s) { return s.mark === "points"; });
    if (!anyPoints) scales.y.range = fromZero;
    var axes = [xAxis, {
      label: spec.y.label,
      size: 86,
      values: function (u, splits) { return splits.map(function (v) { return fmt(spec.y.unit, v); }); }
    }];
    if (spec.y2) {
      scales.y2 = { range: fromZero };
      axes.push({
        scale: "y2",
        side: 1,
        label: spec.y2.label,
        size: 86,
        grid: { show: false },
        values: function (u, splits) { return splits.map(function (v) { return fmt(spec.y2.unit, v); }); }
      });
    }
    var drawn = 0;
    spec.data.slice(1).forEach(function (col) {
      col.forEach(function (v) { if (v != null) drawn++; });
    });
    var target = document.createElement("div");
    el.appendChild(target);
    var opts = {
      title: spec.title,
      width: Math.max(200, el.clientWidth),
      height: heightFor(el),
      scales: scales,
      axes: axes,
      series: series,
      cursor: { drag: { x: true, y: false }, points: { size: 6 } },
      legend: { live: true },
      hooks: {
        draw: [function () { el.setAttribute("data-points", String(drawn)); }]
      }
    };
    var u = new uPlot(opts, spec.data, target);
    plots.push({ u: u, el: el });
  }

  var charts = document.querySelectorAll("div.chart");
  for (var i = 0; i < charts.length; i++) {
    try {
      draw(charts[i]);
    } catch (e) {
      showError("chart " + (charts[i].id || i) + ": " + (e && e.message ? e.message : e));
    }
  }
  document.body.setAttribute("data-charts", String(plots.length));
  var pending = null;
  window.addEventListener("resize", function () {
    if (pending) clearTimeout(pending);
    pending = setTimeout(function () {
      plots.forEach(function (p) {
        p.u.setSize({ width: Math.max(200, p.el.clientWidth), height: heightFor(p.el) });
      });
    }, 100);
  });
})();
