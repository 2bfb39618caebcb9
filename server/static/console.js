// The operator console: index versions (activate = rollback), per-node latency, cache hit rates,
// guardrail blocks, CRAG actions and the latest evaluation results, all from the admin API.
const $ = (id) => document.getElementById(id);
const { el } = Ragline;
Ragline.bindTokenField($("token"));

function table(node, head, rows) {
  node.textContent = "";
  node.append(el("tr", {}, ...head.map((h) => el("th", {}, h))));
  rows.forEach((cells) => node.append(el("tr", {}, ...cells.map((c) => el("td", {}, c)))));
  if (!rows.length) node.append(el("tr", {}, el("td", { class: "muted" }, "nothing yet")));
}

function counts(node, values, empty) {
  node.textContent = "";
  const entries = Object.entries(values || {});
  if (!entries.length) return node.append(el("span", { class: "muted" }, empty));
  node.append(entries.map(([k, v]) => `${k}: ${v}`).join(" · "));
}

const fixed = (x, digits = 3) => (typeof x === "number" ? x.toFixed(digits) : String(x ?? ""));

// The latest evaluation as a table when its shape is known: an A/B run (`ragline eval ab`: every metric of
// variant b against a, with the paired 95% interval and the sign test's p) or a retrieval run (per mode);
// any other result file as its JSON.
function evalView(results) {
  if (Array.isArray(results.comparisons)) {
    const rows = results.comparisons.map((c) => [
      c.metric, `${c.a} → ${c.b}`, fixed(c.value_a), fixed(c.value_b), fixed(c.diff),
      `[${fixed(c.ci95[0])}, ${fixed(c.ci95[1])}]`, fixed(c.p_value),
    ]);
    const node = el("table", { id: "eval-table" });
    table(node, ["metric", "variants", "a", "b", "b − a", "95% CI", "p"], rows);
    return node;
  }
  if (results.modes && typeof results.modes === "object") {
    const modes = Object.entries(results.modes);
    // Retrieval runs report evidence@k and MRR; BEIR runs nDCG@10 and recall@100: the columns present.
    const metrics = ["evidence@1", "evidence@5", "mrr@10", "ndcg@10", "recall@100"].filter((k) =>
      modes.some(([, m]) => k in m)
    );
    const rows = modes.map(([mode, m]) => [mode, String(m.n ?? ""), ...metrics.map((k) => fixed(m[k])),
      (m.misses || []).join(", ")]);
    const node = el("table", { id: "eval-table" });
    table(node, ["mode", "n", ...metrics, "misses"], rows);
    return node;
  }
  return el("pre", {}, JSON.stringify(results, null, 2).slice(0, 4000));
}

async function activate(version) {
  try {
    await Ragline.json("POST", `/v1/admin/index/${encodeURIComponent(version)}/activate`);
    await refresh();
  } catch (err) {
    $("problem").textContent = `activate ${version}: ${err.message}`;
  }
}

async function revoke(name) {
  try {
    await Ragline.json("DELETE", `/v1/admin/tokens/${encodeURIComponent(name)}`);
    await refresh();
  } catch (err) {
    $("problem").textContent = `revoke ${name}: ${err.message}`;
  }
}

// Refreshes overlap (page load, every token edit, the button): only the latest may write the page, or a
// slow reply to an older token (say the empty one while the field was cleared) shows its error last.
let latest = 0;

async function refresh() {
  const mine = ++latest;
  $("problem").textContent = "";
  try {
    const [versions, stats, evals, gaps, tokens] = await Promise.all([
      Ragline.json("GET", "/v1/index/versions"),
      Ragline.json("GET", "/v1/admin/stats"),
      Ragline.json("GET", "/v1/admin/evals/latest"),
      Ragline.json("GET", "/v1/admin/gaps?hours=168&limit=20"),
      Ragline.json("GET", "/v1/admin/tokens"),
    ]);
    if (mine !== latest) return;
    table(
      $("versions"),
      ["version", "state", "documents", "chunks", "strategies", "created", ""],
      versions.versions.map((v) => {
        const action =
          v.state === "checked" || v.state === "retired"
            ? Object.assign(el("button", { class: "secondary", "data-version": v.content_version }, "activate"), {
                onclick: () => activate(v.content_version),
              })
            : "";
        return [v.content_version, v.state, v.documents, v.chunks, (v.strategies || []).join(", "), v.created_at || "", action];
      })
    );
    table(
      $("nodes"),
      ["node", "variant", "requests", "mean ms"],
      stats.nodes.map((n) => [n.node, n.variant, n.count, n.mean_ms.toFixed(2)])
    );
    const lookups = Object.values(stats.cache).reduce((a, b) => a + b, 0);
    const hits = stats.cache.hit || 0;
    $("cache").textContent = lookups
      ? `hit rate ${((100 * hits) / lookups).toFixed(1)} % of ${lookups} lookups · ` +
        Object.entries(stats.cache_hits).map(([k, v]) => `${k} hits ${v}`).join(" · ")
      : "no lookups yet";
    table(
      $("gaps"),
      ["asked", "question", "why", "other wordings", "pages retrieved"],
      gaps.groups.map((g) => [
        g.count,
        g.question,
        Object.entries(g.reasons).map(([k, v]) => `${k.replace("_", " ")} ${v}`).join(", "),
        g.other_wordings.join(" · "),
        g.pages.join(", "),
      ])
    );
    table(
      $("tokens"),
      ["name", "scopes", "groups", "expires", "rate limit", "sha256", ""],
      tokens.tokens.map((t) => [
        t.name,
        t.scopes.join(", "),
        t.groups.length ? t.groups.join(", ") : "public only",
        t.expires_at || "never",
        t.rate_per_second ? `${t.rate_per_second}/s, burst ${t.burst ?? "default"}` : "server's",
        `${t.sha256_prefix}…`,
        Object.assign(el("button", { class: "secondary", "data-token": t.name }, "revoke"), {
          onclick: () => revoke(t.name),
        }),
      ])
    );
    counts($("guardrails"), stats.guardrail_blocks, "no blocks");
    counts($("crag"), stats.crag_actions, "no CRAG actions");
    $("evals").textContent = "";
    if (!evals.file) $("evals").append(el("span", { class: "muted" }, "no evaluation results found"));
    else
      $("evals").append(
        el("div", { class: "muted" }, evals.file),
        evalView(evals.results)
      );
  } catch (err) {
    if (mine === latest) $("problem").textContent = err.message;
  }
}

$("refresh").addEventListener("click", refresh);
$("token").addEventListener("change", refresh);
refresh();
