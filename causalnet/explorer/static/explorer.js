// causalnet explorer: the page. It draws the server's SVG, asks the JSON API, and never evaluates
// anything it receives: node names and values are only ever put into text nodes and attributes.
"use strict";

const SVGNS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

const app = {
  model: null,          // GET /api/model
  geometry: null,
  index: {},            // node name -> position in the node list (the SVG ids use it)
  state: { evidence: {}, do: {}, cf: {}, mode: "posterior" },
  history: [],
  svg: null,
  view: null,           // the SVG viewBox {x, y, w, h}
  full: null,           // the drawing's own viewBox
  pending: 0,
};

// -- requests --------------------------------------------------------------------------

function showError(text) {
  const box = $("error");
  box.textContent = text;
  box.hidden = !text;
}

async function request(method, path, payload) {
  const started = performance.now();
  app.pending += 1;
  const timer = setInterval(() => {
    const s = ((performance.now() - started) / 1000).toFixed(1);
    $("status").textContent = `computing… ${s} s`;
    $("status").classList.add("busy");
  }, 250);
  try {
    const opts = { method, headers: {} };
    if (payload !== undefined) {
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(payload);
    }
    const resp = await fetch(path, opts);
    const type = resp.headers.get("Content-Type") || "";
    const body = type.startsWith("application/json") ? await resp.json() : await resp.text();
    if (!resp.ok) {
      const err = new Error(body && body.error ? `${body.type}: ${body.error}` : `HTTP ${resp.status}`);
      err.status = resp.status;
      throw err;
    }
    return body;
  } finally {
    clearInterval(timer);
    app.pending -= 1;
    if (!app.pending) {
      $("status").classList.remove("busy");
      $("status").textContent = `${((performance.now() - started) / 1000).toFixed(2)} s`;
    }
  }
}

// post(name, payload): one API request; a failure is shown in the error box and rethrown.
async function post(name, payload) {
  try {
    const out = await request("POST", `/api/${name}`, payload);
    showError("");
    return out;
  } catch (e) {
    showError(e.message);
    throw e;
  }
}

// -- the diagram -----------------------------------------------------------------------

function el(tag, attrs, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function nodeGroup(name) { return app.svg ? app.svg.getElementById(`cn-n-${app.index[name]}`) : null; }

function edgeGroups(child) {
  const j = app.index[child];
  return app.model.edges.filter(([u, v]) => v === child)
    .map(([u]) => app.svg.getElementById(`cn-e-${app.index[u]}-${j}`)).filter(Boolean);
}

function shapeOf(g) { return g.querySelector("path, polygon, ellipse"); }

async function loadDiagram() {
  const resp = await fetch("/api/diagram");
  const text = await resp.text();
  if (!resp.ok) {
    let msg = text;
    try { const j = JSON.parse(text); msg = `${j.type}: ${j.error}`; } catch (_) { /* plain text */ }
    $("diagram").textContent = "";
    showError(msg);
    return;
  }
  const doc = new DOMParser().parseFromString(text, "image/svg+xml");
  const svg = document.importNode(doc.documentElement, true);
  svg.querySelectorAll("title").forEach((t) => { if (t.parentNode.classList.contains("graph")) t.remove(); });
  svg.removeAttribute("width");
  svg.removeAttribute("height");
  $("diagram").textContent = "";
  $("diagram").appendChild(svg);
  app.svg = svg;
  const vb = svg.viewBox.baseVal;
  app.full = { x: vb.x, y: vb.y, w: vb.width, h: vb.height };
  fit();
  for (const node of app.model.nodes) {
    const g = nodeGroup(node.name);
    if (!g) continue;
    g.dataset.node = node.name;
    g.addEventListener("click", (ev) => { if (!app.dragged) openMenu(node, ev); });
  }
}

function setView(v) {
  app.view = v;
  app.svg.setAttribute("viewBox", `${v.x} ${v.y} ${v.w} ${v.h}`);
}

function fit() {
  // the whole drawing, at most 1.5 screen pixels per point (a small graph is not blown up)
  const f = app.full;
  const r = $("diagram").getBoundingClientRect();
  const w = Math.max(f.w + 20, r.width / 1.5), h = Math.max(f.h + 20, r.height / 1.5);
  setView({ x: f.x + f.w / 2 - w / 2, y: f.y + f.h / 2 - h / 2, w, h });
}

function zoom(factor, cx, cy) {
  const v = app.view;
  if (cx === undefined) { cx = v.x + v.w / 2; cy = v.y + v.h / 2; }
  setView({ x: cx - (cx - v.x) * factor, y: cy - (cy - v.y) * factor, w: v.w * factor, h: v.h * factor });
}

function svgPoint(ev) {
  const r = app.svg.getBoundingClientRect();
  const v = app.view;
  const s = Math.max(v.w / r.width, v.h / r.height);        // preserveAspectRatio: meet
  const ox = v.x + v.w / 2 - (r.width * s) / 2;
  const oy = v.y + v.h / 2 - (r.height * s) / 2;
  return { x: ox + (ev.clientX - r.left) * s, y: oy + (ev.clientY - r.top) * s, s };
}

function setupPanZoom() {
  const pane = $("diagram");
  pane.addEventListener("wheel", (ev) => {
    if (!app.svg) return;
    ev.preventDefault();
    const p = svgPoint(ev);
    zoom(ev.deltaY > 0 ? 1.15 : 1 / 1.15, p.x, p.y);
  }, { passive: false });
  let start = null;
  pane.addEventListener("mousedown", (ev) => {
    if (!app.svg || ev.button !== 0) return;
    start = { cx: ev.clientX, cy: ev.clientY, view: { ...app.view }, s: svgPoint(ev).s };
    app.dragged = false;
  });
  window.addEventListener("mousemove", (ev) => {
    if (!start) return;
    const dx = ev.clientX - start.cx, dy = ev.clientY - start.cy;
    if (Math.abs(dx) + Math.abs(dy) > 4) { app.dragged = true; pane.classList.add("panning"); }
    if (app.dragged) setView({ ...start.view, x: start.view.x - dx * start.s, y: start.view.y - dy * start.s });
  });
  window.addEventListener("mouseup", () => {
    start = null;
    pane.classList.remove("panning");
    setTimeout(() => { app.dragged = false; }, 0);
  });
  $("zoom-in").onclick = () => zoom(1 / 1.3);
  $("zoom-out").onclick = () => zoom(1.3);
  $("zoom-fit").onclick = fit;
}

// -- bars ------------------------------------------------------------------------------

function fmt(p) { return Number(p).toFixed(6); }

function rowsOf(node, post) {
  const G = app.geometry;
  if (node.kind !== "discrete") return [{ label: "μ±σ", text: `${Number(post.mean).toPrecision(5)} ± ${Number(post.sd).toPrecision(3)}` }];
  let rows = node.states.map((s) => ({ state: s, p: post[s] }));
  if (rows.length > G.max_rows) {
    const top = rows.slice().sort((a, b) => b.p - a.p).slice(0, G.max_rows - 1);
    const keep = new Set(top.map((r) => r.state));
    rows = rows.filter((r) => keep.has(r.state));
    rows.push({ more: node.states.length - rows.length });
  }
  return rows;
}

function drawBars(node, post, factual) {
  const g = nodeGroup(node.name);
  if (!g) return;
  const G = app.geometry;
  g.querySelectorAll(".cn-bars").forEach((b) => b.remove());
  const shape = shapeOf(g);
  const box = shape.getBBox();
  g.querySelectorAll("text:not(.cn)").forEach((t) => { t.style.display = "none"; });
  const layer = el("g", { class: "cn-bars" });
  layer.appendChild(el("text", { class: "cn cn-name", x: box.x + G.pad, y: box.y + G.header - 5 }, node.name));
  const rows = rowsOf(node, post);
  const barX = box.x + box.width - G.pad - G.value - G.bar;
  rows.forEach((r, i) => {
    const y = box.y + G.header + i * G.row;
    const row = el("g", { class: "cn-row", "data-node": node.name });
    if (r.more !== undefined) {
      row.appendChild(el("text", { class: "cn cn-state", x: box.x + G.pad, y: y + G.row - 3 }, `+${r.more} more`));
    } else if (r.state === undefined) {
      row.appendChild(el("text", { class: "cn cn-state", x: box.x + G.pad, y: y + G.row - 3 }, r.label));
      row.appendChild(el("text", { class: "cn cn-value", x: barX, y: y + G.row - 3 }, r.text));
    } else {
      row.setAttribute("data-state", r.state);
      row.setAttribute("data-p", String(r.p));
      const label = r.state.length > 12 ? `${r.state.slice(0, 11)}…` : r.state;
      row.appendChild(el("text", { class: "cn cn-state", x: box.x + G.pad, y: y + G.row - 3 }, label));
      row.appendChild(el("rect", { class: "cn-bar-bg", x: barX, y: y + 2, width: G.bar, height: G.row - 4 }));
      row.appendChild(el("rect", { class: "cn-bar", x: barX, y: y + 2, width: Math.max(0, G.bar * r.p), height: G.row - 4 }));
      if (factual && factual[r.state] !== undefined) {
        row.appendChild(el("rect", { class: "cn-factual", x: barX, y: y + G.row - 4, width: G.bar * factual[r.state], height: 2 }));
      }
      row.appendChild(el("text", { class: "cn cn-value", x: barX + G.bar + 3, y: y + G.row - 3 }, fmt(r.p)));
      const title = el("title", {}, `${node.name}=${r.state}: ${r.p}` + (factual ? ` (factual ${factual[r.state]})` : ""));
      row.appendChild(title);
    }
    layer.appendChild(row);
  });
  if (g.classList.contains("intervened")) {
    layer.appendChild(el("rect", { class: "cn-outline", x: box.x + 3, y: box.y + 3, width: box.width - 6, height: box.height - 6, rx: 4 }));
  }
  shape.parentNode.appendChild(layer);
}

function markNodes() {
  const s = app.state;
  const doMap = s.mode === "counterfactual" ? s.cf : s.do;
  for (const node of app.model.nodes) {
    const g = nodeGroup(node.name);
    if (!g) continue;
    g.classList.toggle("observed", node.name in s.evidence);
    g.classList.toggle("intervened", node.name in doMap);
    for (const e of edgeGroups(node.name)) e.classList.toggle("cut", node.name in doMap);
  }
}

function render(result) {
  markNodes();
  $("query-text").textContent = result ? result.query : "P(·)";
  $("method").textContent = result ? result.method + (result.scm ? ` — SCM: ${result.scm}` : "") : "—";
  $("undo").disabled = app.history.length === 0;
  if (!result) return;
  for (const node of app.model.nodes) {
    const post = result.posteriors[node.name];
    if (post) drawBars(node, post, result.factual ? result.factual[node.name] : null);
  }
  if (result.factual) cfTable(result);
}

function cfTable(result) {
  const box = $("cf-result");
  box.textContent = "";
  const t = document.createElement("table");
  t.className = "effect";
  t.innerHTML = "<tr><th>node</th><th>state</th><th>factual</th><th>counterfactual</th></tr>";
  for (const node of app.model.nodes) {
    if (node.kind !== "discrete") continue;
    const f = result.factual[node.name], c = result.posteriors[node.name];
    if (!f || !c) continue;
    for (const s of node.states) {
      if (Math.abs(f[s] - c[s]) < 1e-9) continue;
      const tr = document.createElement("tr");
      for (const v of [node.name, s, fmt(f[s]), fmt(c[s])]) {
        const td = document.createElement("td");
        td.textContent = v;
        tr.appendChild(td);
      }
      t.appendChild(tr);
    }
  }
  box.appendChild(t.rows.length > 1 ? t : document.createTextNode("no posterior differs from the factual one"));
}

// -- changes, undo, reset ---------------------------------------------------------------

function copyState(s) {
  return { evidence: { ...s.evidence }, do: { ...s.do }, cf: { ...s.cf }, mode: s.mode };
}

async function update(next, remember) {
  if (!app.model.has_mechanisms) {
    app.state = next;
    render(null);
    return null;
  }
  const result = next.mode === "counterfactual"
    ? await post("counterfactual", { evidence: next.evidence, do: next.cf })
    : await post("query", { evidence: next.evidence, do: next.do });
  if (remember) app.history.push(copyState(app.state));
  app.state = next;
  render(result);
  return result;
}

async function change(fn) {
  const next = copyState(app.state);
  fn(next);
  try { await update(next, true); } catch (_) { /* shown in the error box; the page keeps the last good state */ }
}

function undo() {
  const prev = app.history.pop();
  if (prev) update(prev, false).catch(() => {});
}

// -- the node menu ---------------------------------------------------------------------

function closeMenu() { $("node-menu").hidden = true; }

function button(text, cls, onclick) {
  const b = document.createElement("button");
  b.textContent = text;
  b.className = cls;
  b.onclick = () => { closeMenu(); onclick(); };
  return b;
}

function group(label, items) {
  const d = document.createElement("div");
  d.className = "group";
  const s = document.createElement("span");
  s.textContent = label;
  d.appendChild(s);
  items.forEach((i) => d.appendChild(i));
  return d;
}

function valueButtons(node, cls, set) {
  if (node.kind === "discrete") return node.states.map((st) => { const b = button(st, cls, () => set(st)); b.dataset.state = st; return b; });
  const input = document.createElement("input");
  input.type = "number";
  input.step = "any";
  input.className = `${cls}-value`;
  return [input, button("set", cls, () => set(Number(input.value)))];
}

function openMenu(node, ev) {
  const menu = $("node-menu");
  menu.textContent = "";
  menu.dataset.node = node.name;
  const h = document.createElement("h3");
  h.textContent = node.name + (node.latent ? " (latent)" : "");
  menu.appendChild(h);
  const cf = app.state.mode === "counterfactual";
  if (app.model.has_mechanisms && node.kind !== "tensor") {
    menu.appendChild(group("observe", valueButtons(node, "menu-observe", (v) => change((s) => {
      s.evidence[node.name] = v; delete s.do[node.name]; delete s.cf[node.name];
    }))));
    menu.appendChild(group(cf ? "had it been" : "do", valueButtons(node, "menu-do", (v) => change((s) => {
      if (cf) s.cf[node.name] = v; else { s.do[node.name] = v; delete s.evidence[node.name]; }
    }))));
    menu.appendChild(button("clear", "menu-clear", () => change((s) => {
      delete s.evidence[node.name]; delete s.do[node.name]; delete s.cf[node.name];
    })));
  }
  menu.appendChild(group("ask", [
    button("treatment", "menu-treatment", () => { $("cq-treatment").value = node.name; }),
    button("outcome", "menu-outcome", () => { $("cq-outcome").value = node.name; }),
    button("d-sep x", "menu-x", () => { $("ds-x").value = node.name; }),
    button("d-sep y", "menu-y", () => { $("ds-y").value = node.name; }),
  ]));
  menu.hidden = false;
  const w = menu.offsetWidth, hgt = menu.offsetHeight;
  menu.style.left = `${Math.min(ev.clientX + 6, window.innerWidth - w - 8)}px`;
  menu.style.top = `${Math.min(ev.clientY + 6, window.innerHeight - hgt - 8)}px`;
  ev.stopPropagation();
}

// -- causal question and d-separation ---------------------------------------------------

function fillSelect(sel, blank) {
  sel.textContent = "";
  if (blank) sel.appendChild(new Option("—", ""));
  for (const n of app.model.nodes) sel.appendChild(new Option(n.name, n.name));
}

function clearMarks(classes) {
  if (!app.svg) return;
  for (const c of classes) app.svg.querySelectorAll(`.${c}`).forEach((e) => e.classList.remove(c));
}

function mark(names, cls) { for (const n of names) { const g = nodeGroup(n); if (g) g.classList.add(cls); } }

function setText(el_, text) { el_.textContent = text; return el_; }

function setList(title, sets, cls) {
  const frag = document.createDocumentFragment();
  frag.appendChild(setText(document.createElement("div"), title));
  if (!sets.length) { frag.appendChild(setText(document.createElement("div"), "none")); return frag; }
  const ul = document.createElement("ul");
  ul.className = `sets ${cls}`;
  sets.forEach((s, i) => {
    const li = document.createElement("li");
    li.textContent = s.length ? `{${s.join(", ")}}` : "∅ (the empty set)";
    li.dataset.set = JSON.stringify(s);
    li.onclick = () => {
      ul.querySelectorAll("li").forEach((x) => x.classList.remove("active"));
      li.classList.add("active");
      clearMarks([cls]);
      mark(s, cls);
    };
    ul.appendChild(li);
    if (i === 0) setTimeout(() => li.onclick(), 0);
  });
  frag.appendChild(ul);
  return frag;
}

function distText(d) {
  if (!d) return "impossible";
  if ("mean" in d && "sd" in d) return `${Number(d.mean).toPrecision(5)} ± ${Number(d.sd).toPrecision(3)}`;
  return Object.entries(d).map(([s, p]) => `${s}: ${Number(p).toFixed(4)}`).join(", ");
}

async function askAdjust() {
  const x = $("cq-treatment").value, y = $("cq-outcome").value;
  const out = await post("adjust", { treatment: x, outcome: y });
  clearMarks(["treatment", "outcome", "adjust", "frontdoor", "on-path", "given"]);
  mark([x], "treatment");
  mark([y], "outcome");
  const box = $("cq-result");
  box.textContent = "";
  box.appendChild(setList("minimal adjustment sets:", out.minimal, "adjust"));
  box.appendChild(setList("front-door sets:", out.frontdoor, "frontdoor"));
  const id = document.createElement("div");
  id.id = "cq-identifiable";
  id.textContent = out.identifiable ? `P(${y} | do(${x})) is identifiable:` : `not identifiable: ${out.reason}`;
  box.appendChild(id);
  if (out.estimand) {
    const e = document.createElement("code");
    e.className = "estimand";
    e.id = "cq-estimand";
    e.textContent = `P(${y} | do(${x})) = ${out.estimand}`;
    box.appendChild(e);
  }
  if (out.effect) {
    const t = document.createElement("table");
    t.className = "effect";
    t.id = "cq-effect";
    const head = t.insertRow();
    for (const h of [x, `P(${y} | do(${x}))`, `P(${y} | ${x})`]) head.appendChild(setText(document.createElement("th"), h));
    for (const row of out.effect) {
      const tr = t.insertRow();
      for (const v of [row.value, distText(row.interventional), distText(row.observational)]) tr.insertCell().textContent = v;
    }
    box.appendChild(setText(document.createElement("div"), "interventional next to observational:"));
    box.appendChild(t);
  }
  return out;
}

async function askDsep() {
  const given = Array.from($("ds-given").selectedOptions).map((o) => o.value);
  const out = await post("dsep", { x: $("ds-x").value, y: $("ds-y").value, given });
  clearMarks(["treatment", "outcome", "adjust", "frontdoor", "on-path", "given"]);
  mark(given, "given");
  const box = $("ds-result");
  box.textContent = "";
  const v = document.createElement("div");
  v.id = "ds-verdict";
  v.className = out.d_separated ? "verdict-yes" : "verdict-no";
  v.textContent = `${out.statement}: ${out.d_separated ? "yes, d-separated" : "no, d-connected"}`;
  box.appendChild(v);
  if (out.path) {
    box.appendChild(setText(document.createElement("div"), `open path: ${out.path.join(" – ")}`));
    mark(out.path, "on-path");
    for (let i = 0; i + 1 < out.path.length; i++) {
      const a = app.index[out.path[i]], b = app.index[out.path[i + 1]];
      for (const id of [`cn-e-${a}-${b}`, `cn-e-${b}-${a}`]) {
        const e = app.svg && app.svg.getElementById(id);
        if (e) e.classList.add("on-path");
      }
    }
  }
  return out;
}

// -- start -----------------------------------------------------------------------------

async function start() {
  setupPanZoom();
  document.addEventListener("click", (ev) => { if (!$("node-menu").contains(ev.target)) closeMenu(); });
  document.addEventListener("keydown", (ev) => { if (ev.key === "Escape") closeMenu(); });
  try {
    app.model = await request("GET", "/api/model");
  } catch (e) {
    showError(e.message);
    return;
  }
  app.geometry = app.model.geometry;
  app.model.nodes.forEach((n, i) => { app.index[n.name] = i; });
  $("title").textContent = app.model.title;
  document.title = `${app.model.title} — causalnet explorer`;
  for (const id of ["cq-treatment", "cq-outcome", "ds-x", "ds-y", "ds-given"]) fillSelect($(id), false);
  if (app.model.nodes.length > 1) { $("cq-outcome").selectedIndex = app.model.nodes.length - 1; $("ds-y").selectedIndex = 1; }
  if (!app.model.has_mechanisms) {
    $("query-box").hidden = true;
    $("cf-mode").parentNode.hidden = true;
    $("undo").hidden = $("reset").hidden = true;
    $("method-panel").hidden = true;
    $("diagram-hint").textContent = "A graph without mechanisms: ask graph questions (adjustment sets, d-separation). Scroll to zoom, drag to pan.";
  }
  $("copy").onclick = () => {
    const text = $("query-text").textContent;
    if (navigator.clipboard) navigator.clipboard.writeText(text).catch(() => {});
    $("status").textContent = "query copied";
  };
  $("undo").onclick = undo;
  $("reset").onclick = () => change((s) => { s.evidence = {}; s.do = {}; s.cf = {}; });
  $("cf-mode").onchange = () => {
    const on = $("cf-mode").checked;
    $("cf-panel").hidden = !on;
    change((s) => { s.mode = on ? "counterfactual" : "posterior"; s.do = {}; s.cf = {}; });
  };
  $("cq-ask").onclick = () => askAdjust().catch(() => {});
  $("ds-ask").onclick = () => askDsep().catch(() => {});
  await loadDiagram();
  if (app.model.has_mechanisms) await update(copyState(app.state), false).catch(() => {});
  document.body.dataset.ready = "1";
}

window.cnExplorer = { app, post, change, undo, askAdjust, askDsep };
start();
