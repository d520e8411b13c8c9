/* pytest-ormbench results page: filters, sortable tables and SVG bar charts, drawn from the inline JSON.
   No library and no network: everything the page needs is in the page. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("ormbench-data").textContent);
  var SVG = "http://www.w3.org/2000/svg";
  var MODES = ["cold", "warm"], TABLES = ["default", "large"];
  var ALL = "*";
  D.groups.forEach(function (g) {  // cells come as rows (D.cellFields): make them objects again
    g.cells = g.cells.map(function (row) {
      var c = {};
      D.cellFields.forEach(function (f, i) { c[f] = row[i]; });
      return c;
    });
  });

  // ---- state: what the filters select, kept in the address's #fragment so that a view can be linked ----
  var state = {
    db: D.places.length ? D.places[0].id : ALL,
    tests: new Set(D.models.map(function (m) { return m.id; })),
    modes: new Set(MODES),
    tables: new Set(TABLES),
    arms: new Set(D.arms.map(function (a) { return a.id; })),
    shown: new Set(["spread", "statements", "instructions"])  // what the figures carry under them
  };
  var SHOWS = Array.from(state.shown);
  var sorts = {};  // table id -> {col, dir}

  function readHash() {
    var h = window.location.hash.replace(/^#/, "");
    if (!h) return;
    h.split("&").forEach(function (part) {
      var kv = part.split("="), key = kv[0], val = decodeURIComponent(kv[1] || "");
      var list = val ? val.split(",") : [];
      if (key === "db" && (val === ALL || D.places.some(function (p) { return p.id === val; }))) state.db = val;
      else if (key === "tests") state.tests = new Set(list);
      else if (key === "modes") state.modes = new Set(list);
      else if (key === "tables") state.tables = new Set(list);
      else if (key === "arms") state.arms = new Set(list);
      else if (key === "hide") state.shown = new Set(SHOWS.filter(function (v) { return list.indexOf(v) < 0; }));
    });
  }

  function writeHash() {
    var parts = ["db=" + encodeURIComponent(state.db)];
    [["tests", state.tests], ["modes", state.modes], ["tables", state.tables], ["arms", state.arms],
     ["hide", new Set(SHOWS.filter(function (v) { return !state.shown.has(v); }))]].forEach(function (kv) {
      parts.push(kv[0] + "=" + encodeURIComponent(Array.from(kv[1]).join(",")));
    });
    if (window.history && window.history.replaceState) window.history.replaceState(null, "", "#" + parts.join("&"));
  }

  // ---- helpers ----
  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) {
      if (k === "text") node.textContent = attrs[k];
      else if (k === "class") node.className = attrs[k];
      else node.setAttribute(k, attrs[k]);
    });
    (children || []).forEach(function (c) { if (c) node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); });
    return node;
  }
  function svg(tag, attrs, text) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function fmtRate(v) {  // as format.fmt_rate: 12,345 or 95.3
    if (v === null || v === undefined) return "—";
    return v >= 100 ? Math.round(v).toLocaleString("en-US")
                    : v.toLocaleString("en-US", {minimumFractionDigits: 1, maximumFractionDigits: 1});
  }
  function placeTitle(id) { var p = D.places.find(function (q) { return q.id === id; }); return p ? p.title : id; }
  function model(id) { return D.models.find(function (m) { return m.id === id; }); }
  function op(letter) { return D.ops.find(function (o) { return o.letter === letter; }); }
  function shownPlaces() { return D.places.filter(function (p) { return state.db === ALL || p.id === state.db; }); }
  function armShown(i) { return state.arms.has(D.arms[i].id); }
  function byTest(a, b) { return model(a).test - model(b).test; }

  // ---- controls ----
  function checkboxes(name, legend, items, set, render) {
    var fs = el("fieldset", {"class": name, "data-filter": name}, [el("legend", {text: legend})]);
    items.forEach(function (it) {
      var box = el("input", {type: "checkbox", value: it.value, name: name});
      box.checked = set.has(it.value);
      box.addEventListener("change", function () {
        if (box.checked) set.add(it.value); else set.delete(it.value);
        update();
      });
      fs.appendChild(el("label", {}, [box, it.swatch || null, " " + it.label]));
    });
    if (render) render(fs);
    return fs;
  }

  function buildControls() {
    var nav = document.getElementById("controls");
    nav.textContent = "";
    var select = el("select", {id: "filter-db", name: "db"});
    D.places.forEach(function (p) { select.appendChild(el("option", {value: p.id, text: p.title})); });
    if (D.places.length > 1) select.appendChild(el("option", {value: ALL, text: "All databases"}));
    select.value = state.db;
    select.addEventListener("change", function () { state.db = select.value; update(); });
    nav.appendChild(el("fieldset", {"data-filter": "db"}, [el("legend", {text: "Database"}), select]));
    nav.appendChild(checkboxes("tests", "Test", D.models.filter(function (m) {
      return D.groups.some(function (g) { return g.model === m.id; });
    }).map(function (m) { return {value: m.id, label: String(m.test)}; }), state.tests));
    nav.appendChild(checkboxes("modes", "Mode", MODES.filter(function (md) {
      return D.groups.some(function (g) { return g.mode === md; });
    }).map(function (md) { return {value: md, label: md}; }), state.modes));
    nav.appendChild(checkboxes("tables", "Table", TABLES.filter(function (t) {
      return D.groups.some(function (g) { return g.table === t; });
    }).map(function (t) { return {value: t, label: t}; }), state.tables));
    var shows = [{value: "spread", label: "min–max"}, {value: "statements", label: "statements"},
                 {value: "instructions", label: "instructions"}];
    nav.appendChild(checkboxes("show", "Show", shows, state.shown));
    nav.appendChild(checkboxes("arms", "Arms", D.arms.map(function (a) {
      return {value: a.id, label: a.label, swatch: swatch(a)};
    }), state.arms, function (fs) {
      [["all", true], ["none", false]].forEach(function (b) {
        var button = el("button", {type: "button", "data-arms": b[0], text: b[0]});
        button.addEventListener("click", function () {
          fs.querySelectorAll("input").forEach(function (box) {
            box.checked = b[1];
            if (b[1]) state.arms.add(box.value); else state.arms.delete(box.value);
          });
          update();
        });
        fs.appendChild(button);
      });
    }));
  }

  function swatch(arm) {
    var s = el("span", {"class": "swatch"});
    s.style.background = arm.hatched
      ? "repeating-linear-gradient(135deg," + arm.colour + " 0 3px,#fff 3px 5px)" : arm.colour;
    return s;
  }

  // ---- sorting ----
  function headerCell(tableId, col, label, title, onSort) {
    var th = el("th", {scope: "col", "data-col": col, text: label});
    if (title) th.title = title;
    var s = sorts[tableId];
    if (s && s.col === col) th.setAttribute("aria-sort", s.dir > 0 ? "ascending" : "descending");
    th.addEventListener("click", function () {
      var cur = sorts[tableId];
      // figures sort highest first on the first click (higher is better), names alphabetically
      var first = col === "arm" ? 1 : -1;
      sorts[tableId] = {col: col, dir: cur && cur.col === col ? -cur.dir : first};
      onSort();
    });
    return th;
  }

  function sortRows(rows, tableId, valueOf) {
    var s = sorts[tableId];
    if (!s) return rows;
    return rows.slice().sort(function (a, b) {
      if (s.col === "arm") return s.dir * D.arms[a].label.localeCompare(D.arms[b].label);
      var x = valueOf(a, s.col), y = valueOf(b, s.col);
      if (x === null && y === null) return a - b;
      if (x === null) return 1;  // no figure: last, whichever way
      if (y === null) return -1;
      return s.dir * (x - y) || a - b;
    });
  }

  // ---- chart: horizontal bars with min-max whiskers, linear from 0 under a x10 span, else log decades ----
  function barChart(title, items) {
    var rowH = 20, left = 150, right = 110, width = 720, top = 26, axisH = 38;
    var vals = [];
    items.forEach(function (it) { [it.value, it.lo, it.hi].forEach(function (v) { if (v > 0 && isFinite(v)) vals.push(v); }); });
    var height = top + Math.max(items.length, 1) * rowH + axisH;
    var root = svg("svg", {"class": "chart", width: width, height: height, viewBox: "0 0 " + width + " " + height,
                           role: "img", "aria-label": title});
    root.appendChild(svg("title", {}, title));
    root.appendChild(svg("text", {x: 0, y: 14, "font-weight": "600"}, title));
    if (!vals.length) {
      root.appendChild(svg("text", {x: left, y: top + 14}, "no rows/s figure to draw"));
      return root;
    }
    var lo = Math.min.apply(null, vals), hi = Math.max.apply(null, vals), plotW = width - left - right;
    var logScale = hi / lo >= 10, x, ticks = [];
    if (logScale) {
      var d0 = Math.floor(Math.log10(lo)), d1 = Math.ceil(Math.log10(hi));
      if (d1 === d0) d1 += 1;
      x = function (v) { return left + plotW * (Math.log10(Math.max(v, Math.pow(10, d0))) - d0) / (d1 - d0); };
      for (var d = d0; d <= d1; d++) ticks.push(Math.pow(10, d));
    } else {
      var top_ = hi * 1.05, step = Math.pow(10, Math.floor(Math.log10(top_ / 4)));
      [1, 2, 2.5, 5, 10].some(function (m) { if (top_ / (step * m) <= 5) { step *= m; return true; } return false; });
      x = function (v) { return left + plotW * v / top_; };
      for (var t = 0; t <= top_ + 1e-9; t += step) ticks.push(t);
    }
    var defs = svg("defs");
    root.appendChild(defs);
    var axis = svg("g", {"class": "axis"});
    var base = top + items.length * rowH;
    ticks.forEach(function (t) {
      axis.appendChild(svg("line", {"class": "grid", x1: x(t), x2: x(t), y1: top - 4, y2: base}));
      axis.appendChild(svg("text", {x: x(t), y: base + 14, "text-anchor": "middle"}, fmtRate(t)));
    });
    axis.appendChild(svg("text", {x: left + plotW / 2, y: base + 30, "text-anchor": "middle"},
                             logScale ? "rows/s, log scale (whole decades)" : "rows/s, linear scale from 0"));
    root.appendChild(axis);
    items.forEach(function (it, i) {
      var y = top + i * rowH, arm = D.arms[it.arm], fill = arm.colour;
      if (arm.hatched) {
        var id = "hatch-" + arm.id.replace(/[^A-Za-z0-9_-]/g, "_");
        if (!root.querySelector("#" + id)) {
          var p = svg("pattern", {id: id, width: 6, height: 6, patternUnits: "userSpaceOnUse",
                                  patternTransform: "rotate(45)"});
          p.appendChild(svg("rect", {width: 6, height: 6, fill: arm.colour}));
          p.appendChild(svg("rect", {width: 2, height: 6, fill: "#ffffff", "fill-opacity": 0.75}));
          defs.appendChild(p);
        }
        fill = "url(#" + id + ")";
      }
      root.appendChild(svg("text", {x: left - 6, y: y + 14, "text-anchor": "end"}, arm.label));
      if (!(it.value > 0)) {
        root.appendChild(svg("text", {x: left + 4, y: y + 14, fill: "#8c959f"}, "—"));
        return;
      }
      var x0 = logScale ? left : x(0), w = Math.max(x(it.value) - x0, 1);
      var bar = svg("rect", {x: x0, y: y + 3, width: w, height: rowH - 6, fill: fill});
      bar.appendChild(svg("title", {}, arm.label + ": " + fmtRate(it.value) + " rows/s" +
        (it.lo ? " (rounds " + fmtRate(it.lo) + "–" + fmtRate(it.hi) + ")" : "")));
      root.appendChild(bar);
      var end = x(it.value);
      if (it.lo > 0 && it.hi > 0 && it.hi > it.lo) {
        var a = x(it.lo), b = x(it.hi), cy = y + rowH / 2;
        root.appendChild(svg("line", {"class": "whisker", x1: a, x2: b, y1: cy, y2: cy}));
        root.appendChild(svg("line", {"class": "whisker", x1: a, x2: a, y1: cy - 4, y2: cy + 4}));
        root.appendChild(svg("line", {"class": "whisker", x1: b, x2: b, y1: cy - 4, y2: cy + 4}));
        end = Math.max(end, b);
      }
      root.appendChild(svg("text", {x: end + 4, y: y + 14}, it.text || fmtRate(it.value)));
    });
    return root;
  }

  // ---- the overall tables: per database and table size, arms x (test, mode) geometric means ----
  function groupOf(place, m, md, t) {
    return D.groups.find(function (g) { return g.place === place && g.model === m && g.mode === md && g.table === t; });
  }
  function meanOf(g, arm) { return g ? g.means.find(function (x) { return x.arm === arm; }) || null : null; }

  function renderOverall() {
    var host = document.getElementById("overall");
    host.textContent = "";
    shownPlaces().forEach(function (place) {
      TABLES.filter(function (t) { return state.tables.has(t); }).forEach(function (table) {
        var cols = [];
        D.models.map(function (m) { return m.id; }).filter(function (m) { return state.tests.has(m); }).sort(byTest)
          .forEach(function (m) {
            MODES.filter(function (md) { return state.modes.has(md); }).forEach(function (md) {
              var g = groupOf(place.id, m, md, table);
              if (g && g.means.some(function (x) { return x.rate !== null; })) {
                cols.push({id: m + "-" + md, model: m, mode: md, group: g, cold: groupOf(place.id, m, "cold", table)});
              }
            });
          });
        if (!cols.length) return;
        var id = "overall-" + place.id + "-" + table;
        var box = el("div", {"class": "group overall", id: id, "data-place": place.id, "data-table": table});
        host.appendChild(box);
        var draw = function () {
          box.textContent = "";
          var title = "Overall — " + place.title + ", " + table + " table (rows/s, higher is better)";
          box.appendChild(el("h3", {text: title}));
          var arms = D.arms.map(function (_, i) { return i; }).filter(function (i) {
            return armShown(i) && cols.some(function (c) { var x = meanOf(c.group, i); return x && x.rate !== null; });
          });
          var value = function (i, col) {
            var c = cols.find(function (k) { return k.id === col; }), x = c && meanOf(c.group, i);
            return x ? x.rate : null;
          };
          arms = sortRows(arms, id, value);
          var head = el("tr", {}, [headerCell(id, "arm", "Arm", "", draw)]);
          cols.forEach(function (c) {
            head.appendChild(headerCell(id, c.id, "Test " + model(c.model).test + " " + c.mode, model(c.model).title, draw));
          });
          var body = el("tbody");
          arms.forEach(function (i) {
            var tr = el("tr", {"data-arm": D.arms[i].id, "class": D.arms[i].control ? "control" : ""},
                        [el("td", {"class": "arm"}, [swatch(D.arms[i]), D.arms[i].label])]);
            cols.forEach(function (c) {
              var x = meanOf(c.group, i);
              if (!x || x.rate === null) { tr.appendChild(el("td", {"class": "none", text: "—"})); return; }
              var main = el("span", {"class": "v", text: x.text + (x.partial ? "¹" : "")});
              if (c.mode === "warm" && c.cold) {
                var cold = meanOf(c.cold, i);
                if (cold && cold.rate) main.appendChild(el("span", {"class": "ratio", text: " (×" + (x.rate / cold.rate).toFixed(2) + ")"}));
              }
              tr.appendChild(el("td", {"class": "num"}, [main,
                x.lo ? el("span", {"class": "s", text: fmtRate(x.lo) + "–" + fmtRate(x.hi)}) : null]));
            });
            body.appendChild(tr);
          });
          var tbl = el("table", {"class": "sortable figures"}, [el("thead", {}, [head]), body]);
          var s = sorts[id], col = s && s.col !== "arm" ? s.col : cols[0].id;
          var c = cols.find(function (k) { return k.id === col; });
          var items = arms.map(function (i) {
            var x = meanOf(c.group, i) || {};
            return {arm: i, value: x.rate, lo: x.lo, hi: x.hi, text: x.text};
          });
          var chart = barChart(place.title + ", " + table + " table: Test " + model(c.model).test + " " + c.mode +
                               ", geometric mean rows/s", items);
          box.appendChild(el("div", {"class": "pair"}, [el("div", {"class": "scroll"}, [tbl]), chart]));
          if (cols.some(function (k) { return k.group.means.some(function (x) { return x.partial; }); })) {
            box.appendChild(el("ul", {"class": "notes"}, [el("li", {text: "¹ a geometric mean over fewer object " +
              "operations than the most any arm ran in that group (see the per-test notes)."})]));
          }
        };
        draw();
      });
    });
    if (!host.childNodes.length) host.appendChild(el("p", {"class": "empty", text: "Nothing selected: no geometric mean to show."}));
  }

  // ---- the per-test tables: arms x operations, rows/s with spread, statements and instructions ----
  function renderDetail() {
    var host = document.getElementById("detail");
    host.textContent = "";
    var places = shownPlaces().map(function (p) { return p.id; });
    D.groups.filter(function (g) {
      return places.indexOf(g.place) >= 0 && state.tests.has(g.model) && state.modes.has(g.mode) && state.tables.has(g.table);
    }).forEach(function (g) {
      var id = "detail-" + g.place + "-" + g.model + "-" + g.mode + "-" + g.table;
      var box = el("div", {"class": "group detail", id: id, "data-place": g.place, "data-model": g.model,
                           "data-mode": g.mode, "data-table": g.table});
      host.appendChild(box);
      var cell = {};
      g.cells.forEach(function (c) { cell[c.arm + ":" + c.op] = c; });
      var letters = D.ops.map(function (o) { return o.letter; }).filter(function (l) {
        return g.cells.some(function (c) { return c.op === l; });
      });
      // column (op letter or "gm") -> the arm the report's Best names: decided by the report over all the group's
      // arms (its lead beyond the noise), never here; a contested column bolds nobody
      var best = g.best, contested = new Set(g.contested);
      var mark = function (th, col) {
        if (!contested.has(col)) return th;
        th.classList.add("contested");
        th.appendChild(el("span", {"class": "contested-mark", text: "contested",
          title: "the leader's lead over the runner-up is within the noise: no arm is named (see the legend above " +
                 "and the notes under this table)"}));
        return th;
      };
      var cls = function (col, i) {
        return "num" + (best[col] === i ? " best" : "") + (contested.has(col) ? " contested" : "");
      };
      var draw = function () {
        box.textContent = "";
        var title = placeTitle(g.place) + " — " + model(g.model).title + " — " + g.mode + ", " + g.table + " table";
        box.appendChild(el("h3", {text: title}));
        var arms = D.arms.map(function (_, i) { return i; }).filter(function (i) {
          return armShown(i) && (g.cells.some(function (c) { return c.arm === i; }));
        });
        var value = function (i, col) {
          if (col === "gm") { var x = meanOf(g, i); return x ? x.rate : null; }
          var c = cell[i + ":" + col];
          return c ? c.rate : null;
        };
        arms = sortRows(arms, id, value);
        var head = el("tr", {}, [headerCell(id, "arm", "Arm", "", draw)]);
        letters.forEach(function (l) { head.appendChild(mark(headerCell(id, l, l + " " + op(l).title, op(l).object ? "" : "not an object operation: left out of the geometric mean", draw), l)); });
        head.appendChild(mark(headerCell(id, "gm", "Geometric mean", "over the object operations (A–F, I–K)", draw), "gm"));
        var body = el("tbody");
        arms.forEach(function (i) {
          var armDev = (g.armDev.find(function (x) { return x[0] === i; }) || [i, []])[1];
          var tr = el("tr", {"data-arm": D.arms[i].id, "class": D.arms[i].control ? "control" : ""},
                      [el("td", {"class": "arm"}, [swatch(D.arms[i]), D.arms[i].label, armDev.length ? el("span", {
                        "class": "dev", text: "†", title: armDev.map(function (k) { return D.deviations[k]; }).join("\n")}) : null])]);
          letters.forEach(function (l) {
            var c = cell[i + ":" + l];
            if (!c) { tr.appendChild(el("td", {"class": "none", text: "—", title: "no verified figure (not supported by the arm, or not run; see the footnotes)"})); return; }
            var v = el("span", {"class": "v", text: c.text || "—"});
            if (c.dev.length) {
              v.appendChild(el("span", {"class": "dev", text: "†", title: c.dev.map(function (k) { return D.deviations[k]; }).join("\n")}));
            }
            var td = el("td", {"class": cls(l, i),
                               title: D.sources[c.src] + (c.rounds ? ", " + c.rounds + " round(s)" : "")}, [v,
              c.lo !== null ? el("span", {"class": "s", text: fmtRate(c.lo) + "–" + fmtRate(c.hi)}) : null,
              c.stmts !== null ? el("span", {"class": "st", text: c.stmts + " st."}) : null,
              c.instrText !== null ? el("span", {"class": "in", text: c.instrText + " instr/row"}) : null]);
            tr.appendChild(td);
          });
          var x = meanOf(g, i);
          tr.appendChild(!x || (x.rate === null && x.instrText === null) ? el("td", {"class": "none", text: "—"})
            : el("td", {"class": cls("gm", i)}, [
                el("span", {"class": "v", text: (x.text || "—") + (x.partial ? "¹" : "")}),
                x.lo ? el("span", {"class": "s", text: fmtRate(x.lo) + "–" + fmtRate(x.hi)}) : null,
                x.instrText !== null ? el("span", {"class": "in", text: x.instrText + " instr/row"}) : null]));
          body.appendChild(tr);
        });
        var tbl = el("table", {"class": "sortable figures"}, [el("thead", {}, [head]), body]);
        box.appendChild(el("div", {"class": "scroll"}, [tbl]));
        var s = sorts[id], col = s && s.col !== "arm" ? s.col : "gm";
        var items = arms.map(function (i) {
          if (col === "gm") { var x = meanOf(g, i) || {}; return {arm: i, value: x.rate, lo: x.lo, hi: x.hi, text: x.text}; }
          var c = cell[i + ":" + col] || {};
          return {arm: i, value: c.rate, lo: c.lo, hi: c.hi, text: c.text};
        });
        box.appendChild(barChart(placeTitle(g.place) + ", " + model(g.model).title + ", " + g.mode + ", " + g.table +
                                 " table: " + (col === "gm" ? "geometric mean" : col + " " + op(col).title) +
                                 ", rows/s", items));
        if (g.notes.length) {
          box.appendChild(el("ul", {"class": "notes"}, g.notes.map(function (k) { return el("li", {text: D.notes[k]}); })));
        }
      };
      draw();
    });
    if (!host.childNodes.length) host.appendChild(el("p", {"class": "empty", text: "Nothing selected: choose a database, a test, a mode and a table size."}));
  }

  // ---- the static tables (overhead, memory, latency, runs): filtered by database and arm, sorted in place ----
  function cellValue(td) {
    var t = td.textContent.replace(/[,×%\s]/g, "").replace(/^\+/, "");
    var n = parseFloat(t);
    return /^-?[0-9.]/.test(t) && isFinite(n) ? n : null;
  }

  function setupStatic() {
    document.querySelectorAll("#static-tables table.sortable").forEach(function (tbl, k) {
      var ths = tbl.querySelectorAll("thead th");
      ths.forEach(function (th, col) {
        th.addEventListener("click", function () {
          var key = "static-" + k, cur = sorts[key];
          var rows = Array.from(tbl.tBodies[0].rows);
          var numeric = rows.some(function (r) { return cellValue(r.cells[col]) !== null; });
          var dir = cur && cur.col === col ? -cur.dir : (numeric ? -1 : 1);
          sorts[key] = {col: col, dir: dir};
          rows.sort(function (a, b) {
            if (!numeric) {  // by code point, as the report sorts file names
              var p = a.cells[col].textContent, q = b.cells[col].textContent;
              return dir * (p < q ? -1 : p > q ? 1 : 0);
            }
            var x = cellValue(a.cells[col]), y = cellValue(b.cells[col]);
            if (x === null && y === null) return 0;
            if (x === null) return 1;
            if (y === null) return -1;
            return dir * (x - y);
          });
          rows.forEach(function (r) { tbl.tBodies[0].appendChild(r); });
          ths.forEach(function (h, j) {
            if (j === col) h.setAttribute("aria-sort", dir > 0 ? "ascending" : "descending"); else h.removeAttribute("aria-sort");
          });
        });
      });
    });
  }

  function filterStatic() {
    var hidden = new Set(D.arms.filter(function (a) { return !state.arms.has(a.id); }).map(function (a) { return a.label; }));
    document.querySelectorAll("#static-tables section").forEach(function (sec) {
      var db = sec.getAttribute("data-db");
      sec.classList.toggle("hidden", !!db && state.db !== ALL && db !== state.db);
      if (sec.getAttribute("data-kind") === "runs") return;
      sec.querySelectorAll("tbody tr").forEach(function (tr) {
        tr.classList.toggle("hidden", hidden.has(tr.cells[0].textContent));
      });
    });
  }

  function update() {
    SHOWS.forEach(function (v) { document.body.classList.toggle("hide-" + v, !state.shown.has(v)); });
    renderOverall();
    renderDetail();
    filterStatic();
    writeHash();
  }

  readHash();
  buildControls();
  setupStatic();
  update();
  document.body.setAttribute("data-ready", "1");
})();
