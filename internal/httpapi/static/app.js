// Runnel dashboard: plain JavaScript, no framework, nothing fetched from
// the internet. Each page reads one or two JSON APIs under /api/ and
// renders tables, an SVG chart or the stream graph; it refreshes every few
// seconds while it is shown. Elements carry data- attributes the browser
// tests read (internal/httpapi/dashboard_test.go).
"use strict";

const main = document.getElementById("main");
const statusEl = document.getElementById("status");
let timer = null;

function esc(v) {
  return String(v ?? "").replace(/[&<>"']/g, c => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
}
function num(n) { return n == null ? "" : Number(n).toLocaleString("en-US"); }
function bytes(n) {
  if (n == null || n < 0) return "";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}
function secs(s) {
  if (s == null) return "";
  if (s < 1) return (s * 1000).toFixed(0) + " ms";
  if (s < 120) return s.toFixed(1) + " s";
  return (s / 60).toFixed(1) + " min";
}
function ms(v) { return v == null ? "" : v.toFixed(1); }
function when(t) { return t ? new Date(t).toLocaleString() : ""; }

async function api(path, opts) {
  const r = await fetch("/api/" + path, opts);
  const body = await r.json();
  if (!r.ok) throw new Error(body.error || r.statusText);
  return body;
}

// table renders rows as a table; cols: [header, cell(row) -> html, class].
function table(id, cols, rows, rowAttrs) {
  let h = `<table id="${id}"><thead><tr>` + cols.map(c => `<th class="${c[2] || ""}">${esc(c[0])}</th>`).join("") + "</tr></thead><tbody>";
  for (const r of rows) {
    h += `<tr ${rowAttrs ? rowAttrs(r) : ""}>` + cols.map(c => `<td class="${c[2] || ""}" data-col="${esc(c[3] || "")}">${c[1](r)}</td>`).join("") + "</tr>";
  }
  if (rows.length === 0) h += `<tr><td colspan="${cols.length}" class="empty">none</td></tr>`;
  return h + "</tbody></table>";
}

function card(key, label, value) {
  return `<div class="card" data-key="${esc(key)}"><div class="label">${esc(label)}</div><div class="value">${value}</div></div>`;
}

const pages = {
  async overview() {
    const o = await api("overview");
    const age = o.epoch_age_seconds;
    return `<h2>Overview</h2><div class="cards">` +
      card("epoch_age", "committed epoch age", `<span class="${age > 10 ? "bad" : "ok"}">${secs(age)}</span>`) +
      card("committed_epoch", "committed epoch", esc(o.committed_epoch)) +
      card("barrier_interval", "barrier interval", esc(o.barrier_interval)) +
      card("relations", "relations", num(o.relations)) +
      card("actors", "actors", num(o.actors)) +
      card("sessions", "sessions", num(o.sessions)) +
      card("recoveries", "recoveries", num(o.recoveries)) +
      card("cache", "streaming cache", `${bytes(o.cache_bytes)} / ${bytes(o.cache_limit_bytes)}`) +
      `</div><p>Up since ${esc(when(o.started))}.</p>`;
  },

  async relations() {
    const rels = await api("relations");
    return `<h2>Relations</h2><p>Rows and bytes are counted from the committed snapshot; freshness is the age of the epoch every relation reflects.</p>` +
      table("relations", [
        ["id", r => esc(r.id), "num"],
        ["database", r => esc(r.database)],
        ["schema", r => esc(r.schema)],
        ["name", r => r.kind === "materialized view" ? `<a href="#graph/${r.id}">${esc(r.name)}</a>` : esc(r.name), "", "name"],
        ["kind", r => esc(r.kind), "", "kind"],
        ["rows", r => r.rows >= 0 ? num(r.rows) : "", "num", "rows"],
        ["bytes", r => bytes(r.bytes), "num", "bytes"],
        ["state", r => bytes(r.state_bytes), "num", "state_bytes"],
        ["actors", r => r.actors ? num(r.actors) : "", "num", "actors"],
        ["status", r => `<span class="${r.status === "running" ? "ok" : r.status ? "warn" : ""}">${esc(r.status)}</span>`, "", "status"],
        ["freshness", r => r.status ? secs(r.freshness_seconds) : "", "num", "freshness"],
      ], rels, r => `data-name="${esc(r.name)}" data-kind="${esc(r.kind)}"`);
  },

  async graph(id) {
    const g = await api("graph?id=" + encodeURIComponent(id));
    // Layers by distance from fragment 0 (the one writing the view).
    const byId = new Map(g.fragments.map(f => [f.id, f]));
    const depth = new Map([[0, 0]]);
    const queue = [0];
    while (queue.length) {
      const f = byId.get(queue.shift());
      if (!f) continue;
      for (const i of f.inputs || []) {
        if (!depth.has(i)) { depth.set(i, depth.get(f.id) + 1); queue.push(i); }
      }
    }
    const layers = [];
    for (const f of g.fragments) {
      const d = depth.get(f.id) ?? 0;
      (layers[d] = layers[d] || []).push(f);
    }
    let h = `<h2>Stream graph of ${esc(g.name)}</h2>
      <p class="legend">Border colour: back-pressure (share of the fragment's time blocked on output).
      <span><i style="background:var(--busy)"></i>busy</span><span><i style="background:var(--blocked)"></i>blocked</span>
      <span><i style="background:var(--idle)"></i>idle / aligning</span></p>
      <div class="graph" id="graph"><svg class="edges"></svg>`;
    for (const layer of layers) {
      h += `<div class="layer">`;
      for (const f of layer || []) {
        const red = Math.round(Math.min(1, f.blocked * 2) * 255);
        const border = f.blocked > 0.05 ? `rgb(${red},40,40)` : "var(--line)";
        h += `<div class="frag" id="frag-${f.id}" data-fragment="${f.id}" data-rows-out="${f.rows_out}" data-actors="${f.actors}" style="border-color:${border}">
          <h3>Fragment ${f.id} <span class="stats">(${esc(f.dist)})</span></h3>
          <div class="stats">${num(f.actors)} actors · <b data-col="rate">${num(Math.round(f.rows_per_second))}</b> rows/s out ·
            ${num(f.rows_in)} in / ${num(f.rows_out)} out ·
            <span class="bar" style="width:${Math.round(f.busy * 60)}px;background:var(--busy)"></span><span class="bar" style="width:${Math.round(f.blocked * 60)}px;background:var(--blocked)"></span><span class="bar" style="width:${Math.round((1 - f.busy - f.blocked) * 60)}px;background:var(--idle)"></span>
            busy ${(f.busy * 100).toFixed(0)}% · blocked ${(f.blocked * 100).toFixed(0)}%</div>
          <pre>${esc(f.operators.join("\n"))}</pre></div>`;
      }
      h += `</div>`;
    }
    return h + `</div>`;
  },

  async actors() {
    const actors = await api("actors");
    const counts = {};
    for (const a of actors) counts[a.state] = (counts[a.state] || 0) + 1;
    return `<h2>Actors</h2><p>${Object.entries(counts).map(([s, n]) => `${esc(s)}: <b>${n}</b>`).join(" · ")}</p>` +
      table("actors", [
        ["id", a => esc(a.id), "num"],
        ["database", a => esc(a.database)],
        ["job", a => esc(a.job), "", "job"],
        ["fragment", a => esc(a.fragment), "num"],
        ["root executor", a => esc(a.root)],
        ["waiting on / doing", a => `<span class="${a.state === "blocked on output" ? "bad" : a.state === "failed" ? "bad" : ""}">${esc(a.state)}</span>`, "", "state"],
        ["for", a => secs(a.seconds), "num"],
        ["rows in", a => num(a.rows_in), "num"],
        ["rows out", a => num(a.rows_out), "num"],
        ["await tree (calls now, outermost first)", a => `<code class="await">${esc(a.waiting_on || "")}</code>`, "", "waiting_on"],
      ], actors, a => `data-actor="${a.id}"`);
  },

  async barriers() {
    const bs = await api("barriers");
    const last = bs.slice(-300);
    const W = 900, H = 220, P = 36;
    const total = b => b.inject_ms + b.collect_ms + b.commit_ms;
    const maxY = Math.max(1, ...last.map(total));
    const x = i => P + (last.length < 2 ? 0 : i * (W - 2 * P) / (last.length - 1));
    const y = v => H - P + 10 - v / maxY * (H - 2 * P);
    const line = (f, color) => `<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${last.map((b, i) => x(i).toFixed(1) + "," + y(f(b)).toFixed(1)).join(" ")}"/>`;
    let svg = `<svg class="chart" id="barrier-chart" data-count="${last.length}" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">`;
    for (let k = 0; k <= 4; k++) {
      const v = maxY * k / 4;
      svg += `<line x1="${P}" x2="${W - P}" y1="${y(v)}" y2="${y(v)}" stroke="#eee"/><text x="2" y="${y(v) + 4}">${v.toFixed(v < 10 ? 1 : 0)}</text>`;
    }
    svg += line(total, "#1f6feb") + line(b => b.collect_ms, "#2da44e") + line(b => b.commit_ms, "#bf8700");
    if (last.length) svg += `<text x="${P}" y="${H - 4}">${esc(new Date(last[0].committed).toLocaleTimeString())}</text><text x="${W - P - 60}" y="${H - 4}">${esc(new Date(last[last.length - 1].committed).toLocaleTimeString())}</text>`;
    svg += `</svg>`;
    const sorted = last.map(total).sort((a, b) => a - b);
    const q = p => sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : 0;
    return `<h2>Barrier latency (ms), last ${last.length} epochs</h2>
      <p class="legend"><span><i style="background:#1f6feb"></i>total</span><span><i style="background:#2da44e"></i>collect</span><span><i style="background:#bf8700"></i>commit</span>
      p50 <b>${q(0.5).toFixed(1)}</b> ms · p99 <b>${q(0.99).toFixed(1)}</b> ms · max <b>${maxY.toFixed(1)}</b> ms</p>` + svg +
      `<h2>Last epochs</h2>` + table("barriers", [
        ["epoch", b => esc(b.epoch), "num"],
        ["committed", b => esc(new Date(b.committed).toLocaleTimeString())],
        ["inject ms", b => ms(b.inject_ms), "num"],
        ["collect ms", b => ms(b.collect_ms), "num"],
        ["commit ms", b => ms(b.commit_ms), "num"],
      ], last.slice(-15).reverse());
  },

  async storage(_, check) {
    const s = await api("storage" + (check ? "?check=1" : ""));
    let h = `<h2>LSM</h2><div class="cards">` +
      card("version", "version", esc(s.version_id)) +
      card("tables", "state tables", num(s.tables)) +
      card("write_buffer", "write buffer", bytes(s.write_buffer_bytes)) +
      card("pinned", "pinned versions", num(s.pinned_versions)) +
      card("deletion_queue", "GC queue (objects)", num(s.deletion_queue)) +
      card("compactions", "compactions running", num(s.compactions.length)) + `</div>`;
    h += `<h2>Levels</h2>` + table("levels", [
      ["level", l => "L" + l.level, "", "level"],
      ["SSTs", l => num(l.ssts), "num", "ssts"],
      ["inline", l => num(l.inline), "num", "inline"],
      ["bytes", l => bytes(l.bytes), "num", "bytes"],
      ["entries", l => num(l.entries), "num", "entries"],
    ], s.levels, l => `data-level="${l.level}" data-ssts="${l.ssts}"`);
    h += `<h2>Compaction jobs</h2>` + table("compactions", [
      ["job", c => esc(c.id), "num"], ["output level", c => "L" + c.output_level], ["inputs", c => num(c.inputs), "num"], ["running for", c => secs(c.seconds), "num"],
    ], s.compactions);
    h += `<h2>Storage check</h2><p><button id="run-check" onclick="show('storage', null, true)">Run storage check</button></p>`;
    if (check) {
      h += `<p id="check" data-violations="${(s.violations || []).length}">${esc(s.check)}</p>`;
      if ((s.violations || []).length) h += `<pre class="bad">${esc(s.violations.join("\n"))}</pre>`;
      else h += `<p class="ok">No violation of I1.</p>`;
    }
    return h;
  },

  async recoveries() {
    const rs = (await api("recoveries")).reverse();
    return `<h2>Recovery history</h2>` + table("recoveries", [
      ["started", r => esc(when(r.started))],
      ["database", r => esc(r.database || "(all)")],
      ["reason", r => esc(r.reason), "", "reason"],
      ["reset ms", r => ms(r.reset_ms), "num"],
      ["rebuild ms", r => ms(r.rebuild_ms), "num"],
      ["epoch", r => esc(r.epoch), "num"],
      ["error", r => `<span class="bad">${esc(r.error)}</span>`],
      ["abandoned actors", r => `<span class="bad">${esc(r.abandoned || "")}</span>`, "", "abandoned"],
    ], rs);
  },

  async sessions() {
    const ss = await api("sessions");
    return `<h2>Sessions</h2>` + table("sessions", [
      ["pid", p => esc(p.pid), "num", "pid"],
      ["user", p => esc(p.user)],
      ["database", p => esc(p.database)],
      ["application", p => esc(p.application)],
      ["client", p => esc(p.remote)],
      ["state", p => `<span class="${p.state === "active" ? "warn" : ""}">${esc(p.state)}</span>`, "", "state"],
      ["running for", p => p.state === "active" ? secs(p.seconds) : "", "num"],
      ["query", p => esc(p.query), "sql", "query"],
      ["", p => p.state === "active" ? `<button data-cancel="${p.pid}" onclick="cancelSession(${p.pid})">Cancel</button>` : ""],
    ], ss, p => `data-pid="${p.pid}" data-state="${esc(p.state)}"`);
  },

  async connectors() {
    const c = await api("connectors");
    return `<h2>Sources</h2>` + table("sources", [
      ["name", s => esc(s.name), "", "name"],
      ["rows", s => num(s.rows), "num", "rows"],
      ["bytes", s => bytes(s.bytes), "num"],
      ["malformed", s => num(s.malformed), "num"],
      ["lag", s => s.lag_messages >= 0 ? num(s.lag_messages) + " msgs" : s.lag_bytes >= 0 ? bytes(s.lag_bytes) : "", "num", "lag"],
      ["caught up", s => s.caught_up ? "yes" : "no"],
      ["status", s => `<span class="${s.status === "running" ? "ok" : "bad"}">${esc(s.status)}</span>`],
    ], c.sources, s => `data-name="${esc(s.name)}"`) +
      `<h2>Sinks</h2>` + table("sinks", [
        ["name", s => esc(s.name), "", "name"],
        ["connector", s => esc(s.connector)],
        ["status", s => `<span class="${s.status === "running" ? "ok" : "bad"}">${esc(s.status)}</span>`, "", "status"],
        ["pending rows", s => num(s.pending_rows), "num", "pending_rows"],
        ["pending epochs", s => num(s.pending_epochs), "num"],
        ["delivered rows", s => num(s.delivered_rows), "num", "delivered_rows"],
        ["lag", s => secs(s.lag_seconds), "num"],
        ["last error", s => `<span class="bad">${esc(s.last_error)}</span>`],
      ], c.sinks, s => `data-name="${esc(s.name)}"`);
  },
};

async function cancelSession(pid) {
  try {
    await api("sessions/cancel?pid=" + pid, {method: "POST", headers: {"X-Runnel-Request": "1"}});
    statusEl.textContent = `cancel sent to session ${pid}`;
  } catch (e) {
    statusEl.textContent = `cancel of session ${pid} failed: ${e.message}`;
  }
  show("sessions");
}

// show renders a page now and schedules its refresh.
async function show(page, arg, extra) {
  clearTimeout(timer);
  const fn = pages[page] || pages.overview;
  for (const a of document.querySelectorAll("#nav a")) {
    a.classList.toggle("active", a.getAttribute("href") === "#" + page || (page === "graph" && a.getAttribute("href") === "#relations"));
  }
  try {
    const html = await fn(arg, extra);
    main.innerHTML = html;
    main.dataset.page = page;
    main.dataset.loaded = "true";
    if (page === "graph") drawEdges();
    statusEl.textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    main.innerHTML = `<p class="bad" id="error">${esc(e.message)}</p>`;
    main.dataset.page = page;
    main.dataset.loaded = "error";
  }
  if (!extra) timer = setTimeout(() => show(page, arg), page === "relations" ? 10000 : 2000);
}

// drawEdges draws each exchange as an arrow from the fragment it reads to
// the fragment reading it.
function drawEdges() {
  const g = document.getElementById("graph");
  const svg = g && g.querySelector("svg.edges");
  if (!svg) return;
  const box = g.getBoundingClientRect();
  svg.setAttribute("width", box.width);
  svg.setAttribute("height", box.height);
  let lines = `<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#6b7280"/></marker></defs>`;
  for (const el of g.querySelectorAll(".frag")) {
    const to = el.getBoundingClientRect();
    const pre = el.querySelector("pre").textContent;
    for (const m of pre.matchAll(/from Fragment (\d+)/g)) {
      const from = document.getElementById("frag-" + m[1]);
      if (!from) continue;
      const f = from.getBoundingClientRect();
      lines += `<line x1="${f.left + f.width / 2 - box.left}" y1="${f.top - box.top}" x2="${to.left + to.width / 2 - box.left}" y2="${to.bottom - box.top}" stroke="#6b7280" stroke-width="1.5" marker-end="url(#arrow)"/>`;
    }
  }
  svg.innerHTML = lines;
}

function route() {
  const [page, arg] = (location.hash.slice(1) || "overview").split("/");
  show(page, arg);
}
window.addEventListener("hashchange", route);
route();
