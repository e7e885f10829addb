// Inside BERT's client-side attention renderer: plain JavaScript and canvas, no build step, no library,
// no network. One file for three hosts (the Streamlit component, the Jupyter widget, the standalone HTML
// export), each of which calls InsideBertAttention.mount(element, payload, host).
//
// payload (built by vizcore/attention/payload.py; layers and heads 0-based): {title, numLayers, numHeads,
// n, tokens, special, segments, wordOf, wordLabels, levels, layers: {"l": base64 of deflated (zlib) uint8
// [head][query][key]}, grid: {cells, max, data: base64 uint8 [layer][head][c][c]}, scales: {weight, grid},
// initial: {layer, head, view}, options: {pairFilter, hideSpecial, mergeWords}, controls: {views, filters,
// layerHead}, inputId}. A scale is vizcore/colours.py's Scale.to_payload(): {quantity, stops: [[fraction,
// "#rrggbb"], ...], power, range: [low, high]}; the renderer has no colour scale of its own.
// host: {onSelect({layer, head, view}), onRequestLayer(layer), reportDelay (ms)}, all optional.
//
// Contract for tests and scripts: the element carries data-layer and data-head (1-based) once it has drawn
// that head, is focusable, and ArrowRight/ArrowLeft change the head, ArrowDown/ArrowUp the layer; in the grid,
// Enter opens the framed head. The heatmap's canvas is followed by a table (class ib-sr, read by screen readers,
// not drawn) of the head's largest weights: query, key, weight.
// User text is only ever set with textContent or drawn on a canvas: it never becomes markup.
(function (global) {
  "use strict";
  const DEFAULT_FONT = 18; // px: every label readable on a laptop; a payload's "font" sets it (the projector: 24)
  let FONT = DEFAULT_FONT;
  const FONT_FAMILY = "Helvetica, Arial, sans-serif";
  // Sentence A blue, B orange and in italics: told apart with colour-blindness, and without colour.
  const SEGMENT_COLOURS = ["#1f5fa8", "#c2410c"];
  const LINE_THRESHOLD = 0.01;
  const LEGEND_WIDTH = 170;  // px at the default font; legendWidth() scales it with a payload's font
  const TABLE_ROWS = 20;  // the heatmap's largest weights in its text alternative
  const VIEW_NAMES = {heatmap: "Heatmap", grid: "All heads", lines: "Head view"};
  const PAIR_FILTERS = ["all", "A->B", "B->A", "A->A", "B->B"];

  function hexRgb(hex) {
    return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); });
  }

  // A scale's 256 colours: entry i is the colour at range fraction (i / 255)^(1 / power), interpolated in RGB
  // between the stops as plotly does, so colourIndex's round(255 f^power) finds any value's colour.
  function colourTable(scale) {
    const stops = scale.stops.map(function (stop) { return [stop[0], hexRgb(stop[1])]; });
    const table = new Uint8ClampedArray(256 * 3);
    for (let i = 0; i < 256; i++) {
      const f = Math.pow(i / 255, 1 / scale.power);
      let k = 0;
      while (k < stops.length - 2 && f > stops[k + 1][0]) k++;
      const a = stops[k], b = stops[k + 1], span = b[0] - a[0];
      const t = span > 0 ? Math.min(1, Math.max(0, (f - a[0]) / span)) : 0;
      for (let c = 0; c < 3; c++) table[i * 3 + c] = Math.round(a[1][c] * (1 - t) + b[1][c] * t);
    }
    return table;
  }

  function colourIndex(scale, value) {
    const low = scale.range[0], high = scale.range[1];
    const f = high > low ? Math.min(1, Math.max(0, (value - low) / (high - low))) : 0;
    return Math.round(255 * Math.pow(f, scale.power));
  }

  function segmentFont(segment, pair) {
    return (pair && segment === 1 ? "italic " : "") + FONT + "px " + FONT_FAMILY;
  }

  function decodeBase64(text) {
    const raw = atob(text);
    const out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  // The binary form of a payload (payload.binary_payload), for hosts that carry bytes: "IBA2", the JSON
  // header's length (uint32, little-endian), the header, then each layer's deflated codes, placed by
  // header.layers[l] = {id, offset, length}. Anything else is taken as the JSON form.
  function readPayload(data) {
    if (!(data instanceof Uint8Array) && !(data instanceof ArrayBuffer)) return data;
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    if (bytes.length < 8 || String.fromCharCode(bytes[0], bytes[1], bytes[2], bytes[3]) !== "IBA2") {
      throw new Error("not an attention view payload");
    }
    const length = (bytes[4] | bytes[5] << 8 | bytes[6] << 16 | bytes[7] << 24) >>> 0;
    const start = 8 + length;
    if (start > bytes.length) throw new Error("attention view payload cut short");
    const payload = JSON.parse(new TextDecoder().decode(bytes.subarray(8, start)));
    Object.keys(payload.layers).forEach(function (key) {
      const at = payload.layers[key];
      if (start + at.offset + at.length > bytes.length) throw new Error("attention view payload cut short");
      payload.layers[key] = {id: at.id, bytes: bytes.slice(start + at.offset, start + at.offset + at.length)};
    });
    return payload;
  }

  // A layer is base64 text (JSON form) or {id, bytes} (binary form); either way deflated codes.
  function layerId(value) { return typeof value === "string" ? value : value.id; }

  // A layer's codes arrive deflated (payload.py, zlib); the browser's own DecompressionStream inflates them
  // (Chrome 80, Firefox 113, Safari 16.4 and later).
  function inflate(value) {
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this browser cannot unpack the weights (no DecompressionStream): " +
                                      "use Chrome 80, Firefox 113, Safari 16.4 or later"));
    }
    const packed = typeof value === "string" ? decodeBase64(value) : value.bytes;
    const stream = new Blob([packed]).stream().pipeThrough(new DecompressionStream("deflate"));
    return new Response(stream).arrayBuffer().then(function (buffer) { return new Uint8Array(buffer); });
  }

  // 8-bit codes on a square-root scale (payload.py): weight = (code / levels)^2.
  function weights(levels) {
    const table = new Float64Array(256);
    for (let q = 0; q < 256; q++) table[q] = Math.pow(q / levels, 2);
    return table;
  }

  function isPair(p) { return p.segments.indexOf(1) >= 0; }

  // Query and key positions kept by the options, in order (aggregate.apply_view: pair filter, then specials).
  function positions(p, options) {
    const all = [];
    for (let i = 0; i < p.n; i++) all.push(i);
    let rows = all, cols = all;
    if (options.pairFilter && options.pairFilter !== "all" && isPair(p)) {
      const sides = options.pairFilter.split("->").map(function (s) { return s === "A" ? 0 : 1; });
      rows = all.filter(function (i) { return p.segments[i] === sides[0]; });
      cols = all.filter(function (i) { return p.segments[i] === sides[1]; });
    }
    if (options.hideSpecial) {
      rows = rows.filter(function (i) { return !p.special[i]; });
      cols = cols.filter(function (i) { return !p.special[i]; });
    }
    return [rows, cols];
  }

  // One axis: groups of kept positions (one per token, or one per word when merging) with label and segment.
  function axis(p, kept, merge) {
    const groups = [];
    kept.forEach(function (position) {
      const last = groups[groups.length - 1];
      if (merge && last && p.wordOf[last.positions[0]] === p.wordOf[position]) {
        last.positions.push(position);
      } else {
        groups.push({positions: [position], segment: p.segments[position],
                     label: merge ? p.wordLabels[p.wordOf[position]] : p.tokens[position]});
      }
    });
    return groups;
  }

  // The matrix as shown: pair filter, hidden specials (rows renormalised), word pieces merged (sum over a
  // key word's pieces, mean over a query word's pieces): aggregate.apply_view on the 8-bit weights.
  function viewMatrix(p, codes, head, options) {
    const kept = positions(p, options);
    if (!kept[0].length || !kept[1].length) {
      return {empty: true, message: options.hideSpecial
        ? "Only special tokens are left once [CLS]/[SEP] are hidden: show them, or type words."
        : "This pair filter leaves no tokens."};
    }
    const rows = axis(p, kept[0], options.mergeWords), cols = axis(p, kept[1], options.mergeWords);
    const n = p.n, base = head * n * n, C = cols.length, weight = weights(p.levels);
    const values = new Float32Array(rows.length * C);
    rows.forEach(function (row, r) {
      const sums = new Float64Array(C);
      row.positions.forEach(function (q) {
        const offset = base + q * n;
        let total = 1;
        if (options.hideSpecial) {
          total = 0;
          kept[1].forEach(function (k) { total += weight[codes[offset + k]]; });
        }
        const factor = total > 0 ? 1 / total : 0;
        cols.forEach(function (col, c) {
          for (let i = 0; i < col.positions.length; i++) sums[c] += weight[codes[offset + col.positions[i]]] * factor;
        });
      });
      for (let c = 0; c < C; c++) values[r * C + c] = sums[c] / row.positions.length;
    });
    return {rows: rows, cols: cols, values: values};
  }

  function element(tag, className, parent) {
    const node = document.createElement(tag);
    if (className) node.className = className;
    if (parent) parent.appendChild(node);
    return node;
  }

  const CSS = [
    ".ib-attention{position:relative;font-family:" + FONT_FAMILY + ";font-size:var(--ib-font," + DEFAULT_FONT + "px);color:#111;",
    "background:#fff;outline:none;padding:4px}",
    ".ib-attention:focus-visible{box-shadow:0 0 0 3px #1f5fa8}",  // 6.4:1 on white: a focus ring needs 3:1
    ".ib-bar{display:flex;flex-wrap:wrap;gap:6px 16px;align-items:center;margin-bottom:6px}",
    ".ib-bar button,.ib-bar select{font-size:var(--ib-font," + DEFAULT_FONT + "px);padding:6px 12px;min-height:44px;",
    "border:1px solid #888;",
    "border-radius:6px;background:#f4f4f4;color:#111;cursor:pointer}",  // 44 px: a target for a finger or a lectern mouse
    ".ib-bar button{min-width:44px}.ib-step{display:inline-flex;gap:4px;align-items:center}",
    ".ib-step>span{font-weight:bold;margin-right:4px}",
    ".ib-bar button[aria-pressed=true]{background:#253494;color:#fff;border-color:#253494}",
    ".ib-bar label{display:inline-flex;gap:6px;align-items:center;cursor:pointer}",
    ".ib-bar input{width:18px;height:18px}",
    ".ib-title{font-weight:bold;margin:4px 0}",
    ".ib-status{margin:4px 0;color:#333;min-height:1.3em}",
    ".ib-stage{position:relative;overflow:auto;max-height:1400px}.ib-stage.ib-stale{opacity:.3;pointer-events:none}",
    ".ib-tip{position:absolute;pointer-events:none;background:#111;color:#fff;padding:6px 10px;",
    "border-radius:4px;white-space:pre;z-index:10;display:none;font-size:var(--ib-font," + DEFAULT_FONT + "px)}",
    ".ib-lines{position:relative}",
    ".ib-token{position:absolute;white-space:pre;cursor:pointer;line-height:1.55em;padding:0 4px;overflow:hidden;",
    "text-overflow:ellipsis;box-sizing:border-box}",
    ".ib-token.ib-dim{opacity:.35}.ib-token.ib-focus{font-weight:bold;text-decoration:underline}",
    // read by a screen reader, not drawn: 1 px and clipped (the usual visually-hidden pattern)
    ".ib-sr{position:absolute;width:1px;height:1px;margin:-1px;padding:0;overflow:hidden;clip:rect(0 0 0 0);",
    "white-space:nowrap;border:0}",
  ].join("");

  function addStyle(root) {
    const host = root.getRootNode ? root.getRootNode() : document;
    const target = host.head || (host === document ? document.head : host);
    if (target.querySelector && target.querySelector("style[data-ib-attention]")) return;
    const style = document.createElement("style");
    style.setAttribute("data-ib-attention", "1");
    style.textContent = CSS;
    (target.appendChild ? target : root).appendChild(style);
  }

  function mount(el, payload, host) {
    host = host || {};
    addStyle(el);
    el.classList.add("ib-attention");
    el.tabIndex = 0;
    el.setAttribute("role", "application");
    el.setAttribute("aria-label", "Attention view: arrow keys change head (left/right) and layer (up/down)");
    const bar = element("div", "ib-bar", el);
    const title = element("div", "ib-title", el);
    const status = element("div", "ib-status", el);
    status.setAttribute("aria-live", "polite");
    const stage = element("div", "ib-stage", el);
    const tip = element("div", "ib-tip", el);
    const state = {p: null, encoded: {}, decoded: {}, unpacking: {}, failed: {}, grid: null, layer: 0, head: 0,
                   view: "heatmap",
                   options: null, givenOptions: null, lastInitial: null, focus: null, pinned: false,
                   drawn: null, width: 0};
    const controls = {};

    function codesOf(layer) {
      return state.decoded[layer] || null;
    }

    // Inflate a received layer in the background; once it is ready, draw it if it is the one on screen.
    // Every layer is unpacked as soon as it arrives, so a later switch finds its codes ready.
    function unpack(layer) {
      const value = state.encoded[layer], id = value && layerId(value);
      if (!value || state.decoded[layer] || state.unpacking[layer] === id) return;
      state.unpacking[layer] = id;
      delete state.failed[layer];
      const current = function () { return state.encoded[layer] && layerId(state.encoded[layer]) === id; };
      const size = state.p.numHeads * state.p.n * state.p.n;
      inflate(value).then(function (codes) {
        if (!current()) return;  // replaced by a newer payload meanwhile
        if (codes.length !== size) throw new Error("layer " + (Number(layer) + 1) + " holds " + codes.length +
                                                   " weights, not " + size);
        state.decoded[layer] = codes;
        return true;
      }).catch(function (error) {
        if (!current()) return;
        state.failed[layer] = String(error && error.message || error);
        return true;
      }).then(function (settled) {
        if (state.unpacking[layer] === id) delete state.unpacking[layer];
        if (settled && state.p && state.layer === Number(layer) && state.view !== "grid") render();
      });
    }

    function notify(kind, value) {
      try {
        if (kind === "select" && host.onSelect) host.onSelect(value);
        if (kind === "layer" && host.onRequestLayer) host.onRequestLayer(value);
      } catch (error) {
        console.error("attention view host:", error);
      }
    }

    function stepper(name, count, onChange) {
      const wrap = element("span", "ib-step", bar);
      element("span", "", wrap).textContent = name;
      const back = element("button", "", wrap);
      back.type = "button";
      back.textContent = "\u25c0";
      back.setAttribute("aria-label", "previous " + name.toLowerCase());
      const select = element("select", "", wrap);
      select.setAttribute("aria-label", name);
      for (let i = 0; i < count; i++) element("option", "", select).textContent = String(i + 1);
      const next = element("button", "", wrap);
      next.type = "button";
      next.textContent = "\u25b6";
      next.setAttribute("aria-label", "next " + name.toLowerCase());
      back.addEventListener("click", function () { onChange(select.selectedIndex - 1); });
      next.addEventListener("click", function () { onChange(select.selectedIndex + 1); });
      select.addEventListener("change", function () { onChange(select.selectedIndex); });
      return select;
    }

    function toggle(text, checked, onChange) {
      const label = element("label", "", bar);
      const box = element("input", "", label);
      box.type = "checkbox";
      box.checked = checked;
      element("span", "", label).textContent = text;
      box.addEventListener("change", function () { onChange(box.checked); });
      return box;
    }

    function buildControls() {
      while (bar.firstChild) bar.removeChild(bar.firstChild);
      const p = state.p, shown = p.controls || {};
      controls.views = {};
      if (shown.views) {
        const tabs = element("span", "", bar);
        tabs.setAttribute("role", "group");
        Object.keys(VIEW_NAMES).forEach(function (name) {
          const button = element("button", "", tabs);
          button.type = "button";
          button.textContent = VIEW_NAMES[name];
          button.addEventListener("click", function () { select(state.layer, state.head, name, true); });
          controls.views[name] = button;
        });
      }
      controls.layer = controls.head = null;
      if (shown.layerHead) {
        controls.layer = stepper("Layer", p.numLayers, function (l) { select(l, state.head, state.view, true); });
        controls.head = stepper("Head", p.numHeads, function (h) { select(state.layer, h, state.view, true); });
      }
      controls.pair = controls.hide = controls.merge = null;
      if (shown.filters) {
        if (isPair(p)) {
          const label = element("label", "", bar);
          element("span", "", label).textContent = "Pair";
          controls.pair = element("select", "", label);
          PAIR_FILTERS.forEach(function (name) {
            const option = element("option", "", controls.pair);
            option.value = name;
            option.textContent = name.replace("->", "\u2192");
          });
          controls.pair.addEventListener("change", function () { setOption("pairFilter", controls.pair.value); });
        }
        controls.hide = toggle("Hide [CLS]/[SEP]", false, function (v) { setOption("hideSpecial", v); });
        controls.merge = toggle("Merge word pieces", false, function (v) { setOption("mergeWords", v); });
      }
    }

    function syncControls() {
      Object.keys(controls.views || {}).forEach(function (name) {
        controls.views[name].setAttribute("aria-pressed", String(name === state.view));
      });
      if (controls.layer) controls.layer.selectedIndex = state.layer;
      if (controls.head) controls.head.selectedIndex = state.head;
      if (controls.pair) controls.pair.value = state.options.pairFilter;
      if (controls.hide) controls.hide.checked = !!state.options.hideSpecial;
      if (controls.merge) controls.merge.checked = !!state.options.mergeWords;
    }

    function setOption(name, value) {
      state.options = Object.assign({}, state.options);
      state.options[name] = value;
      state.focus = null;
      render();
    }

    function select(layer, head, view, fromUser) {
      const p = state.p;
      layer = Math.max(0, Math.min(p.numLayers - 1, layer));
      head = Math.max(0, Math.min(p.numHeads - 1, head));
      view = VIEW_NAMES[view] ? view : state.view;
      const changed = layer !== state.layer || head !== state.head || view !== state.view;
      if (layer !== state.layer) state.focus = null;
      if (fromUser && layer !== state.layer && state.layer >= 0) state.walking = true;  // prefetch() from now on
      state.layer = layer;
      state.head = head;
      state.view = view;
      render();
      if (fromUser && changed) report({layer: layer, head: head, view: view});
    }

    // A host may hear of a switch only once the keys have rested (host.reportDelay, ms; Streamlit's 250): a run of
    // arrow presses is one report (one page run, not one a key), and the run does not compete with fetching and
    // drawing the layer just chosen (it held the server for 90-130 ms of a 512-token layer's fetch). Without it,
    // each switch is reported at once (the notebook widget).
    function report(selection) {
      clearTimeout(state.reportTimer);
      if (!host.reportDelay) notify("select", selection);
      else state.reportTimer = setTimeout(function () { notify("select", selection); }, host.reportDelay);
    }

    function canvasFor(width, height) {
      const canvas = document.createElement("canvas");
      const ratio = global.devicePixelRatio || 1;
      canvas.width = Math.ceil(width * ratio);
      canvas.height = Math.ceil(height * ratio);
      canvas.style.width = width + "px";
      canvas.style.height = height + "px";
      const ctx = canvas.getContext("2d");
      ctx.scale(ratio, ratio);
      ctx.font = FONT + "px " + FONT_FAMILY;
      return {canvas: canvas, ctx: ctx};
    }

    function image(values, rows, cols, scale) {
      const off = document.createElement("canvas");
      off.width = cols;
      off.height = rows;
      const octx = off.getContext("2d");
      const data = octx.createImageData(cols, rows);
      const table = colourTable(scale);
      for (let i = 0; i < rows * cols; i++) {
        const c = colourIndex(scale, values[i]) * 3;
        data.data[i * 4] = table[c];
        data.data[i * 4 + 1] = table[c + 1];
        data.data[i * 4 + 2] = table[c + 2];
        data.data[i * 4 + 3] = 255;
      }
      octx.putImageData(data, 0, 0);
      return off;
    }

    // The colour bar as plotly draws it: values evenly along the bar, the gradient's stops where the scale puts
    // them (a power under 1 compresses it at the bottom), the quantity's name above.
    function legend(ctx, x, y, height, scale) {
      const gradient = ctx.createLinearGradient(0, y + height, 0, y);
      scale.stops.forEach(function (stop) { gradient.addColorStop(stop[0], stop[1]); });
      ctx.fillStyle = gradient;
      ctx.fillRect(x, y, 20, height);
      ctx.strokeStyle = "#555";
      ctx.strokeRect(x, y, 20, height);
      ctx.fillStyle = "#111";
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      const low = scale.range[0], high = scale.range[1], digits = high - low < 0.1 ? 3 : 2;
      [0, 0.25, 0.5, 0.75, 1].forEach(function (t) {
        ctx.fillText((low + (high - low) * t).toFixed(digits), x + 26, y + height * (1 - t));
      });
      ctx.textBaseline = "bottom";
      ctx.fillText(scale.quantity, x, y - 16, legendWidth() - 20);
    }

    function legendWidth() { return Math.round(LEGEND_WIDTH * FONT / DEFAULT_FONT); }  // grows with the labels

    function labelStep(cell) { return Math.max(1, Math.ceil((FONT + 2) / cell)); }

    function widest(ctx, labels, cap) {
      let w = 0;
      labels.forEach(function (label) { w = Math.max(w, ctx.measureText(label).width); });
      return Math.min(cap, Math.ceil(w) + 12);
    }

    function showTip(text, x, y) {
      tip.textContent = text;
      tip.style.display = "block";
      tip.style.left = (x + 14) + "px";
      tip.style.top = (y + 14) + "px";
    }

    function hideTip() { tip.style.display = "none"; }

    function place(event) {
      const box = el.getBoundingClientRect();
      return [event.clientX - box.left, event.clientY - box.top];
    }

    function drawHeatmap(m) {
      const R = m.rows.length, C = m.cols.length;
      const probe = canvasFor(1, 1).ctx;
      const rowLabels = m.rows.map(function (g) { return g.label; });
      const colLabels = m.cols.map(function (g) { return g.label; });
      const left = widest(probe, rowLabels, 260), top = widest(probe, colLabels, 200);
      const avail = Math.max(320, (stage.clientWidth || el.clientWidth || 900) - left - legendWidth() - 8);
      const cell = Math.max(1, Math.min(Math.round(40 * FONT / DEFAULT_FONT), Math.floor(avail / C)));
      const width = left + C * cell + legendWidth(), height = top + R * cell + 8;
      const drawn = canvasFor(width, height), ctx = drawn.ctx;
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(image(m.values, R, C, state.p.scales.weight), left, top, C * cell, R * cell);
      const pair = isPair(state.p);
      ctx.textBaseline = "middle";
      ctx.textAlign = "right";
      const rowStep = labelStep(cell), colStep = labelStep(cell);
      for (let r = 0; r < R; r += rowStep) {
        ctx.fillStyle = pair ? SEGMENT_COLOURS[m.rows[r].segment] : "#111";
        ctx.font = segmentFont(m.rows[r].segment, pair);
        ctx.fillText(rowLabels[r], left - 6, top + r * cell + cell / 2, left - 10);
      }
      ctx.textAlign = "left";
      for (let c = 0; c < C; c += colStep) {
        ctx.save();
        ctx.translate(left + c * cell + cell / 2, top - 6);
        ctx.rotate(-Math.PI / 2);
        ctx.fillStyle = pair ? SEGMENT_COLOURS[m.cols[c].segment] : "#111";
        ctx.font = segmentFont(m.cols[c].segment, pair);
        ctx.fillText(colLabels[c], 0, 0, top - 10);
        ctx.restore();
      }
      ctx.font = FONT + "px " + FONT_FAMILY;
      legend(ctx, left + C * cell + 16, top + 24, Math.max(80, Math.min(R * cell - 24, 320)), state.p.scales.weight);
      drawn.canvas.setAttribute("role", "img");
      drawn.canvas.setAttribute("aria-label", "heatmap of layer " + (state.layer + 1) + ", head " +
        (state.head + 1) + ": " + R + " query by " + C + " key tokens: " + rowLabels.slice(0, 64).join(" ") +
        (R > 64 ? " \u2026" : "") + ". The table after it lists the largest weights.");
      drawn.canvas.addEventListener("mousemove", function (event) {
        const box = drawn.canvas.getBoundingClientRect();
        const c = Math.floor((event.clientX - box.left - left) / cell);
        const r = Math.floor((event.clientY - box.top - top) / cell);
        if (r < 0 || c < 0 || r >= R || c >= C) { hideTip(); return; }
        const at = place(event);
        showTip("query: " + rowLabels[r] + "\nkey: " + colLabels[c] + "\nweight: " +
                m.values[r * C + c].toFixed(3), at[0], at[1]);
      });
      drawn.canvas.addEventListener("mouseleave", hideTip);
      const both = element("div");
      both.appendChild(drawn.canvas);
      both.appendChild(topWeights(m, rowLabels, colLabels));
      return both;
    }

    // The indices of the k largest values, largest first, ties in index order (what a sort by value, then index,
    // would put first), in one pass that keeps the k so far: sorting all 512 x 512 weights of a trained head
    // took about 200 ms of every head switch (docs/BENCHMARKS.md, the base-size model).
    function largest(values, k) {
      const top = [];
      for (let i = 0; i < values.length; i++) {
        const v = values[i];
        if (top.length === k && !(v > values[top[k - 1]])) continue;
        let j = top.length === k ? k - 1 : top.length;
        while (j > 0 && values[top[j - 1]] < v) { top[j] = top[j - 1]; j--; }
        top[j] = i;
      }
      return top;
    }

    // The heatmap's text alternative: its TABLE_ROWS largest weights, largest first, as a table a screen
    // reader reads (query, key, weight); the canvas is a picture to it.
    function topWeights(m, rowLabels, colLabels) {
      const R = m.rows.length, C = m.cols.length, top = largest(m.values, Math.min(TABLE_ROWS, R * C));
      const hidden = element("div", "ib-sr");  // a table ignores a width below its content's: the box around it
      const table = element("table", "", hidden);
      element("caption", "", table).textContent = "Layer " + (state.layer + 1) + ", head " + (state.head + 1) +
        ": the " + Math.min(TABLE_ROWS, R * C) + " largest of " + R * C + " attention weights, largest first";
      const head = element("tr", "", element("thead", "", table));
      ["query", "key", "weight"].forEach(function (name) {
        const cell = element("th", "", head);
        cell.setAttribute("scope", "col");
        cell.textContent = name;
      });
      const body = element("tbody", "", table);
      top.forEach(function (i) {
        const row = element("tr", "", body), r = Math.floor(i / C), c = i % C;
        element("td", "", row).textContent = rowLabels[r];
        element("td", "", row).textContent = colLabels[c];
        element("td", "", row).textContent = m.values[i].toFixed(3);
      });
      return hidden;
    }

    function gridCodes() {
      if (!state.grid) state.grid = decodeBase64(state.p.grid.data);
      return state.grid;
    }

    function drawGrid() {
      const p = state.p, L = p.numLayers, H = p.numHeads, c = p.grid.cells, codes = gridCodes();
      const probe = canvasFor(1, 1).ctx;
      const left = widest(probe, ["L" + L], 80), top = FONT + 14, gap = 8;
      const avail = (stage.clientWidth || el.clientWidth || 900) - left - legendWidth();
      const thumb = Math.max(24, Math.min(96, Math.floor(avail / H) - gap));
      const pitch = thumb + gap, width = left + H * pitch + legendWidth(), height = top + L * pitch + 8;
      const drawn = canvasFor(width, height), ctx = drawn.ctx;
      ctx.imageSmoothingEnabled = false;
      const values = new Float32Array(c * c), scale = p.scales.grid;
      for (let l = 0; l < L; l++) {
        for (let h = 0; h < H; h++) {
          const offset = (l * H + h) * c * c;
          for (let i = 0; i < c * c; i++) values[i] = codes[offset + i] / 255 * p.grid.max;  // codes: share of max
          ctx.drawImage(image(values, c, c, scale), left + h * pitch, top + l * pitch, thumb, thumb);
        }
      }
      ctx.fillStyle = "#111";
      ctx.textBaseline = "middle";
      ctx.textAlign = "center";
      // Head labels at 18 px: "H12" when it fits the pitch, else the bare number, else every k-th number.
      const named = probe.measureText("H" + H).width + 6 <= pitch;
      const every = named ? 1 : Math.ceil((probe.measureText(String(H)).width + 6) / pitch);
      for (let h = 0; h < H; h++) {
        if (h % every) continue;
        ctx.fillText((named ? "H" : "") + (h + 1), left + h * pitch + thumb / 2, top / 2);
      }
      ctx.textAlign = "right";
      for (let l = 0; l < L; l++) ctx.fillText("L" + (l + 1), left - 6, top + l * pitch + thumb / 2);
      ctx.strokeStyle = "#000";
      ctx.lineWidth = 4;
      ctx.strokeRect(left + state.head * pitch - 3, top + state.layer * pitch - 3, thumb + 6, thumb + 6);
      legend(ctx, left + H * pitch + 12, top + 24, Math.max(80, Math.min(L * pitch - 40, 320)), scale);
      drawn.canvas.style.cursor = "pointer";
      function hit(event) {
        const box = drawn.canvas.getBoundingClientRect();
        const h = Math.floor((event.clientX - box.left - left) / pitch);
        const l = Math.floor((event.clientY - box.top - top) / pitch);
        return (l >= 0 && h >= 0 && l < L && h < H) ? [l, h] : null;
      }
      drawn.canvas.addEventListener("mousemove", function (event) {
        const found = hit(event);
        if (!found) { hideTip(); return; }
        const at = place(event);
        showTip("layer " + (found[0] + 1) + ", head " + (found[1] + 1) + ": click to open", at[0], at[1]);
      });
      drawn.canvas.addEventListener("mouseleave", hideTip);
      drawn.canvas.addEventListener("click", function (event) {
        const found = hit(event);
        if (found) { hideTip(); select(found[0], found[1], "heatmap", true); }
      });
      drawn.canvas.setAttribute("role", "img");
      drawn.canvas.setAttribute("aria-label", "all " + L + " layers by " + H + " heads; the frame is on layer " +
        (state.layer + 1) + ", head " + (state.head + 1) + ": arrow keys move it, Enter opens that head");
      return drawn.canvas;
    }

    function drawLines(m) {
      const ROW = Math.round(FONT * 1.55), GAP = Math.round(FONT * 15.5);
      const R = m.rows.length, C = m.cols.length, pair = isPair(state.p);
      const probe = canvasFor(1, 1).ctx;
      const leftW = widest(probe, m.rows.map(function (g) { return g.label; }), 240) + 16;  // + the spans' padding
      const rightW = widest(probe, m.cols.map(function (g) { return g.label; }), 240) + 16;
      const wrap = element("div", "ib-lines");
      wrap.style.width = (leftW + GAP + rightW + 16) + "px";
      wrap.style.height = (Math.max(R, C) * ROW + 8) + "px";
      const drawn = canvasFor(GAP, Math.max(R, C) * ROW + 8);
      drawn.canvas.style.position = "absolute";
      drawn.canvas.style.left = leftW + "px";
      wrap.appendChild(drawn.canvas);
      function tokens(groups, side, x, width) {
        return groups.map(function (group, i) {
          const span = element("span", "ib-token", wrap);
          span.textContent = group.label;
          span.title = group.label;
          span.style.top = (i * ROW) + "px";
          span.style.left = x + "px";
          span.style.width = width + "px";
          span.style.textAlign = side === "left" ? "right" : "left";
          span.style.color = pair ? SEGMENT_COLOURS[group.segment] : "#111";
          span.style.fontStyle = pair && group.segment === 1 ? "italic" : "normal";
          span.addEventListener("mouseenter", function () { if (!state.pinned) focus({side: side, index: i}); });
          span.addEventListener("mouseleave", function () { if (!state.pinned) focus(null); });
          span.addEventListener("click", function () {
            const same = state.focus && state.focus.side === side && state.focus.index === i && state.pinned;
            state.pinned = !same;
            focus(same ? null : {side: side, index: i});
          });
          return span;
        });
      }
      const leftNodes = tokens(m.rows, "left", 0, leftW - 8);
      const rightNodes = tokens(m.cols, "right", leftW + GAP + 8, rightW);
      function paint() {
        const ctx = drawn.ctx, f = state.focus;
        ctx.clearRect(0, 0, GAP, Math.max(R, C) * ROW + 8);
        const stops = state.p.scales.weight.stops;
        ctx.strokeStyle = stops[stops.length - 1][1];  // the weight scale's 1: opacity says the weight
        ctx.lineWidth = 2;
        let shown = 0;
        for (let r = 0; r < R; r++) {
          for (let c = 0; c < C; c++) {
            const w = m.values[r * C + c];
            const focused = f && ((f.side === "left" && f.index === r) || (f.side === "right" && f.index === c));
            if (f ? !focused : w < LINE_THRESHOLD) continue;
            ctx.globalAlpha = Math.min(1, w);
            ctx.beginPath();
            ctx.moveTo(0, r * ROW + ROW / 2);
            ctx.lineTo(GAP, c * ROW + ROW / 2);
            ctx.stroke();
            shown++;
          }
        }
        ctx.globalAlpha = 1;
        leftNodes.forEach(function (node, r) {
          node.classList.toggle("ib-dim", !!f && !(f.side === "left" && f.index === r));
          node.classList.toggle("ib-focus", !!f && f.side === "left" && f.index === r);
        });
        rightNodes.forEach(function (node, c) {
          node.classList.toggle("ib-dim", !!f && !(f.side === "right" && f.index === c));
          node.classList.toggle("ib-focus", !!f && f.side === "right" && f.index === c);
        });
        if (f) {
          const along = [];
          if (f.side === "left") for (let c = 0; c < C; c++) along.push(m.values[f.index * C + c]);
          else for (let r = 0; r < R; r++) along.push(m.values[r * C + f.index]);
          let best = 0;
          along.forEach(function (w, k) { if (w > along[best]) best = k; });
          const name = (f.side === "left" ? m.rows : m.cols)[f.index].label;
          const other = (f.side === "left" ? m.cols : m.rows)[best].label;
          status.textContent = (f.side === "left" ? "\u2018" + name + "\u2019 attends most to \u2018"
                                                 : "\u2018" + name + "\u2019 gets most from \u2018") +
            other + "\u2019 (" + along[best].toFixed(3) + ")" + (state.pinned ? "; click it again to let go" : "");
        } else {
          status.textContent = shown + " lines with weight \u2265 " + LINE_THRESHOLD +
            "; hover or click a token to see all of its lines.";
        }
      }
      wrap.paint = paint;
      paint();
      return wrap;
    }

    function focus(value) {
      state.focus = value;
      if (state.drawn && state.drawn.paint) state.drawn.paint();
    }

    function note(options) {
      const parts = [];
      if (options.pairFilter && options.pairFilter !== "all" && isPair(state.p)) {
        parts.push("pair " + options.pairFilter.replace("->", "\u2192") + " (weights not renormalised)");
      }
      if (options.hideSpecial) parts.push("[CLS]/[SEP] hidden, rows renormalised");
      if (options.mergeWords) parts.push("word pieces merged");
      return parts.length ? " \u00b7 " + parts.join(", ") : "";
    }

    function render() {
      const p = state.p;
      syncControls();
      hideTip();
      const where = "layer " + (state.layer + 1) + ", head " + (state.head + 1);
      let drawn = null;
      if (state.view === "grid") {
        title.textContent = p.title + " \u00b7 all " + p.numLayers + " layers \u00d7 " + p.numHeads + " heads";
        status.textContent = "Each head at " + p.grid.cells + " \u00d7 " + p.grid.cells +
          " cells (block means); the black frame is " + where + ". Click a head to open it (or arrow keys, then Enter).";
        drawn = drawGrid();
      } else {
        const codes = codesOf(state.layer);
        if (!codes) {
          if (state.failed[state.layer]) {
            status.textContent = "Layer " + (state.layer + 1) + " cannot be shown: " + state.failed[state.layer] + ".";
          } else if (state.encoded[state.layer]) {
            status.textContent = "Unpacking layer " + (state.layer + 1) + "\u2026";  // update() started it
          } else if (p.canFetch === false) {
            status.textContent = "Layer " + (state.layer + 1) + " is not in this file: above " + p.fullMaxTokens +
              " tokens only layer " + Object.keys(p.layers).map(function (l) { return Number(l) + 1; }).join(", ") +
              " is saved. The grid (All heads) shows every head.";
          } else {
            status.textContent = "Loading layer " + (state.layer + 1) + "\u2026";
            notify("layer", state.layer);
          }
          return;
        }
        const m = viewMatrix(p, codes, state.head, state.options);
        title.textContent = p.title + " \u00b7 " + where + " \u00b7 " + p.n + " tokens" + note(state.options);
        if (m.empty) {
          status.textContent = m.message;
          drawn = element("div");
        } else if (state.view === "lines") {
          drawn = drawLines(m);
        } else {
          status.textContent = "Rows: query tokens (who attends); columns: key tokens. Hover a cell for its " +
            "weight (8-bit, \u00b10.004)." + (isPair(p) ? " Sentence A in blue, B in orange italics." : "");
          drawn = drawHeatmap(m);
        }
      }
      while (stage.firstChild) stage.removeChild(stage.firstChild);
      stage.appendChild(drawn);
      stage.classList.remove("ib-stale");
      state.drawn = drawn;
      state.width = stage.clientWidth;
      el.setAttribute("data-view", state.view);
      el.setAttribute("data-layer", String(state.layer + 1));
      el.setAttribute("data-head", String(state.head + 1));
      prefetch(state.layer + 1);
    }

    // With a layer URL (the host fetches layers itself), once the user has moved between layers the next layer
    // down is asked for as soon as one is drawn: ArrowDown, the usual way through the layers, then finds it
    // unpacked. Not before: a view that is only looked at costs its one layer (its 5 MB budget at 512 tokens).
    function prefetch(layer) {
      const p = state.p;
      if (!state.walking || !p.layerUrl || layer >= p.numLayers || state.encoded[layer] || state.failed[layer]) {
        return;
      }
      notify("layer", layer);
    }

    function same(a, b) { return JSON.stringify(a) === JSON.stringify(b); }

    function update(next) {
      next = readPayload(next);
      const fresh = !state.p || state.p.inputId !== next.inputId;
      if (fresh) {
        state.encoded = {};
        state.decoded = {};
        state.unpacking = {};
        state.failed = {};
        // While the new input unpacks, the last drawing stays in place (no jump in the page) but dimmed and
        // inert, and data-layer/data-head no longer claim it.
        stage.classList.add("ib-stale");
        ["data-view", "data-layer", "data-head"].forEach(function (name) { el.removeAttribute(name); });
        state.grid = null;
        state.focus = null;
        state.pinned = false;
        state.walking = false;
      }
      let arrived = false;
      Object.keys(next.layers || {}).forEach(function (key) {
        if (state.encoded[key] && layerId(state.encoded[key]) === layerId(next.layers[key])) return;
        delete state.decoded[key];
        state.encoded[key] = next.layers[key];
        arrived = true;
      });
      // The layer on screen (or to open) first, then the others.
      const first = String(fresh ? next.initial.layer : state.layer);
      const rebuild = fresh || !same(state.p.controls, next.controls) || state.p.font !== next.font;
      state.p = next;
      FONT = next.font || DEFAULT_FONT;
      el.style.setProperty("--ib-font", FONT + "px");
      if (state.encoded[first]) unpack(first);
      Object.keys(state.encoded).forEach(unpack);
      if (rebuild) buildControls();
      const optionsChanged = fresh || !same(state.givenOptions, next.options);
      if (optionsChanged) {
        state.givenOptions = next.options;
        state.options = Object.assign({}, next.options);
      }
      if (fresh || !same(state.lastInitial, next.initial)) {
        state.lastInitial = next.initial;
        state.layer = -1;  // draw even when the selection is the same numbers
        select(next.initial.layer, next.initial.head, next.initial.view, false);
      } else if (arrived || rebuild || optionsChanged) {
        render();  // the same data handed over again (a host's rerun) draws nothing
      }
    }

    el.addEventListener("keydown", function (event) {
      const tag = event.target && event.target.tagName;
      if (tag === "SELECT" || tag === "INPUT") return;
      const moves = {ArrowRight: [0, 1], ArrowLeft: [0, -1], ArrowDown: [1, 0], ArrowUp: [-1, 0]};
      if (event.key === "Enter" && state.p && state.view === "grid") {  // the framed head, opened as a heatmap
        event.preventDefault();
        select(state.layer, state.head, "heatmap", true);
        return;
      }
      const move = moves[event.key];
      if (!move || !state.p) return;
      event.preventDefault();
      select(state.layer + move[0], state.head + move[1], state.view, true);
    });
    if (global.ResizeObserver) {
      new global.ResizeObserver(function () {
        if (state.p && state.view !== "lines" && Math.abs(stage.clientWidth - state.width) > 24) render();
      }).observe(stage);
    }
    // A layer fetched by the host (its onRequestLayer), as {id, bytes}: unpacked, and drawn if it is on screen.
    function receive(layer, value) {
      const key = String(layer);
      if (!state.p || (state.encoded[key] && layerId(state.encoded[key]) === layerId(value))) return;
      delete state.decoded[key];
      state.encoded[key] = value;
      unpack(key);
    }

    update(payload);
    return {
      update: update,
      receive: receive,
      layerUrl: function () { return state.p && state.p.layerUrl; },
      select: function (layer, head, view) { select(layer, head, view || state.view, false); },
      get selection() { return {layer: state.layer, head: state.head, view: state.view}; },
      element: el,
    };
  }

  global.InsideBertAttention = {mount: mount, viewMatrix: viewMatrix, decodeBase64: decodeBase64, inflate: inflate,
                                readPayload: readPayload, colourTable: colourTable, colourIndex: colourIndex,
                                version: 2};
})(typeof globalThis !== "undefined" ? globalThis : window);
