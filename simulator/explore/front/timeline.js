// The explorer's timeline in the browser: one row per algorithm on a shared time axis, each
// request of the shown client a mark, and the chosen request stepped through here.
//
// The kernel sends the rows once; stepping, scrubbing, zooming, jumping and playing happen in
// this page, drawn on two canvases per row (the marks, redrawn when the view changes, and an
// overlay with the chosen request, the limit and the counted window, redrawn on every step).
// Only the chosen index, the view, the limit and the requests a reader adds go back.
//
// Requests that share an instant are spread side by side around it (never further than 0.4 of
// the way to the next instant), so a burst of 100 at one millisecond is 100 marks to hover.
// The same module runs in JupyterLab, in Voila, and inlined in an exported page whose model
// is a small object with the same get/set/on/save_changes.

const NORMAL = { left: 46, right: 14, top: 6, plot: 50, axis: 20, tick: 12, r: 3.5 };
const LARGE = { left: 60, right: 16, top: 8, plot: 66, axis: 26, tick: 15, r: 5 };
const RATES = [1, 2, 5, 10, 20, 50, 100, 200];
const STEPS_MS = [1, 2, 5, 10, 20, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000, 15000,
  30000, 60000, 120000, 300000, 600000, 1800000, 3600000, 7200000, 21600000, 86400000];
const MS_BELOW = 10000; // a view this short (ms) or shorter reads in ms
const SEAM_HALF_MS = 2000;
const SYNC_EVERY_MS = 150; // the kernel hears of a scrub or a play at most this often
const INK = "#222222";

function lowerBound(a, v) {
  let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] < v) lo = m + 1; else hi = m; }
  return lo;
}
function upperBound(a, v) {
  let lo = 0, hi = a.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (a[m] <= v) lo = m + 1; else hi = m; }
  return lo;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined) e.textContent = text;
  return e;
}
function button(label, title, onClick) {
  const b = el("button", "tl-btn", label);
  b.type = "button";
  b.title = title;
  b.addEventListener("click", onClick);
  return b;
}

// One row's data, prepared once: typed arrays, the groups of equal instants, and the map of
// the first row's requests onto this row's (same instant, same place among its equals).
function prepare(row) {
  const t = Float64Array.from(row.t_ms || []);
  const n = t.length;
  const starts = [];
  for (let i = 0; i < n; i++) if (i === 0 || t[i] !== t[i - 1]) starts.push(i);
  const adm = Uint8Array.from((row.admitted || []).map((a) => (a ? 1 : 0)));
  const y = Float64Array.from(row.in_window || new Array(n).fill(0));
  let peak = 0;
  for (let i = 0; i < n; i++) if (y[i] > peak) peak = y[i];
  return { row, t, n, adm, y, peak, starts: Int32Array.from(starts),
    px: new Float32Array(n).fill(NaN), py: new Float32Array(n), spread: [], ymax: 1, map: null, exact: null };
}

function mapOnto(from, to) {
  // For each request of `from`: the request of `to` at the same instant and place among its
  // equals (exact), else the nearest in time.
  const map = new Int32Array(from.n), exact = new Uint8Array(from.n);
  for (let i = 0; i < from.n; i++) {
    const v = from.t[i];
    const own = i - lowerBound(from.t, v);
    const lo = lowerBound(to.t, v);
    if (lo < to.n && to.t[lo] === v) {
      map[i] = Math.min(lo + own, upperBound(to.t, v) - 1);
      exact[i] = 1;
    } else if (to.n === 0) {
      map[i] = -1;
    } else {
      const before = Math.max(lo - 1, 0), after = Math.min(lo, to.n - 1);
      map[i] = Math.abs(to.t[before] - v) <= Math.abs(to.t[after] - v) ? before : after;
    }
  }
  return { map, exact };
}

function runStarts(flags) {
  const out = [];
  for (let i = 0; i < flags.length; i++) if (flags[i] && (i === 0 || !flags[i - 1])) out.push(i);
  return out;
}

function niceStep(spanMs, widthPx, minPx) {
  for (const s of STEPS_MS) if ((spanMs / s) * minPx <= widthPx) return s;
  return STEPS_MS[STEPS_MS.length - 1];
}

function render({ model, el: host }) {
  const root = el("div", "tl-root");
  root.tabIndex = 0;
  host.appendChild(root);
  const st = {
    rows: [], ref: null, cur: 0, view: [0, 1], whole: [0, 1], limit: 1, unit: "s",
    seams: [], targets: { seam: [], refusal: [], disagree: [] }, hover: null, ghost: null,
    play: null, drag: null, width: 0, dirtyBase: true, frame: 0, sent: {}, timers: {},
    frames: [],
  };
  const size = () => (model.get("large") ? LARGE : NORMAL);

  // ---- the bar: stepping and playing, jumps, zoom -------------------------------------------
  const bar1 = el("div", "tl-bar");
  const bar2 = el("div", "tl-bar");
  const back = button("◀ step", "one request back (←)", () => step(-1));
  const fwd = button("step ▶", "one request on (→)", () => step(1));
  const playBtn = button("▶ play", "play through the requests (space)", () => togglePlay(null));
  playBtn.classList.add("tl-play");
  const toRefusal = button("▶ to next refusal", "play on to the next refusal", () => {
    const to = next("refusal");
    if (to !== null) togglePlay(to);
  });
  const speed = el("select", "tl-speed");
  speed.title = "requests per second while playing";
  const speedLabel = el("label", "tl-label-inline", "speed ");
  speedLabel.appendChild(speed);
  speed.addEventListener("change", () => {
    model.set("play_rate", Number(speed.value));
    model.save_changes();
    if (st.play) st.play = { ...st.play, t0: performance.now(), i0: st.cur };
  });
  const readout = el("span", "tl-readout");
  bar1.append(back, fwd, playBtn, speedLabel, toRefusal, readout);

  const jump = (kind, dir) => () => {
    const to = dir > 0 ? next(kind) : previous(kind);
    if (to !== null) setCur(to, true);
  };
  const jumps = el("span", "tl-group");
  jumps.append(el("span", "tl-label-inline", "jump:"),
    button("◀ seam", "back to the previous window seam", jump("seam", -1)),
    button("seam ▶", "on to the first request after the next window seam", jump("seam", 1)),
    button("◀ refusal", "back to where the previous refusals began", jump("refusal", -1)),
    button("refusal ▶", "on to where the next refusals begin (in any row)", jump("refusal", 1)),
    button("◀ disagree", "back to where the rows last began to disagree", jump("disagree", -1)),
    button("disagree ▶", "on to where the rows next disagree (one admits, another refuses)",
      jump("disagree", 1)));
  const zooms = el("span", "tl-group");
  const viewLabel = el("span", "tl-view");
  const largeBtn = button("large", "large text and marks (for a projector)", () => {
    model.set("large", !model.get("large"));
    model.save_changes();
  });
  largeBtn.classList.add("tl-large-btn");
  zooms.append(el("span", "tl-label-inline", "zoom time:"),
    button("−", "zoom out (time only) (-)", () => zoom(2)),
    button("+", "zoom in on the chosen request (time only) (+)", () => zoom(0.5)),
    button("seam view ±2 s", "about 2 s either side of the chosen request, in ms (s)", seamView),
    button("whole run", "the whole run", () => setView(st.whole.slice(), true)),
    viewLabel, largeBtn);
  bar2.append(jumps, zooms);

  const scrub = el("input", "tl-scrub");
  scrub.type = "range";
  scrub.min = "0";
  scrub.step = "1";
  scrub.title = "scrub through the requests";
  scrub.setAttribute("aria-label", "request");
  scrub.addEventListener("input", () => setCur(Number(scrub.value), false));
  scrub.addEventListener("change", () => flush());
  const head = el("div", "tl-head");
  head.append(bar1, bar2, scrub);

  const rowsBox = el("div", "tl-rows");
  const foot = el("div", "tl-foot");
  const axisLabel = el("span", "tl-axis-label");
  const addedBox = el("span", "tl-added");
  const addedText = el("span");
  addedBox.append(addedText,
    button("undo", "take back the last requests added", () => undoAdded()),
    button("clear", "take back every request added", () => setAdded([])));
  foot.append(axisLabel, addedBox);
  const tip = el("div", "tl-tip");
  tip.setAttribute("role", "tooltip");
  root.append(head, rowsBox, foot, tip);

  // ---- data -------------------------------------------------------------------------------
  function load() {
    const rows = model.get("rows") || [];
    st.rows = rows.map(prepare);
    st.ref = st.rows[0] || prepare({ t_ms: [] });
    for (const r of st.rows) Object.assign(r, mapOnto(st.ref, r));
    st.seams = (model.get("seams_ms") || []).slice().sort((a, b) => a - b);
    const refused = new Uint8Array(st.ref.n), differ = new Uint8Array(st.ref.n);
    for (let i = 0; i < st.ref.n; i++) {
      let yes = 0, no = 0;
      for (const r of st.rows) {
        if (!r.exact[i]) continue;
        if (r.adm[r.map[i]]) yes++; else no++;
      }
      refused[i] = no > 0 ? 1 : 0;
      differ[i] = yes > 0 && no > 0 ? 1 : 0;
    }
    const seamAt = [];
    for (const s of st.seams) {
      const i = lowerBound(st.ref.t, s);
      if (i < st.ref.n && seamAt[seamAt.length - 1] !== i) seamAt.push(i);
    }
    st.targets = { seam: seamAt, refusal: runStarts(refused), disagree: runStarts(differ) };
    let lo = 0, hi = 1;
    for (const r of st.rows) if (r.n) { lo = Math.min(lo, r.t[0]); hi = Math.max(hi, r.t[r.n - 1]); }
    if (st.seams.length) hi = Math.max(hi, st.seams[st.seams.length - 1]);
    const pad = (hi - lo) * 0.015 + 1;
    st.whole = [lo - pad, hi + pad];
    st.limit = model.get("limit");
    st.cur = Math.min(Math.max(model.get("index") || 0, 0), Math.max(st.ref.n - 1, 0));
    scrub.max = String(Math.max(st.ref.n - 1, 0));
    scrub.value = String(st.cur);
    scaleRows();
    buildRows();
    readView();
  }

  function scaleRows() {
    for (const r of st.rows) r.ymax = Math.max(st.limit, r.peak, 1) * 1.15;
  }

  function buildRows() {
    rowsBox.textContent = "";
    for (const r of st.rows) {
      const box = el("div", "tl-row");
      box.dataset.algorithm = r.row.algorithm || "";
      const title = el("div", "tl-title");
      const swatch = el("span", "tl-swatch");
      swatch.style.background = r.row.colour || "#888";
      const label = el("span", "tl-name", r.row.label || r.row.algorithm || "");
      const note = el("span", "tl-note", r.row.note || "");
      r.stateEl = el("span", "tl-state");
      title.append(swatch, label, note, r.stateEl);
      const plot = el("div", "tl-plot");
      r.base = el("canvas", "tl-base");
      r.over = el("canvas", "tl-over");
      plot.append(r.base, r.over);
      box.append(title, plot);
      rowsBox.appendChild(box);
      r.box = box;
      r.plot = plot;
      attachPointer(r);
    }
    resize();
  }

  function resize() {
    const s = size();
    const dpr = window.devicePixelRatio || 1;
    st.width = Math.max(rowsBox.clientWidth, 200);
    for (const r of st.rows) {
      const h = s.top + s.plot + s.axis;
      r.plot.style.height = `${h}px`;
      for (const c of [r.base, r.over]) {
        c.width = Math.round(st.width * dpr);
        c.height = Math.round(h * dpr);
        c.style.width = `${st.width}px`;
        c.style.height = `${h}px`;
        c.getContext("2d").setTransform(dpr, 0, 0, dpr, 0, 0);
      }
    }
    invalidate(true);
  }

  // ---- scales -----------------------------------------------------------------------------
  const plotW = () => st.width - size().left - size().right;
  const xOf = (t) => size().left + ((t - st.view[0]) / (st.view[1] - st.view[0])) * plotW();
  const tOf = (x) => st.view[0] + ((x - size().left) / plotW()) * (st.view[1] - st.view[0]);
  const yOf = (r, v) => size().top + size().plot * (1 - v / r.ymax);
  const vOf = (r, y) => (1 - (y - size().top) / size().plot) * r.ymax;

  function timeText(t, digits) {
    if (st.unit === "ms") return `${Math.round(t).toLocaleString("en-US")} ms`;
    return `${(t / 1000).toFixed(digits === undefined ? 3 : digits)} s`;
  }

  // ---- drawing ----------------------------------------------------------------------------
  function invalidate(base) {
    if (base) st.dirtyBase = true;
    if (!st.frame) st.frame = requestAnimationFrame(draw);
  }

  function draw() {
    const began = performance.now();
    st.frame = 0;
    if (st.dirtyBase) {
      for (const r of st.rows) drawBase(r);
      st.dirtyBase = false;
    }
    for (const r of st.rows) drawOver(r);
    texts();
    st.frames.push(performance.now() - began);
    if (st.frames.length > 500) st.frames.shift();
  }

  function place(r) {
    // Each mark's pixel position: its instant, spread among the requests at the same instant,
    // never past 0.4 of the way to the next instant, across a seam (a request at a seam
    // belongs to the window it opens: its burst spreads to the right only) or out of view.
    const s = size();
    const gap = 2 * s.r + 1;
    const most = plotW() * 0.7;
    const lo = st.view[0] - (st.view[1] - st.view[0]) * 0.5;
    const hi = st.view[1] + (st.view[1] - st.view[0]) * 0.5;
    r.px.fill(NaN);
    r.spread = [];
    const g = r.starts, ng = g.length, seams = st.seams;
    for (let k = 0; k < ng; k++) {
      const a = g[k], b = k + 1 < ng ? g[k + 1] : r.n;
      const t = r.t[a];
      if (t < lo || t > hi) continue;
      const c = xOf(t);
      let left = most, right = most;
      if (k > 0) left = Math.min(left, 0.4 * (c - xOf(r.t[g[k - 1]])));
      if (k + 1 < ng) right = Math.min(right, 0.4 * (xOf(r.t[g[k + 1]]) - c));
      const m = upperBound(seams, t); // seams[m - 1] <= t < seams[m]
      if (m > 0) left = Math.min(left, 0.9 * (c - xOf(seams[m - 1])));
      if (m < seams.length) right = Math.min(right, 0.9 * (xOf(seams[m]) - c));
      const x0 = s.left + s.r + 1, x1 = st.width - s.right - s.r - 1;
      if (c >= x0 && c <= x1) { // a burst in view stays in view
        left = Math.min(left, c - x0);
        right = Math.min(right, x1 - c);
      }
      const want = (b - a - 1) * gap;
      let hl = Math.min(left, want / 2);
      const hr = Math.min(right, want - hl);
      hl = Math.min(left, want - hr);
      const each = b - a > 1 ? (hl + hr) / (b - a - 1) : 0;
      if (hl + hr >= 6) r.spread.push([c - hl, c, c + hr]);
      for (let i = a; i < b; i++) {
        r.px[i] = c - hl + (i - a) * each;
        r.py[i] = yOf(r, r.y[i]);
      }
    }
  }

  // The marks are written as pixels into one picture per row and drawn at once: a path of
  // thousands of arcs (or as many small images) takes Chromium's software canvas a tenth of
  // a second per row, a pixel buffer a few milliseconds.
  const stamps = new Map();
  function stamp(s, dpr) {
    const key = `${s.r}|${dpr}`;
    if (stamps.has(key)) return stamps.get(key);
    const R = s.r * dpr, k = s.r * 0.9 * dpr, t = (s.r > 4 ? 2 : 1.5) * dpr * 0.75;
    const dot = [], cross = [];
    const reach = Math.ceil(R + 1);
    for (let dy = -reach; dy <= reach; dy++) {
      for (let dx = -reach; dx <= reach; dx++) {
        if (dx * dx + dy * dy <= R * R) dot.push(dx, dy);
        const inBox = Math.abs(dx) <= k && Math.abs(dy) <= k;
        if (inBox && (Math.abs(dx - dy) < t || Math.abs(dx + dy) < t)) cross.push(dx, dy);
      }
    }
    const out = [Int16Array.from(cross), Int16Array.from(dot)];
    stamps.set(key, out);
    return out;
  }
  function rgba(hex) {
    const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex || "") || [0, "88", "88", "88"];
    return ((255 << 24) | (parseInt(m[3], 16) << 16) | (parseInt(m[2], 16) << 8) | parseInt(m[1], 16)) >>> 0;
  }

  function drawMarks(ctx, r) {
    const dpr = window.devicePixelRatio || 1;
    const W = r.base.width, H = r.base.height;
    if (!r.img || r.img.width !== W || r.img.height !== H) {
      r.img = new ImageData(W, H);
      r.buf = new Uint32Array(r.img.data.buffer);
      r.scratch = document.createElement("canvas");
      r.scratch.width = W;
      r.scratch.height = H;
    }
    const buf = r.buf;
    buf.fill(0);
    if (!r.seen || r.seen.length !== 2 * W * H) r.seen = new Uint8Array(2 * W * H);
    const seen = r.seen; // a mark stamped where one of its kind already was adds nothing
    seen.fill(0);
    const kinds = stamp(size(), dpr);
    const colours = [rgba(INK), rgba(r.row.colour)];
    for (let i = 0; i < r.n; i++) {
      const x = r.px[i];
      if (Number.isNaN(x)) continue;
      const X = Math.round(x * dpr), Y = Math.round(r.py[i] * dpr);
      if (X < -20 || X > W + 20) continue;
      const a = r.adm[i], mask = kinds[a], c = colours[a];
      if (X >= 0 && X < W && Y >= 0 && Y < H) {
        const cell = a * W * H + Y * W + X;
        if (seen[cell]) continue;
        seen[cell] = 1;
      }
      for (let k = 0; k < mask.length; k += 2) {
        const xx = X + mask[k], yy = Y + mask[k + 1];
        if (xx >= 0 && xx < W && yy >= 0 && yy < H) buf[yy * W + xx] = c;
      }
    }
    r.scratch.getContext("2d").putImageData(r.img, 0, 0);
    ctx.save();
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.drawImage(r.scratch, 0, 0);
    ctx.restore();
  }

  function drawBase(r) {
    const s = size();
    const ctx = r.base.getContext("2d");
    const w = st.width, bottom = s.top + s.plot;
    ctx.clearRect(0, 0, w, bottom + s.axis);
    ctx.fillStyle = "#ffffff";
    ctx.fillRect(s.left, s.top, plotW(), s.plot);
    ctx.strokeStyle = "#bbbbbb";
    ctx.lineWidth = 1;
    ctx.strokeRect(s.left + 0.5, s.top + 0.5, plotW() - 1, s.plot);
    // seams: where the clock-aligned windows start
    ctx.save();
    ctx.beginPath();
    ctx.rect(s.left, 0, plotW(), bottom + s.axis);
    ctx.clip();
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = "#777777";
    for (const seam of st.seams) {
      if (seam < st.view[0] || seam > st.view[1]) continue;
      const x = Math.round(xOf(seam)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, s.top);
      ctx.lineTo(x, bottom);
      ctx.stroke();
    }
    ctx.setLineDash([]);
    place(r);
    drawMarks(ctx, r);
    // under each spread burst, a bar from its first mark to its last, ticked at its instant
    ctx.strokeStyle = "#444444";
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    for (const [a, c0, b] of r.spread) {
      ctx.moveTo(a, bottom - 1);
      ctx.lineTo(b, bottom - 1);
      ctx.moveTo(c0, bottom - 1);
      ctx.lineTo(c0, bottom - 6);
    }
    ctx.stroke();
    drawAdded(ctx, s, bottom);
    ctx.restore();
    drawAxes(ctx, r, s, bottom);
  }

  function drawAdded(ctx, s, bottom) {
    ctx.fillStyle = "#555555";
    for (const a of model.get("added") || []) {
      if (a.t_ms < st.view[0] || a.t_ms > st.view[1]) continue;
      const x = xOf(a.t_ms);
      ctx.beginPath();
      ctx.moveTo(x, bottom + 1);
      ctx.lineTo(x - 5, bottom + 9);
      ctx.lineTo(x + 5, bottom + 9);
      ctx.closePath();
      ctx.fill();
    }
  }

  function drawAxes(ctx, r, s, bottom) {
    ctx.fillStyle = "#333333";
    ctx.strokeStyle = "#999999";
    ctx.font = `${s.tick}px sans-serif`;
    ctx.textBaseline = "top";
    ctx.textAlign = "center";
    const span = st.view[1] - st.view[0];
    const label = st.unit === "ms" ? 9 : 5;
    const stepMs = niceStep(span, plotW(), (label * s.tick * 0.62) + 24);
    const first = Math.ceil(st.view[0] / stepMs) * stepMs;
    const digits = stepMs >= 1000 ? 0 : stepMs >= 100 ? 1 : stepMs >= 10 ? 2 : 3;
    for (let t = first; t <= st.view[1]; t += stepMs) {
      const x = Math.round(xOf(t)) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, bottom);
      ctx.lineTo(x, bottom + 4);
      ctx.stroke();
      const text = st.unit === "ms" ? Math.round(t).toLocaleString("en-US")
        : (t / 1000).toFixed(digits);
      const wText = ctx.measureText(text).width;
      const xt = Math.min(Math.max(x, s.left + wText / 2), st.width - wText / 2 - 1);
      ctx.fillText(text, xt, bottom + 5);
    }
    // counts: zero and the peak when it passes the limit (the limit is on the overlay)
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    const ticks = [0];
    if (r.peak > 1.25 * st.limit) ticks.push(r.peak);
    for (const v of ticks) ctx.fillText(String(Math.round(v)), s.left - 4, yOf(r, v));
  }

  function windowsAt(r, t, j) {
    const w = r.row.window_ms || 0;
    if (!w) return [];
    const grid = Math.floor(t / w) * w;
    const kind = r.row.counted;
    if (kind === "grid") return [[grid, grid + w]];
    if (kind === "two_grids") return [[grid - w, grid], [grid, grid + w]];
    const reset = r.row.reset_ms ? r.row.reset_ms[j] : null;
    if (kind === "first_hit" && reset !== null && reset !== undefined && reset >= 0) {
      return [[t + reset - w, t + reset]];
    }
    return [[t - w, t]];
  }

  function drawOver(r) {
    const s = size();
    const ctx = r.over.getContext("2d");
    const bottom = s.top + s.plot;
    ctx.clearRect(0, 0, st.width, bottom + s.axis);
    ctx.save();
    ctx.beginPath();
    ctx.rect(s.left, 0, plotW(), bottom + s.axis);
    ctx.clip();
    const j = st.ref.n ? r.map[st.cur] : -1;
    if (j >= 0) {
      const t = r.t[j];
      const spans = windowsAt(r, t, j);
      spans.forEach(([a, b], k) => {
        ctx.globalAlpha = spans.length === 2 && k === 0 ? 0.07 : 0.15;
        ctx.fillStyle = r.row.colour || "#888";
        const xa = Math.max(xOf(a), s.left - 1), xb = Math.min(xOf(b), st.width);
        if (xb > xa) ctx.fillRect(xa, s.top, xb - xa, s.plot);
      });
      ctx.globalAlpha = 1;
      const x = Number.isNaN(r.px[j]) ? xOf(t) : r.px[j];
      ctx.strokeStyle = "#666666";
      ctx.lineWidth = 1;
      ctx.beginPath();
      ctx.moveTo(Math.round(x) + 0.5, s.top);
      ctx.lineTo(Math.round(x) + 0.5, bottom);
      ctx.stroke();
      if (!Number.isNaN(r.px[j])) {
        ctx.strokeStyle = r.exact[st.cur] ? INK : "#999999";
        ctx.lineWidth = 2.5;
        ctx.beginPath();
        ctx.arc(r.px[j], r.py[j], s.r + 3.5, 0, 2 * Math.PI);
        ctx.stroke();
      }
    }
    if (st.hover && st.hover.r === r) {
      ctx.strokeStyle = "#0066cc";
      ctx.lineWidth = 2;
      ctx.beginPath();
      ctx.arc(r.px[st.hover.i], r.py[st.hover.i], s.r + 2, 0, 2 * Math.PI);
      ctx.stroke();
    }
    if (st.ghost && st.ghost.r === r) {
      ctx.fillStyle = "#0066cc";
      const x = xOf(st.ghost.t);
      ctx.beginPath();
      ctx.moveTo(x, bottom + 1);
      ctx.lineTo(x - 5, bottom + 9);
      ctx.lineTo(x + 5, bottom + 9);
      ctx.closePath();
      ctx.fill();
    }
    ctx.restore();
    // the limit: dashed, draggable, labelled at its left
    const yl = Math.round(yOf(r, st.limit)) + 0.5;
    ctx.strokeStyle = st.drag && st.drag.kind === "limit" ? "#0066cc" : "#555555";
    ctx.setLineDash([6, 4]);
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    ctx.moveTo(s.left, yl);
    ctx.lineTo(st.width - s.right, yl);
    ctx.stroke();
    ctx.setLineDash([]);
    ctx.fillStyle = "#333333";
    ctx.font = `${s.tick}px sans-serif`;
    ctx.textAlign = "right";
    ctx.textBaseline = "middle";
    ctx.fillText(String(Math.round(st.limit)), s.left - 4, Math.max(yl, s.top + s.tick / 2));
  }

  function texts() {
    const n = st.ref.n;
    const t = n ? st.ref.t[st.cur] : 0;
    readout.textContent = n ? `request ${(st.cur + 1).toLocaleString("en-US")} of ${n.toLocaleString("en-US")} at ${timeText(t)}`
      : "no request of this client";
    for (const r of st.rows) {
      const j = n ? r.map[st.cur] : -1;
      const say = j >= 0 && r.exact[st.cur] && r.row.state ? r.row.state[j]
        : j >= 0 ? "no request at this instant" : "";
      if (r.stateEl.textContent !== say) r.stateEl.textContent = say;
    }
    if (scrub.value !== String(st.cur)) scrub.value = String(st.cur);
    playBtn.textContent = st.play ? "❚❚ pause" : "▶ play";
    largeBtn.setAttribute("aria-pressed", model.get("large") ? "true" : "false");
    root.classList.toggle("tl-large", !!model.get("large"));
    const what = st.unit === "ms" ? "ms" : "s";
    axisLabel.textContent = `time (${what} from the run's start); dashed lines: window seams; ● admitted, ✕ refused, height: admitted in the trailing window; requests at one instant are spread over the bar under them; click a row's time axis to add a request, shift-click a burst of ${model.get("burst_n")}`;
    viewLabel.textContent = `showing ${timeText(st.view[0], 1)} – ${timeText(st.view[1], 1)}`;
    const added = model.get("added") || [];
    addedBox.style.display = added.length ? "" : "none";
    const count = added.reduce((a, b) => a + (b.n || 1), 0);
    addedText.textContent = `added: ${count} request${count === 1 ? "" : "s"} `;
  }

  // ---- the chosen request -----------------------------------------------------------------
  function setCur(i, urgent) {
    const n = st.ref.n;
    if (!n) return;
    i = Math.min(Math.max(Math.round(i), 0), n - 1);
    if (i !== st.cur) {
      st.cur = i;
      follow();
      invalidate(false);
    }
    send("index", i, urgent);
  }

  function step(by) {
    stopPlay();
    setCur(st.cur + by, true);
  }

  function next(kind) {
    const list = st.targets[kind];
    const k = upperBound(list, st.cur);
    return k < list.length ? list[k] : null;
  }
  function previous(kind) {
    const list = st.targets[kind];
    const k = lowerBound(list, st.cur) - 1;
    return k >= 0 ? list[k] : null;
  }

  function follow() {
    // The chosen request stays in view: past an edge the view moves (its span kept).
    const t = st.ref.t[st.cur];
    const [lo, hi] = st.view;
    const margin = (hi - lo) * 0.05;
    if (t >= lo + margin && t <= hi - margin) return;
    const span = hi - lo;
    setView([t - span / 2, t + span / 2], false);
  }

  // ---- playing ----------------------------------------------------------------------------
  function togglePlay(stopAt) {
    if (st.play) { stopPlay(); return; }
    if (st.cur >= st.ref.n - 1 && stopAt === null) setCur(0, false);
    st.play = { t0: performance.now(), i0: st.cur, stopAt };
    const tick = (now) => {
      if (!st.play) return;
      const p = st.play;
      let i = p.i0 + Math.floor(((now - p.t0) / 1000) * (model.get("play_rate") || 1));
      const end = p.stopAt === null ? st.ref.n - 1 : p.stopAt;
      if (i >= end) i = end;
      setCur(i, false);
      if (i >= end) stopPlay();
      else st.play.raf = requestAnimationFrame(tick);
    };
    st.play.raf = requestAnimationFrame(tick);
    invalidate(false);
  }
  function stopPlay() {
    if (!st.play) return;
    cancelAnimationFrame(st.play.raf);
    st.play = null;
    flush();
    invalidate(false);
  }

  // ---- the view ---------------------------------------------------------------------------
  function setView(v, urgent) {
    let [lo, hi] = v;
    if (!(hi > lo)) [lo, hi] = st.whole;
    if (hi - lo < 20) { const c = (lo + hi) / 2; lo = c - 10; hi = c + 10; }
    st.view = [lo, hi];
    const unit = hi - lo <= MS_BELOW ? "ms" : "s";
    if (unit !== st.unit) { st.unit = unit; send("unit", unit, true); }
    send("view_ms", [lo, hi], urgent);
    invalidate(true);
  }
  function readView() {
    const v = model.get("view_ms") || [];
    setView(v.length === 2 && v[1] > v[0] ? v.slice() : st.whole.slice(), true);
  }
  function zoom(factor, at) {
    const t = at === undefined ? (st.ref.n ? st.ref.t[st.cur] : (st.view[0] + st.view[1]) / 2) : at;
    const [lo, hi] = st.view;
    const span = Math.min((hi - lo) * factor, (st.whole[1] - st.whole[0]) * 1.5);
    const share = at === undefined ? 0.5 : (t - lo) / (hi - lo);
    setView(inside([t - span * share, t + span * (1 - share)]), true);
  }
  function inside([lo, hi]) {
    // A zoom or a pan stays over the run where it can (the seam view may look past its ends).
    const [a, b] = st.whole;
    if (hi - lo >= b - a) return [a, b];
    if (lo < a) return [a, a + hi - lo];
    if (hi > b) return [b - (hi - lo), b];
    return [lo, hi];
  }
  function seamView() {
    if (!st.ref.n) return;
    const t = st.ref.t[st.cur];
    const k = lowerBound(st.seams, t);
    let c = t; // centred on the seam nearest the request, if one is that close
    for (const s of [st.seams[k - 1], st.seams[k]]) {
      if (s !== undefined && Math.abs(s - t) <= SEAM_HALF_MS && (c === t || Math.abs(s - t) < Math.abs(c - t))) c = s;
    }
    setView([c - SEAM_HALF_MS, c + SEAM_HALF_MS], true);
  }

  // ---- what goes back to the kernel -------------------------------------------------------
  function send(name, value, urgent) {
    st.sent[name] = value;
    if (urgent) { flushOne(name); return; }
    if (st.timers[name]) return;
    st.timers[name] = setTimeout(() => { st.timers[name] = null; flushOne(name); }, SYNC_EVERY_MS);
  }
  function flushOne(name) {
    if (!(name in st.sent)) return;
    const value = st.sent[name];
    delete st.sent[name];
    if (JSON.stringify(model.get(name)) === JSON.stringify(value)) return;
    model.set(name, value);
    model.save_changes();
  }
  function flush() { for (const name of Object.keys(st.sent)) flushOne(name); }

  function setAdded(list) {
    model.set("added", list);
    model.save_changes();
    invalidate(true);
  }
  function undoAdded() {
    const list = (model.get("added") || []).slice();
    list.pop();
    setAdded(list);
  }

  // ---- pointer: hover, choose, pan, drag the limit, add requests --------------------------
  function nearest(r, x, y) {
    const s = size(), reach = Math.max(8, s.r * 2.2);
    let best = -1, bestD = reach * reach;
    let i = lowerBound(r.px, x - reach);
    for (; i < r.n; i++) {
      const px = r.px[i];
      if (Number.isNaN(px)) continue;
      if (px > x + reach) break;
      const d = (px - x) ** 2 + (r.py[i] - y) ** 2;
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  }

  function showTip(r, i, x, y) {
    const n = r.n;
    const same = upperBound(r.t, r.t[i]) - lowerBound(r.t, r.t[i]);
    const shared = same > 1 ? ` (${i - lowerBound(r.t, r.t[i]) + 1} of ${same} at this instant, spread to point at)` : "";
    tip.textContent = `${r.row.label || r.row.algorithm} · request ${(i + 1).toLocaleString("en-US")} of ${n.toLocaleString("en-US")} · ${timeText(r.t[i])}${shared} · ${r.row.state ? r.row.state[i] : (r.adm[i] ? "admitted" : "refused")} · ${r.y[i]} admitted in the trailing window`;
    placeTip(r, x, y);
  }
  function placeTip(r, x, y) {
    tip.style.display = "block";
    const box = r.plot.getBoundingClientRect(), rootBox = root.getBoundingClientRect();
    const w = tip.offsetWidth, h = tip.offsetHeight;
    let left = box.left - rootBox.left + x + 12;
    if (left + w > root.clientWidth - 2) left = Math.max(box.left - rootBox.left + x - w - 12, 2);
    let top = box.top - rootBox.top + y - h - 10;
    if (top < 0) top = box.top - rootBox.top + y + 14;
    tip.style.left = `${left}px`;
    tip.style.top = `${top}px`;
  }
  function hideTip() { tip.style.display = "none"; }

  function refIndexOf(r, j) {
    if (r === st.ref) return j;
    const t = r.t[j];
    const own = j - lowerBound(r.t, t);
    const lo = lowerBound(st.ref.t, t);
    if (lo < st.ref.n && st.ref.t[lo] === t) return Math.min(lo + own, upperBound(st.ref.t, t) - 1);
    return Math.min(lo, st.ref.n - 1);
  }

  function attachPointer(r) {
    const c = r.over;
    const at = (e) => { const b = c.getBoundingClientRect(); return [e.clientX - b.left, e.clientY - b.top]; };
    c.addEventListener("pointerdown", (e) => {
      const [x, y] = at(e);
      const s = size();
      const onLimit = Math.abs(y - yOf(r, st.limit)) <= 6 && x >= s.left && y <= s.top + s.plot;
      st.drag = { kind: onLimit ? "limit" : "press", r, x0: x, y0: y, view0: st.view.slice(), moved: false };
      c.setPointerCapture(e.pointerId);
      root.focus({ preventScroll: true });
      e.preventDefault();
    });
    c.addEventListener("pointermove", (e) => {
      const [x, y] = at(e);
      const s = size();
      const d = st.drag;
      if (d && d.kind === "limit") {
        st.limit = Math.max(1, Math.round(Math.min(vOf(r, y), r.ymax)));
        invalidate(false);
        return;
      }
      if (d && (d.moved || Math.abs(x - d.x0) > 4)) {
        d.moved = true;
        const dt = ((x - d.x0) / plotW()) * (d.view0[1] - d.view0[0]);
        setView(inside([d.view0[0] - dt, d.view0[1] - dt]), false);
        hideTip();
        return;
      }
      hover(r, x, y, s);
    });
    c.addEventListener("pointerup", (e) => {
      const [x, y] = at(e);
      const d = st.drag;
      st.drag = null;
      if (!d) return;
      if (d.kind === "limit") {
        send("limit", st.limit, true);
        scaleRows();
        invalidate(true);
        return;
      }
      if (d.moved) { flush(); return; }
      click(r, x, y, e.shiftKey);
    });
    c.addEventListener("pointerleave", () => {
      if (st.drag) return;
      st.hover = null; st.ghost = null;
      hideTip();
      invalidate(false);
    });
    c.addEventListener("wheel", (e) => {
      if (!(e.ctrlKey || e.altKey)) return; // a plain wheel scrolls the page
      e.preventDefault();
      const [x] = at(e);
      zoom(e.deltaY > 0 ? 1.25 : 0.8, tOf(x));
    }, { passive: false });
  }

  function hover(r, x, y, s) {
    const onAxis = y > s.top + s.plot && x >= s.left;
    const onLimit = Math.abs(y - yOf(r, st.limit)) <= 6 && !onAxis && x >= s.left;
    const i = onAxis ? -1 : nearest(r, x, y);
    const was = st.hover, ghost = st.ghost;
    st.hover = i >= 0 ? { r, i } : null;
    st.ghost = onAxis ? { r, t: tOf(x) } : null;
    r.over.style.cursor = onAxis ? "copy" : onLimit ? "ns-resize" : i >= 0 ? "pointer" : "grab";
    if (i >= 0) showTip(r, i, x, y);
    else if (onAxis) {
      tip.textContent = `click: add a request at ${timeText(tOf(x))}; shift-click: a burst of ${model.get("burst_n")}`;
      placeTip(r, x, y);
    } else if (onLimit) {
      tip.textContent = `drag: the limit (${Math.round(st.limit)})`;
      placeTip(r, x, y);
    } else hideTip();
    if ((was && (!st.hover || was.i !== st.hover.i || was.r !== r)) || st.hover || ghost || st.ghost) invalidate(false);
  }

  function click(r, x, y, shift) {
    const s = size();
    if (y > s.top + s.plot) {
      if (x < s.left) return;
      const n = shift ? Math.max(1, model.get("burst_n") || 1) : 1;
      setAdded([...(model.get("added") || []), { t_ms: Math.round(tOf(x)), n }]);
      return;
    }
    const i = nearest(r, x, y);
    if (i >= 0) { stopPlay(); setCur(refIndexOf(r, i), true); }
  }

  // ---- keys -------------------------------------------------------------------------------
  root.addEventListener("keydown", (e) => {
    if (e.target !== root) return;
    const keys = {
      ArrowRight: () => step(e.shiftKey ? 10 : 1), ArrowLeft: () => step(e.shiftKey ? -10 : -1),
      Home: () => setCur(0, true), End: () => setCur(st.ref.n - 1, true), " ": () => togglePlay(null),
      "+": () => zoom(0.5), "=": () => zoom(0.5), "-": () => zoom(2), s: seamView,
    };
    if (keys[e.key]) { keys[e.key](); e.preventDefault(); }
  });

  // ---- the model's changes ----------------------------------------------------------------
  function fillSpeeds() {
    const rate = model.get("play_rate");
    const rates = RATES.includes(rate) ? RATES : [...RATES, rate].sort((a, b) => a - b);
    speed.textContent = "";
    for (const v of rates) {
      const o = el("option", "", `${v} per s`);
      o.value = String(v);
      speed.appendChild(o);
    }
    speed.value = String(rate);
  }
  const on = {
    "change:rows": () => { stopPlay(); load(); },
    "change:seams_ms": load,
    "change:limit": () => { if (!st.drag) { st.limit = model.get("limit"); scaleRows(); invalidate(true); } },
    "change:index": () => {
      const i = model.get("index");
      if (i !== st.cur && !(st.sent.index !== undefined)) { st.cur = Math.min(Math.max(i, 0), Math.max(st.ref.n - 1, 0)); follow(); invalidate(false); }
    },
    "change:view_ms": () => {
      const v = model.get("view_ms") || [];
      if (JSON.stringify(v) !== JSON.stringify(st.view)) readView();
    },
    "change:large": () => { resize(); },
    "change:added": () => invalidate(true),
    "change:burst_n": () => invalidate(false),
    "change:play_rate": fillSpeeds,
  };
  for (const [name, fn] of Object.entries(on)) model.on(name, fn);
  const observer = new ResizeObserver(() => {
    if (Math.abs(rowsBox.clientWidth - st.width) >= 1) resize();
  });
  observer.observe(rowsBox);
  fillSpeeds();
  load();
  root.timeline = {
    // for tests and measurements: what is drawn, and how long the frames took (ms)
    drawn: (k) => {
      const r = st.rows[k];
      const out = [];
      for (let i = 0; i < r.n; i++) {
        if (Number.isNaN(r.px[i]) || r.px[i] < size().left || r.px[i] > st.width - size().right) continue;
        out.push({ i, x: r.px[i], y: r.py[i], t_ms: r.t[i], admitted: !!r.adm[i] });
      }
      return out;
    },
    frames: () => st.frames.slice(),
    state: () => ({ index: st.cur, view: st.view.slice(), unit: st.unit, limit: st.limit,
      playing: !!st.play }),
  };

  return () => {
    stopPlay();
    if (st.frame) cancelAnimationFrame(st.frame);
    for (const t of Object.values(st.timers)) if (t) clearTimeout(t);
    observer.disconnect();
    for (const [name, fn] of Object.entries(on)) model.off(name, fn);
    root.remove();
  };
}

export default { render };
