// Shared by the chat page and the console: the bearer token (kept in localStorage) and fetch helpers.
const Ragline = (() => {
  const KEY = "ragline-token";
  const token = () => localStorage.getItem(KEY) || "";
  function bindTokenField(input) {
    input.value = token();
    input.addEventListener("change", () => localStorage.setItem(KEY, input.value.trim()));
  }
  function headers(extra) {
    return Object.assign({ Authorization: "Bearer " + token() }, extra || {});
  }
  async function json(method, path, body) {
    const init = { method, headers: headers(body ? { "Content-Type": "application/json" } : {}) };
    if (body) init.body = JSON.stringify(body);
    const response = await fetch(path, init);
    const data = await response.json().catch(() => ({}));
    if (!response.ok) throw new Error((data.error && data.error.message) || response.statusText);
    return data;
  }
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    Object.entries(attrs || {}).forEach(([k, v]) => (k === "class" ? (node.className = v) : node.setAttribute(k, v)));
    children.forEach((c) => node.append(c instanceof Node ? c : document.createTextNode(String(c))));
    return node;
  }
  const COLORS = ["#2563eb", "#15803d", "#b45309", "#7c3aed", "#0891b2", "#be185d", "#4d7c0f", "#9a3412", "#334155"];
  function timingBar(timings) {
    const entries = Object.entries(timings || {}).filter(([k]) => k !== "total");
    const sum = entries.reduce((s, [, v]) => s + v, 0) || 1;
    const bar = el("div", { class: "timing-bar", id: "timing-bar" });
    const legend = el("div", { class: "legend" });
    entries.forEach(([node, ms], i) => {
      const part = el("div", { title: `${node}: ${ms.toFixed(1)} ms`, "data-node": node }, node);
      part.style.width = `${(100 * ms) / sum}%`;
      part.style.background = COLORS[i % COLORS.length];
      bar.append(part);
    });
    legend.append(entries.map(([n, ms]) => `${n} ${ms.toFixed(1)} ms`).join(" · ") + ` — total ${(timings.total || sum).toFixed(1)} ms`);
    return el("div", {}, bar, legend);
  }
  return { token, bindTokenField, headers, json, el, timingBar };
})();
