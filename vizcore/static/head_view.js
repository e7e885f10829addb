// Offline head view: query tokens on the left, key tokens on the right, one line per weight with its
// opacity set by the weight. Hovering (or tapping) a token shows only its lines and their weights.
// Reads window.HEAD_VIEW = {title, left, right, leftSegments, rightSegments, heads: {name: [[w]]},
// initialHead, threshold}. Tokens are set with textContent only: user text never becomes markup.
(function () {
  "use strict";
  const data = window.HEAD_VIEW;
  const SVG = "http://www.w3.org/2000/svg";
  const ROW = 24, WIDTH = 150, GAP = 260, TOP = 12;
  const COLOURS = ["#1f5fa8", "#c2410c"];  // sentence A blue, B orange and in italics
  const root = document.getElementById("head-view");
  const select = document.getElementById("head-select");
  const status = document.getElementById("head-status");
  document.getElementById("head-title").textContent = data.title;
  Object.keys(data.heads).forEach(function (name) {
    const option = document.createElement("option");
    option.value = name;
    option.textContent = name;
    select.appendChild(option);
  });
  select.value = data.initialHead;
  select.parentElement.style.display = Object.keys(data.heads).length > 1 ? "" : "none";

  const rows = Math.max(data.left.length, data.right.length);
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("width", 2 * WIDTH + GAP);
  svg.setAttribute("height", rows * ROW + 2 * TOP);
  svg.setAttribute("role", "img");
  root.appendChild(svg);
  const lines = document.createElementNS(SVG, "g");
  svg.appendChild(lines);
  let focus = null; // {side: "left" | "right", index}

  function label(text, x, y, anchor, segment, side, index) {
    const node = document.createElementNS(SVG, "text");
    node.setAttribute("x", x);
    node.setAttribute("y", y);
    node.setAttribute("text-anchor", anchor);
    node.setAttribute("dominant-baseline", "middle");
    node.setAttribute("class", "token " + side);
    node.setAttribute("fill", COLOURS[segment] || COLOURS[0]);
    node.setAttribute("font-style", segment === 1 ? "italic" : "normal");  // B: not told by colour alone
    node.textContent = text;
    node.addEventListener("mouseenter", function () { setFocus({side: side, index: index}); });
    node.addEventListener("mouseleave", function () { setFocus(null); });
    node.addEventListener("click", function () { setFocus({side: side, index: index}); });
    svg.appendChild(node);
    return node;
  }
  const leftNodes = data.left.map(function (t, i) {
    return label(t, WIDTH - 6, TOP + i * ROW + ROW / 2, "end", data.leftSegments[i], "left", i);
  });
  const rightNodes = data.right.map(function (t, j) {
    return label(t, WIDTH + GAP + 6, TOP + j * ROW + ROW / 2, "start", data.rightSegments[j], "right", j);
  });

  function draw() {
    const matrix = data.heads[select.value];
    while (lines.firstChild) lines.removeChild(lines.firstChild);
    let shown = 0;
    for (let i = 0; i < matrix.length; i++) {
      for (let j = 0; j < matrix[i].length; j++) {
        const w = matrix[i][j];
        const focused = focus && ((focus.side === "left" && focus.index === i) ||
                                  (focus.side === "right" && focus.index === j));
        if (focus && !focused) continue;
        if (!focused && w < data.threshold) continue;
        const line = document.createElementNS(SVG, "line");
        line.setAttribute("x1", WIDTH);
        line.setAttribute("y1", TOP + i * ROW + ROW / 2);
        line.setAttribute("x2", WIDTH + GAP);
        line.setAttribute("y2", TOP + j * ROW + ROW / 2);
        line.setAttribute("stroke", "#1f5fa8");
        line.setAttribute("stroke-width", 2);
        line.setAttribute("stroke-opacity", Math.min(1, w));
        const title = document.createElementNS(SVG, "title");
        title.textContent = data.left[i] + " \u2192 " + data.right[j] + ": " + w.toFixed(4);
        line.appendChild(title);
        lines.appendChild(line);
        shown++;
      }
    }
    leftNodes.forEach(function (n, i) { n.classList.toggle("dim", !!focus && !(focus.side === "left" && focus.index === i)); });
    rightNodes.forEach(function (n, j) { n.classList.toggle("dim", !!focus && !(focus.side === "right" && focus.index === j)); });
    if (focus) {
      const name = focus.side === "left" ? data.left[focus.index] : data.right[focus.index];
      const row = focus.side === "left" ? matrix[focus.index] : matrix.map(function (r) { return r[focus.index]; });
      let best = 0;
      row.forEach(function (w, k) { if (w > row[best]) best = k; });
      const other = focus.side === "left" ? data.right[best] : data.left[best];
      status.textContent = (focus.side === "left" ? "'" + name + "' attends most to '" + other + "'"
                                                  : "'" + name + "' gets most from '" + other + "'") +
                           " (" + row[best].toFixed(3) + ")";
    } else {
      status.textContent = shown + " lines with weight \u2265 " + data.threshold + "; hover a token to see all of its lines.";
    }
  }
  function setFocus(value) { focus = value; draw(); }
  select.addEventListener("change", draw);
  draw();
})();
