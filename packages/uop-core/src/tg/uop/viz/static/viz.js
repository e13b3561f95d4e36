// tg VIZ: groups (schedules, kernels) -> steps (each rewrite, then each of its matches) -> graph, diff, source; a timeline.
"use strict";
const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const state = { groups: [], group: -1, steps: [], step: -1, info: null };

// node colours by op: each family one hue
const FAMILIES = [
  [["PARAM", "DEFINE_VAR", "DEFINE_LOCAL", "DEFINE_REG", "BUFFER", "BUFFER_VIEW", "UNIQUE", "DEVICE"], "#e0b0ff"],
  [["CONST", "VCONST", "IOTA"], "#c8d0d8"],
  [["RANGE", "END", "SPECIAL", "IF", "ENDIF", "BARRIER"], "#ffb870"],
  [["REDUCE", "REDUCE_AXIS", "WMMA"], "#ff8a80"],
  [["INDEX", "LOAD", "STORE"], "#7fd3ff"],
  [["RESHAPE", "EXPAND", "PERMUTE", "PAD", "SHRINK", "FLIP"], "#b3e6a1"],
  [["VECTORIZE", "GEP", "CONTRACT", "UNROLL", "CAST", "BITCAST"], "#f5e08a"],
  [["SINK", "GROUP", "AFTER", "KERNEL", "CALL", "CUSTOM_KERNEL", "COPY", "CONTIGUOUS", "DETACH", "ASSIGN", "BIND", "NOOP", "CUSTOM"], "#9aa7ff"],
];
const COLOR = {};
for (const [ops, c] of FAMILIES) for (const op of ops) COLOR[op] = c;
const colorOf = (op) => COLOR[op] || "#ffd0c0";  // ALU ops

async function api(path) {
  const r = await fetch("/api/" + path);
  const j = await r.json();
  if (!r.ok) throw new Error(j.error || r.statusText);
  return j;
}
const el = (tag, cls, text) => { const e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; };

// ***** lists *****
function renderGroups() {
  const nav = $("groups");
  nav.replaceChildren();
  state.groups.forEach((g, i) => {
    const d = el("div", "item group");
    d.dataset.i = i;
    d.title = `${g.kind} ${g.name}: ${g.rewrites} rewrites, ${g.matches} matches`;
    d.append(el("span", "kind", {schedule: "S", kernel: "K", rewrite: "R"}[g.kind] || "?"), el("span", "name", g.name), el("span", "count", g.matches));
    d.title += `  (#${i})`;
    d.onclick = () => selectGroup(i);
    nav.append(d);
  });
}

async function selectGroup(i) {
  if (i < 0 || i >= state.groups.length) return;
  state.group = i;
  $("steps").replaceChildren();  // at once: nothing of the previous group can be clicked while this one loads
  for (const d of document.querySelectorAll("#groups .item")) d.classList.toggle("selected", +d.dataset.i === i);
  document.querySelector(`#groups .item[data-i="${i}"]`).scrollIntoView({block: "nearest"});
  const info = await api(`group/${i}`);
  if (state.group !== i) return;  // a newer selection won
  state.info = info;
  state.steps = [];
  const nav = $("steps");
  nav.replaceChildren();
  info.rewrites.forEach((rw, r) => {
    state.steps.push([r, 0]);
    const d = el("div", "item step");
    d.append(el("span", "name", rw.name + " "), el("span", "loc", rw.loc), el("span", "count", rw.matches.length));
    nav.append(d);
    rw.matches.forEach(([loc, text], k) => {
      state.steps.push([r, k + 1]);
      const m = el("div", "item step match", text);
      m.title = loc;
      nav.append(m);
    });
  });
  [...nav.children].forEach((d, s) => { d.dataset.s = s; d.onclick = () => selectStep(s); });
  const src = info.info.source;
  $("source").replaceChildren(...(src ? highlight(src) : [el("span", "com", info.kind === "kernel" ? "no source" : `${info.kind}: no source`)]));
  await selectStep(state.steps.length ? 0 : -1);
}

async function selectStep(s) {
  if (s < 0 || s >= state.steps.length) { $("graphsvg").replaceChildren(); $("diff").replaceChildren(); $("stepinfo").textContent = ""; return; }
  state.step = s;
  for (const d of document.querySelectorAll("#steps .item")) d.classList.toggle("selected", +d.dataset.s === s);
  document.querySelector(`#steps .item[data-s="${s}"]`).scrollIntoView({block: "nearest"});
  const [r, k] = state.steps[s], g = state.group;
  const st = await api(`step/${g}/${r}/${k}`);
  if (state.step !== s || state.group !== g) return;  // a newer selection won
  const rw = state.info.rewrites[r];
  $("stepinfo").textContent = k === 0 ? `${rw.name} (${rw.loc}): input graph, ${rw.matches.length} matches; diff: input -> output`
                                      : `${rw.name} match ${k}/${rw.matches.length}: ${st.pattern[1]}  (${st.pattern[0]})`;
  drawGraph(st.graph, new Set(st.changed));
  if (!st.diff.length) { $("diff").replaceChildren(el("span", "com", "(no change)")); return; }
  $("diff").replaceChildren(...st.diff.map((l) => el("div", l.startsWith("@@") ? "hunk" : l.startsWith("+") ? "add" : l.startsWith("-") ? "del" : "", l)));
}

// ***** graph *****
function label(n) {
  const arg = n.arg === "None" ? "" : n.arg.length > 40 ? n.arg.slice(0, 37) + "..." : n.arg;
  return [n.op, n.dtype.replace(/^dtypes\./, ""), arg].filter((x) => x).join("\n");
}

function drawGraph(graph, changed) {
  const svg = $("graphsvg");
  svg.replaceChildren();
  const g = new dagre.graphlib.Graph();
  g.setGraph({rankdir: "BT", nodesep: 14, ranksep: 26, marginx: 10, marginy: 10});
  g.setDefaultEdgeLabel(() => ({}));
  const shown = new Set(graph.nodes.map((n) => n.id));
  for (const n of graph.nodes) {
    const lines = label(n).split("\n");
    g.setNode(String(n.id), {n, lines, width: Math.max(...lines.map((l) => l.length)) * 6.7 + 14, height: lines.length * 13 + 8});
  }
  for (const n of graph.nodes) for (const s of new Set(n.src)) if (shown.has(s)) g.setEdge(String(s), String(n.id));
  dagre.layout(g);
  const root = document.createElementNS(SVG, "g");
  for (const e of g.edges()) {
    const p = document.createElementNS(SVG, "path");
    p.setAttribute("class", "edge");
    p.setAttribute("d", g.edge(e).points.map((pt, i) => `${i ? "L" : "M"}${pt.x},${pt.y}`).join(" "));
    root.append(p);
  }
  for (const id of g.nodes()) {
    const v = g.node(id);
    const ng = document.createElementNS(SVG, "g");
    ng.setAttribute("class", "node" + (changed.has(v.n.id) ? " changed" : ""));
    ng.setAttribute("data-op", v.n.op);
    ng.setAttribute("transform", `translate(${v.x - v.width / 2},${v.y - v.height / 2})`);
    const rect = document.createElementNS(SVG, "rect");
    rect.setAttribute("width", v.width); rect.setAttribute("height", v.height); rect.setAttribute("fill", colorOf(v.n.op));
    const title = document.createElementNS(SVG, "title");
    title.textContent = `n${v.n.id} ${v.n.op} ${v.n.dtype} ${v.n.arg}`;
    ng.append(title, rect);
    v.lines.forEach((l, i) => {
      const t = document.createElementNS(SVG, "text");
      t.setAttribute("x", 7); t.setAttribute("y", 15 + i * 13);
      t.textContent = l;
      ng.append(t);
    });
    root.append(ng);
  }
  svg.append(root);
  const {width, height} = g.graph(), box = svg.getBoundingClientRect();
  const w = Math.max(width, box.width), h = Math.max(height, box.height);  // never drawn larger than life
  view.box = [(width - w) / 2, (height - h) / 2, w, h];
  view.apply();
  if (graph.hidden) $("stepinfo").textContent += `  [${graph.hidden} nodes further from the root not drawn]`;
}

// pan (drag) and zoom (wheel) through the SVG's viewBox
const view = {
  box: [0, 0, 100, 100],
  apply() { $("graphsvg").setAttribute("viewBox", this.box.join(" ")); },
};
(() => {
  const svg = $("graphsvg");
  let drag = null;
  svg.addEventListener("wheel", (e) => {
    e.preventDefault();
    const r = svg.getBoundingClientRect(), [x, y, w, h] = view.box, f = e.deltaY > 0 ? 1.15 : 1 / 1.15;
    const px = x + (e.clientX - r.left) / r.width * w, py = y + (e.clientY - r.top) / r.height * h;
    view.box = [px - (px - x) * f, py - (py - y) * f, w * f, h * f];
    view.apply();
  }, {passive: false});
  svg.addEventListener("mousedown", (e) => { drag = [e.clientX, e.clientY, ...view.box]; });
  window.addEventListener("mouseup", () => { drag = null; });
  window.addEventListener("mousemove", (e) => {
    if (!drag) return;
    const r = svg.getBoundingClientRect(), [cx, cy, x, y, w, h] = drag, s = Math.max(w / r.width, h / r.height);
    view.box = [x - (e.clientX - cx) * s, y - (e.clientY - cy) * s, w, h];
    view.apply();
  });
})();

// ***** source highlighting (C and LLVM IR) *****
const KEYWORDS = new Set(("if else for while do return break continue switch case default static const volatile restrict struct union typedef " +
  "extern inline sizeof define declare ret br label load store getelementptr inbounds alloca phi call icmp fcmp select add sub mul fadd fsub " +
  "fmul fdiv sdiv udiv srem urem shl lshr ashr and or xor zext sext trunc fpext fptrunc sitofp uitofp fptosi fptoui bitcast to align " +
  "nsw nuw fast entry").split(" "));
const TYPES = /^(void|bool|char|short|int|long|unsigned|signed|float|double|half|__bf16|_Float16|size_t|u?int(8|16|32|64)_t|i1|i8|i16|i32|i64|ptr|bfloat|x86_fp80)$/;
const TOKEN = /(\/\/[^\n]*|\/\*[\s\S]*?\*\/|;[^\n]*|"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'|\b0x[0-9a-fA-F]+[uUlLfF]*\b|\b\d+(?:\.\d*)?(?:[eE][+-]?\d+)?[uUlLfF]*\b|[A-Za-z_][A-Za-z0-9_.]*)/g;
function highlight(src) {
  const out = [];
  let last = 0;
  for (const m of src.matchAll(TOKEN)) {
    if (m.index > last) out.push(document.createTextNode(src.slice(last, m.index)));
    const t = m[0];
    const cls = t.startsWith("//") || t.startsWith("/*") || t.startsWith(";") ? "com" : t[0] === '"' || t[0] === "'" ? "str" :
      /^[0-9]/.test(t) ? "num" : TYPES.test(t) ? "ty" : KEYWORDS.has(t) ? "kw" : null;
    out.push(cls ? el("span", cls, t) : document.createTextNode(t));
    last = m.index + t.length;
  }
  out.push(document.createTextNode(src.slice(last)));
  return out;
}

// ***** timeline: one lane per device, a bar per launch *****
function drawTimeline(events) {
  const svg = $("timelinesvg");
  svg.replaceChildren();
  if (!events.length) { svg.setAttribute("width", 400); const t = document.createElementNS(SVG, "text"); t.setAttribute("class", "lane");
    t.setAttribute("x", 10); t.setAttribute("y", 20); t.textContent = "no launches recorded"; svg.append(t); return; }
  const t0 = Math.min(...events.map((e) => e.start_ns)), t1 = Math.max(...events.map((e) => e.start_ns + e.dur_ns));
  const devices = [...new Set(events.map((e) => e.device))];
  const W = Math.max(window.innerWidth - 20, Math.min(events.length * 12, 20000)), L = 70, lane = Math.min(40, 90 / devices.length);
  svg.setAttribute("width", W);
  const x = (t) => L + (t - t0) / Math.max(t1 - t0, 1) * (W - L - 10);
  devices.forEach((d, i) => { const t = document.createElementNS(SVG, "text"); t.setAttribute("class", "lane"); t.setAttribute("x", 4);
    t.setAttribute("y", 14 + i * lane + lane / 2); t.textContent = d; svg.append(t); });
  for (const e of events) {
    const i = devices.indexOf(e.device), x0 = x(e.start_ns), w = Math.max(x(e.start_ns + e.dur_ns) - x0, 2);
    const r = document.createElementNS(SVG, "rect");
    r.setAttribute("x", x0); r.setAttribute("y", 6 + i * lane); r.setAttribute("width", w); r.setAttribute("height", lane - 4);
    r.setAttribute("fill", e.kind === "copy" ? "#7fd3ff" : e.kind === "batch" ? "#9aa7ff" : "#ffb870");
    r.setAttribute("class", "launch");
    const title = document.createElementNS(SVG, "title");
    title.textContent = `${e.name} (${e.kind} on ${e.device}): ${(e.dur_ns / 1000).toFixed(1)} us at +${((e.start_ns - t0) / 1e6).toFixed(3)} ms`;
    r.append(title);
    r.onclick = () => { const k = state.groups.findLastIndex((g) => g.kind === "kernel" && g.name === e.name); if (k >= 0) selectGroup(k); };
    svg.append(r);
    const text = `${e.name} ${(e.dur_ns / 1000).toFixed(1)} us`;
    if (w > text.length * 6 + 4) { const t = document.createElementNS(SVG, "text"); t.setAttribute("x", x0 + 2); t.setAttribute("y", 6 + i * lane + lane / 2 + 2);
      t.textContent = text; svg.append(t); }
  }
  const span = document.createElementNS(SVG, "text");
  span.setAttribute("class", "lane"); span.setAttribute("x", 4); span.setAttribute("y", 100);
  span.textContent = `${events.length} launch${events.length === 1 ? "" : "es"} over ${((t1 - t0) / 1e6).toFixed(2)} ms`;
  svg.append(span);
}

// ***** keyboard: up/down through steps, left/right through groups *****
document.addEventListener("keydown", (e) => {
  const moves = {ArrowUp: () => selectStep(state.step - 1), ArrowDown: () => selectStep(state.step + 1),
                 ArrowLeft: () => selectGroup(state.group - 1), ArrowRight: () => selectGroup(state.group + 1)};
  if (moves[e.key]) { e.preventDefault(); moves[e.key](); }
});

(async () => {
  const {groups, path} = await api("groups");
  state.groups = groups;
  $("path").textContent = path;
  renderGroups();
  drawTimeline(await api("timeline"));
  const first = groups.findIndex((g) => g.kind === "kernel");
  if (groups.length) await selectGroup(first >= 0 ? first : 0);
  document.body.dataset.ready = "1";
})().catch((e) => { $("stepinfo").textContent = "error: " + e.message; });
