// ctxbench view: one cell's calls, prompts and probes, from the data embedded in the page
// (ctxbench/view/data.py). No library: the page opens from a file or from `ctxbench view --serve`.
"use strict";
(function () {
  const D = JSON.parse(document.getElementById("cell-data").textContent);
  const $ = (sel) => document.querySelector(sel);
  const el = (tag, attrs, ...kids) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v);
    }
    for (const kid of kids) if (kid != null) node.append(kid);
    return node;
  };
  const num = (v) => (v == null ? "-" : Number(v).toLocaleString("en-US"));
  const usd = (v) => (v == null ? "-" : "$" + Number(v).toFixed(4));
  const C = D.calls; // columns: call, sent, full, estimated, accepted, layers, state, cached, cost, message_index
  const n = C.call.length;

  // --- the recorded prompts: call i's refs said against call i-1's ([start, length] or a ref) -----
  const table = {};
  const prompts = [];
  if (D.contexts) {
    let last = [];
    for (const row of D.contexts.rows) {
      Object.assign(table, row.new || {});
      if (row.call == null) continue;
      const refs = [];
      for (const item of row.refs) {
        if (Array.isArray(item)) for (let k = item[0]; k < item[0] + item[1]; k++) refs.push(last[k]);
        else refs.push(item);
      }
      prompts[row.call] = last = refs;
    }
  }
  const original = {}; // transcript index -> its stored entry
  for (const [ref, e] of Object.entries(table)) if (e.index != null) original[e.index] = { ref, ...e };
  const fullText = (e) => (e.origin != null && original[e.origin] ? original[e.origin].text.slice(0, e.same) : "") + e.text;

  // What each message of call i's prompt is, against the full history before it.
  function marked(i) {
    const refs = prompts[i] || [];
    const upto = C.message_index[i];
    const sent = refs.map((ref) => {
      const e = table[ref];
      const by = (e.meta && e.meta.compacted_by) || [];
      let status, source = e.index != null ? e.index : e.origin;
      if (e.index != null) status = "kept";
      else if (e.origin != null) {
        // How much of the transcript's text went out: all of it (something added after it), a
        // start of it (cut short), or none (replaced by a placeholder).
        const before = original[e.origin] ? original[e.origin].text.length : 0;
        if (!by.length || e.same >= before) status = "annotated";
        else status = e.same > 0 ? "truncated" : "masked";
      } else status = by.length ? "summary" : "added";
      return { ref, e, status, by, source };
    });
    const covered = new Set(sent.filter((s) => s.source != null).map((s) => s.source));
    const summaries = sent.filter((s) => s.status === "summary");
    const rows = [];
    let next = 0;
    // History order: each transcript message before the call, as sent or dropped; messages the
    // strategy added (summaries, notices) stand where they are in the prompt.
    const place = (upToIndex) => {
      while (next < sent.length && (sent[next].source == null || sent[next].source < upToIndex)) {
        rows.push(sent[next]);
        next += 1;
      }
    };
    for (let k = 0; k < upto; k++) {
      if (covered.has(k)) continue;
      place(k);
      const e = original[k];
      if (!e) continue;
      rows.push({ ref: e.ref, e, status: summaries.length ? "summarised" : "dropped", by: [], source: k });
    }
    place(Infinity);
    return { rows, summaries };
  }

  // --- header ----------------------------------------------------------------------------------
  const m = D.metrics;
  $("#facts").append(
    ...[
      ["calls", num(m.calls)],
      ["tokens sent", num(m.tokens_sent_total)],
      ["full history", num(m.tokens_uncompacted_total)],
      ["savings", m.savings != null ? (m.savings * 100).toFixed(1) + "%" : "-"],
      ["peak (incl. rejected)", num(m.tokens_sent_peak)],
      ["rejected calls", num(m.failed_calls)],
      ["retention", m.retention != null ? (m.retention * 100).toFixed(1) + "%" : "-"],
      ["window", num(D.cell.context_window)],
    ].map(([k, v]) => el("div", { class: "fact" }, el("span", { class: "k", text: k }), el("span", { class: "v", text: v })))
  );

  // --- the call timeline (SVG) -------------------------------------------------------------------
  const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf"];
  const layerNames = [...new Set(C.layers.flat())];
  const colorOf = (layer) => COLORS[layerNames.indexOf(layer) % COLORS.length];
  function timeline() {
    const W = 1100, H = 300, L = 70, R = 170, T = 12, B = 56;
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("id", "timeline-svg");
    const ns = (tag, attrs) => {
      const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
      for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
      svg.append(node);
      return node;
    };
    const levels = D.thresholds.map((t) => t.tokens);
    // The scale is the prompts sent, the window and the thresholds: a full history many times the
    // window would flatten them; what goes above is clipped (its last value is said on the right).
    const ymax = Math.max(1, ...C.sent, D.cell.context_window || 0, ...levels) * 1.15;
    const clip = ns("clipPath", { id: "plot-area" });
    const area = document.createElementNS("http://www.w3.org/2000/svg", "rect");
    for (const [k, v] of Object.entries({ x: L, y: T, width: W - L - R, height: H - T - B })) area.setAttribute(k, v);
    clip.append(area);
    const x = (i) => L + ((W - L - R) * i) / Math.max(1, n - 1);
    const y = (v) => T + (H - T - B) * (1 - v / ymax);
    for (let k = 0; k <= 4; k++) {
      const v = (ymax / 4) * k;
      ns("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "grid" });
      ns("text", { x: L - 6, y: y(v) + 4, class: "tick", "text-anchor": "end" }).textContent = Math.round(v).toLocaleString("en-US");
    }
    const path = (vals, cls) => {
      const d = vals.map((v, i) => (v == null ? "" : `${i && vals[i - 1] != null ? "L" : "M"}${x(i).toFixed(1)},${y(v).toFixed(1)}`)).join("");
      ns("path", { d, class: cls, "clip-path": "url(#plot-area)" });
    };
    const right = (v, text, cls) => {
      ns("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: cls });
      ns("text", { x: W - R + 4, y: y(v) + 4, class: "tick " + cls + "-label" }).textContent = text;
    };
    if (D.cell.context_window) right(D.cell.context_window, `window ${num(D.cell.context_window)}`, "window");
    const byLevel = new Map(); // layers that start at the same level share one line and one label
    for (const t of D.thresholds) byLevel.set(t.tokens, [...(byLevel.get(t.tokens) || []), t.layer]);
    for (const [tokens, layers] of byLevel) right(tokens, `${layers.join(", ")} ≥ ${num(tokens)}`, "threshold");
    const lastFull = C.full[n - 1];
    if (lastFull > ymax) ns("text", { x: W - R + 4, y: T + 10, class: "tick" }).textContent = `full history → ${num(lastFull)}`;
    path(C.full, "full");
    if (D.status_used) path(D.status_used, "used");
    path(C.sent, "sent");
    for (let i = 0; i < n; i++) {
      if (!C.accepted[i]) ns("text", { x: x(i), y: y(C.sent[i]) + 4, class: "rejected", "text-anchor": "middle" }).textContent = "×";
      C.layers[i].forEach((layer, k) => ns("rect", { x: x(i) - 1.5, y: H - B + 6 + k * 7, width: 3, height: 6, fill: colorOf(layer), class: "fired" }));
    }
    ns("text", { x: (L + W - R) / 2, y: H - 6, class: "tick", "text-anchor": "middle" }).textContent = "call (layers that fired below the axis)";
    const cursor = ns("line", { x1: 0, x2: 0, y1: T, y2: H - B, class: "cursor" });
    svg.addEventListener("click", (ev) => {
      const box = svg.getBoundingClientRect();
      const px = ((ev.clientX - box.left) / box.width) * W;
      const i = Math.max(0, Math.min(n - 1, Math.round(((px - L) / (W - L - R)) * (n - 1))));
      location.hash = `call=${i}`;
    });
    svg.showCall = (i) => {
      cursor.setAttribute("x1", x(i));
      cursor.setAttribute("x2", x(i));
    };
    return svg;
  }
  const svg = timeline();
  $("#timeline").append(svg);
  const legend = [
    ["sent", "tokens sent (counted)"],
    ["full", "full history"],
    ...(D.status_used ? [["used", "strategy's estimate before compaction (what its thresholds compare)"]] : []),
    ["threshold", "thresholds from the strategy's steps and budget"],
    ["window", "context window"],
  ];
  $("#legend").append(
    ...legend.map(([cls, text]) => el("span", { class: "key" }, el("i", { class: "swatch " + cls }), text)),
    el("span", { class: "key" }, el("b", { class: "rejected", text: "×" }), " rejected call"),
    ...layerNames.map((layer) => el("span", { class: "key" }, el("i", { class: "swatch", style: `background:${colorOf(layer)}` }), layer))
  );
  $("#threshold-note").textContent = D.threshold_note;

  // --- the calls table -------------------------------------------------------------------------
  const tbody = $("#calls tbody");
  for (let i = 0; i < n; i++) {
    const tr = el(
      "tr",
      { "data-call": i, class: C.accepted[i] ? "" : "rejected-row", onclick: () => (location.hash = `call=${i}`) },
      el("td", { text: C.call[i] }),
      el("td", { text: num(C.sent[i]) }),
      el("td", { text: num(C.full[i]) }),
      el("td", { text: C.accepted[i] ? "yes" : "rejected" }),
      el("td", { text: C.state[i] || "" }),
      el("td", { text: C.layers[i].join(" ") }),
      el("td", { text: num(C.cached[i]) }),
      el("td", { text: usd(C.cost[i]) })
    );
    tbody.append(tr);
  }

  // --- one call's prompt -----------------------------------------------------------------------
  const PREVIEW = 240;
  function body(text) {
    const pre = el("pre", { class: "text" });
    if (text.length <= PREVIEW * 2) {
      pre.textContent = text;
      return pre;
    }
    pre.textContent = text.slice(0, PREVIEW) + " …";
    const more = el("button", { class: "more", text: `show all ${num(text.length)} chars` });
    more.addEventListener("click", () => {
      pre.textContent = text;
      more.remove();
    });
    return el("div", {}, pre, more);
  }
  function showCall(i) {
    if (!(i >= 0 && i < n)) return;
    svg.showCall(i);
    document.querySelectorAll("#calls tr.current").forEach((tr) => tr.classList.remove("current"));
    const row = document.querySelector(`#calls tr[data-call="${i}"]`);
    if (row) {
      row.classList.add("current");
      const box = $("#calls-box"); // scroll the table, not the page
      if (row.offsetTop < box.scrollTop + 30 || row.offsetTop > box.scrollTop + box.clientHeight - 30)
        box.scrollTop = row.offsetTop - box.clientHeight / 2;
    }
    const box = $("#call");
    box.replaceChildren();
    const events = (D.events_by_call[i] || []).map((e) => e.type + (e.compact_layer ? ` (${e.compact_layer})` : "")).join(", ");
    box.append(
      el("h2", { id: "call-title", text: `Call ${i}` }),
      el(
        "p",
        { class: "callfacts" },
        `${num(C.sent[i])} tokens sent of ${num(C.full[i])} in the full history; ` +
          (C.accepted[i] ? "accepted" : "rejected by the provider") +
          `; state ${C.state[i] || "-"}; layers ${C.layers[i].join(", ") || "none"}; cached ${num(C.cached[i])} tokens; cost ${usd(C.cost[i])}.` +
          (events ? ` Events: ${events}.` : "")
      )
    );
    if (!D.contexts) {
      box.append(el("p", { class: "note", text: "This cell did not record its prompts (output.contexts=false, or written by an older ctxbench): re-run it to see them." }));
      return;
    }
    const { rows } = marked(i);
    const counts = {};
    rows.forEach((r) => (counts[r.status] = (counts[r.status] || 0) + 1));
    box.append(
      el("p", { class: "counts" }, ...Object.entries(counts).map(([s, k]) => el("span", { class: "badge " + s, text: `${s} ${k}` }))),
      el("p", { class: "note", text: "In history order: every transcript message before this call, as sent (kept, or changed by a layer) or not sent (dropped; summarised when the prompt carries a summary); messages the strategy added stand where it put them." })
    );
    const list = el("ol", { class: "messages", id: "messages" });
    for (const r of rows) {
      const e = r.e;
      const where = r.source != null ? `#${r.source}` : "new";
      const head = el(
        "div",
        { class: "mhead" },
        el("span", { class: "badge " + r.status, text: r.status }),
        el("span", { class: "role", text: e.role + (e.name ? ` ${e.name}` : "") }),
        el("span", { class: "where", text: where }),
        el("span", { class: "size", text: `${num(e.tokens)} tok` }),
        r.by.length ? el("span", { class: "by", text: `by ${r.by.join(", ")}` }) : null
      );
      const li = el("li", { class: "msg " + r.status, "data-status": r.status }, head);
      if (r.status === "annotated") {
        const orig = original[e.origin] ? original[e.origin].text : "";
        li.append(
          el("div", { class: "label", text: `the transcript's ${num(orig.length)} chars, sent whole:` }),
          body(orig),
          el("div", { class: "label", text: `then ${num(e.text.length)} chars the strategy added:` }),
          body(e.text)
        );
      } else if (r.status === "truncated" || r.status === "masked") {
        const orig = original[e.origin] ? original[e.origin].text : "";
        li.append(
          el("div", { class: "label", text: `sent: ${num(e.same)} of the transcript's ${num(orig.length)} chars, then ${num(e.text.length)} chars of notice:` }),
          body(fullText(e)),
          el("div", { class: "label", text: `not sent (${num(orig.length - e.same)} chars):` }),
          body(orig.slice(e.same))
        );
      } else li.append(body(r.status === "dropped" || r.status === "summarised" ? e.text : fullText(e)));
      if (e.tool_calls) li.append(el("pre", { class: "calls", text: e.tool_calls.map((c) => `${c.name}(${c.arguments})`).join("\n") }));
      list.append(li);
    }
    box.append(list);
  }

  // --- probes ----------------------------------------------------------------------------------
  const ptbody = $("#probes tbody");
  for (const p of D.probes) {
    const lost = p.first_missing_call != null ? el("a", { href: `#call=${p.first_missing_call}`, text: `call ${p.first_missing_call}` }) : "-";
    ptbody.append(
      el(
        "tr",
        { class: p.status },
        el("td", { text: p.probe }),
        el("td", { text: p.question || "" }),
        el("td", { text: p.gold || "" }),
        el("td", { text: p.stated_at != null ? `#${p.stated_at}` : "-" }),
        el("td", { text: p.needed_at != null ? `#${p.needed_at}` : "-" }),
        el("td", { text: p.status }),
        el("td", {}, lost),
        el("td", { text: (p.layers || []).join("+") || "-" })
      )
    );
  }
  if (!D.probes.length) $("#probes").replaceWith(el("p", { class: "note", text: "No probes were judged in this cell." }));

  const route = () => {
    const match = /call=(\d+)/.exec(location.hash);
    if (match) showCall(Number(match[1]));
  };
  window.addEventListener("hashchange", route);
  route();
  if (!/call=/.test(location.hash)) showCall(D.first_call);
  document.body.dataset.ready = "1";
})();
