import ArcusMesh
import Hummingbird
import NIOCore

/// The agent's status page, `GET /`: one self-contained HTML document (inline CSS, a small
/// inline script, no external resource, so that it works on a device with no internet) that
/// polls `GET /v1/status` every second and redraws: the mesh as an SVG graph, the links with
/// their quality, sync activity, the store, the subscriptions with each peer's sync progress, and
/// attachment fetches under way.
///
/// The page builds every element with the DOM API and sets text with `textContent`, never
/// `innerHTML`: peer names and queries come from other devices and are never read as markup.
/// Each peer's node in the graph carries `data-peer="<peer id>"` (tests count them).
///
/// The page itself holds no data, so it is served without the token, and it never holds the
/// token either: the link `arcus status --page` prints carries it in the fragment
/// (`/#token=…`), which the browser keeps to itself; the script moves it into this tab's
/// `sessionStorage` (which no other origin, nor another tab, can read), removes it from the
/// address bar and the history entry, and sends it as `Authorization: Bearer` with each poll.
/// Without it, the page says how to get the link. Its Content-Security-Policy lets it run only
/// its own script (a fresh nonce per answer), talk only to the agent, and sit in no frame.
enum StatusPage {
    static var response: Response {
        var generator = SystemRandomNumberGenerator()
        let nonce = Hex.encode((0..<16).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
        let policy = """
            default-src 'none'; script-src 'nonce-\(nonce)'; style-src 'unsafe-inline'; connect-src 'self'; img-src 'self'; \
            base-uri 'none'; form-action 'none'; frame-ancestors 'none'
            """
        return Response(
            status: .ok,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store", .contentSecurityPolicy: policy],
            body: ResponseBody(byteBuffer: ByteBuffer(string: html.replacingOccurrences(of: "<script>", with: "<script nonce=\"\(nonce)\">")))
        )
    }

    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Arcus agent</title>
        <style>
        :root { --lan: #2f6fdb; --bluetooth: #8a3ffc; --cloud: #e07b00; --loopback: #1e9e63;
                --ink: #1b2230; --muted: #687385; --rule: #e2e6ed; --paper: #f5f6f8; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--paper); }
        header { display: flex; flex-wrap: wrap; align-items: baseline; gap: 6px 20px; padding: 14px 24px; background: #fff; border-bottom: 1px solid var(--rule); }
        header h1 { margin: 0; font-size: 19px; }
        header .meta { color: var(--muted); }
        #state { margin-left: auto; font-weight: 600; }
        #state.live { color: var(--loopback); }
        #state.down { color: #c62828; }
        #token-help { margin: 16px 24px 0; padding: 12px 16px; background: #fff4e5; border: 1px solid #f0c36d; border-radius: 8px; }
        .mono { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
        main { display: grid; grid-template-columns: minmax(380px, 1.1fr) minmax(380px, 1fr); gap: 16px; padding: 16px 24px; align-items: start; }
        section { background: #fff; border: 1px solid var(--rule); border-radius: 8px; padding: 12px 16px 14px; min-width: 0; }
        section h2 { margin: 0 0 8px; font-size: 12px; font-weight: 600; letter-spacing: .07em; text-transform: uppercase; color: var(--muted); }
        .column { display: grid; gap: 16px; min-width: 0; }
        table { width: 100%; border-collapse: collapse; }
        th, td { padding: 4px 10px 4px 0; text-align: left; border-bottom: 1px solid var(--rule); white-space: nowrap; }
        th { font-size: 12px; font-weight: 600; color: var(--muted); }
        td.number, th.number { text-align: right; font-variant-numeric: tabular-nums; }
        tr:last-child td { border-bottom: 0; }
        .swatch { display: inline-block; width: 18px; height: 0; margin-right: 6px; vertical-align: middle; border-top: 3px solid; }
        .swatch.standby { border-top-style: dashed; }
        .standby { color: var(--muted); }
        .empty { color: var(--muted); font-style: italic; }
        .muted { color: var(--muted); white-space: pre; }
        .legend { display: flex; flex-wrap: wrap; gap: 4px 14px; font-size: 12px; color: var(--muted); }
        #mesh { width: 100%; height: auto; display: block; }
        #mesh text { font-size: 12px; fill: var(--ink); }
        #mesh text.id { font-size: 10px; fill: var(--muted); font-family: ui-monospace, Menlo, monospace; }
        .figures { display: grid; grid-template-columns: repeat(3, 1fr); gap: 10px; }
        .figure b { display: block; font-size: 17px; font-variant-numeric: tabular-nums; }
        .figure span { font-size: 12px; color: var(--muted); }
        #activity { width: 100%; height: 44px; display: block; margin-top: 8px; }
        progress { width: 120px; height: 10px; vertical-align: middle; margin-right: 8px; accent-color: var(--loopback); }
        td.progress { white-space: normal; font-variant-numeric: tabular-nums; }
        td.progress div { font-size: 12px; color: var(--muted); }
        @media (max-width: 820px) { main { grid-template-columns: 1fr; } }
        </style>
        </head>
        <body>
        <header>
          <h1 id="name">Arcus agent</h1>
          <span class="mono meta" id="peer"></span>
          <span class="meta" id="uptime"></span>
          <span id="state">connecting…</span>
        </header>
        <p id="token-help" hidden>This page shows the agent's data only with the agent's API token. Run
          <code>arcus status --page --agent URL</code> as the user who runs the agent (or with sudo) and open the link it prints:
          the token travels in the part after <code>#</code>, which the browser never sends anywhere, and this tab keeps it until it closes.</p>
        <main>
          <div class="column">
            <section>
              <h2>Mesh</h2>
              <svg id="mesh" viewBox="0 0 560 460" role="img" aria-label="the mesh: peers and the links between them"></svg>
              <div class="legend">
                <span><i class="swatch" style="color: var(--lan)"></i>lan</span>
                <span><i class="swatch" style="color: var(--bluetooth)"></i>bluetooth</span>
                <span><i class="swatch" style="color: var(--cloud)"></i>cloud</span>
                <span><i class="swatch" style="color: var(--loopback)"></i>loopback</span>
                <span><i class="swatch standby" style="color: var(--muted)"></i>standby</span>
              </div>
            </section>
            <section>
              <h2>Sync activity</h2>
              <div class="figures" id="sync"></div>
              <svg id="activity" viewBox="0 0 600 44" preserveAspectRatio="none" aria-label="sync bytes per second, last minute"></svg>
            </section>
          </div>
          <div class="column">
            <section>
              <h2>Links</h2>
              <table><thead><tr><th>between</th><th>transport</th><th>state</th><th class="number">RTT</th><th class="number">throughput</th></tr></thead>
              <tbody id="links"></tbody></table>
            </section>
            <section>
              <h2>Peers</h2>
              <table><thead><tr><th>name</th><th>peer</th><th class="number">hops</th><th>via</th></tr></thead>
              <tbody id="peers"></tbody></table>
            </section>
            <section>
              <h2>Store</h2>
              <div class="figures" id="store"></div>
              <table><tbody id="collections"></tbody></table>
            </section>
            <section>
              <h2>Subscriptions</h2>
              <table><tbody id="subscriptions"></tbody></table>
            </section>
            <section>
              <h2>Attachment fetches</h2>
              <table><tbody id="attachments"></tbody></table>
            </section>
          </div>
        </main>
        <script>
        "use strict";
        // CSS variables work in style attributes, not in SVG presentation attributes.
        const colours = { lan: "var(--lan)", bluetooth: "var(--bluetooth)", cloud: "var(--cloud)", loopback: "var(--loopback)" };
        const svgNS = "http://www.w3.org/2000/svg";
        // The token: from the link's fragment into this tab's sessionStorage, and out of the
        // address bar and the history entry at once.
        const tokenKey = "arcus-token";
        {
          const given = /(?:^#|&)token=([0-9a-fA-F]{64})(?:&|$)/.exec(location.hash);
          if (given) sessionStorage.setItem(tokenKey, given[1].toLowerCase());
          if (location.hash) history.replaceState(null, "", location.pathname + location.search);
        }
        const rates = [];          // sync bytes per second, sent and received, one per poll
        let previous = null;       // the last status, and when it came

        function element(tag, attributes, text, namespace) {
          const node = namespace ? document.createElementNS(namespace, tag) : document.createElement(tag);
          for (const [key, value] of Object.entries(attributes || {})) node.setAttribute(key, String(value));
          if (text !== undefined) node.textContent = text;
          return node;
        }
        const html = (tag, attributes, text) => element(tag, attributes, text);
        const svg = (tag, attributes, text) => element(tag, attributes, text, svgNS);
        const row = (...cells) => { const tr = html("tr"); tr.append(...cells); return tr; };
        const cell = (text, className) => html("td", className ? { class: className } : {}, text);
        const short = (id) => id.length > 12 ? id.slice(0, 10) + "…" : id;
        const bytes = (n) => {
          if (n == null) return "–";
          const units = ["B", "kB", "MB", "GB", "TB"];
          let i = 0;
          while (n >= 1000 && i < units.length - 1) { n /= 1000; i += 1; }
          return (i === 0 ? String(Math.round(n)) : n.toFixed(1)) + " " + units[i];
        };
        const duration = (seconds) => {
          const s = Math.floor(seconds), d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60);
          return d ? `${d}d ${h}h` : h ? `${h}h ${m}m` : m ? `${m}m ${s % 60}s` : `${s}s`;
        };
        const figure = (value, label) => { const div = html("div", { class: "figure" }); div.append(html("b", {}, value), html("span", {}, label)); return div; };
        const placeholder = (text, columns) => row(html("td", { class: "empty", colspan: columns }, text));
        const plural = (n, noun) => `${n.toLocaleString("en")} ${noun}${n === 1 ? "" : "s"}`;
        // "pump-1 (983ba99ce722a5db)" → "pump-1": the id is in the peers table.
        const peerName = (label) => label.replace(/ \([0-9a-f]+\)$/, "");

        function drawMesh(status) {
          const graph = status.graph, peers = graph.peers;
          const width = 560, height = 460, cx = width / 2, cy = height / 2 - 8, radius = 165;
          const at = {};
          peers.forEach((peer, index) => {
            const angle = -Math.PI / 2 + 2 * Math.PI * index / peers.length;
            at[peer.id] = peers.length === 1 ? { x: cx, y: cy, angle } : { x: cx + radius * Math.cos(angle), y: cy + radius * Math.sin(angle), angle };
          });
          const edges = [], pairs = new Map();
          for (const link of graph.links) {
            const key = link.a + " " + link.b;
            if (!pairs.has(key)) pairs.set(key, []);
            pairs.get(key).push(link);
          }
          // Several links between two peers (one per transport) are drawn side by side.
          for (const links of pairs.values()) links.forEach((link, index) => {
            const a = at[link.a], b = at[link.b];
            if (!a || !b) return;
            const dx = b.x - a.x, dy = b.y - a.y, length = Math.hypot(dx, dy) || 1;
            const offset = (index - (links.length - 1) / 2) * 7, ox = -dy / length * offset, oy = dx / length * offset;
            const line = svg("line", {
              x1: (a.x + ox).toFixed(1), y1: (a.y + oy).toFixed(1), x2: (b.x + ox).toFixed(1), y2: (b.y + oy).toFixed(1),
              style: `stroke: ${colours[link.transport] || "var(--muted)"}`, "stroke-width": link.active ? 3.5 : 2,
              "stroke-dasharray": link.active ? "none" : "7 5", "data-transport": link.transport, class: link.active ? "active" : "standby",
            });
            line.append(svg("title", {}, `${link.transport}, ${link.active ? "active" : "standby"}` + (link.rtt_ms == null ? "" : `, ${link.rtt_ms} ms`)));
            edges.push(line);
          });
          const nodes = peers.map((peer) => {
            const p = at[peer.id];
            // Labels sit outside the circle, away from the edges.
            const below = peers.length === 1 || Math.sin(p.angle) > -0.3;
            const node = svg("g", { "data-peer": peer.id, class: peer.self ? "peer self" : "peer", transform: `translate(${p.x.toFixed(1)} ${p.y.toFixed(1)})` });
            node.append(
              svg("circle", { r: peer.self ? 19 : 15, fill: peer.self ? "#1b2230" : "#fff", stroke: "#1b2230", "stroke-width": 2 }),
              svg("text", { y: below ? 36 : -38, "text-anchor": "middle", "font-weight": peer.self ? 700 : 400 }, (peer.name || short(peer.id)) + (peer.self ? " (this agent)" : "")),
              svg("text", { y: below ? 50 : -24, "text-anchor": "middle", class: "id" }, short(peer.id)),
              svg("title", {}, peer.id),
            );
            return node;
          });
          document.getElementById("mesh").replaceChildren(...edges, ...nodes);
        }

        function drawTables(status) {
          const names = {};
          for (const peer of status.graph.peers) names[peer.id] = peer.name || short(peer.id);
          const links = status.graph.links.map((link) => {
            const kind = cell(link.transport);
            kind.prepend(html("i", { class: "swatch" + (link.active ? "" : " standby"), style: `color: ${colours[link.transport] || "var(--muted)"}` }));
            return row(cell(`${names[link.a] || short(link.a)} – ${names[link.b] || short(link.b)}`), kind,
              cell(link.active ? "active" : "standby", link.active ? "" : "standby"),
              cell(link.rtt_ms == null ? "–" : `${link.rtt_ms} ms`, "number"),
              cell(link.throughput == null ? "–" : bytes(link.throughput) + "/s", "number"));
          });
          document.getElementById("links").replaceChildren(...(links.length ? links : [placeholder("no links yet", 5)]));
          document.getElementById("peers").replaceChildren(...status.graph.peers.map((peer) => row(
            cell(names[peer.id] + (peer.self ? " (this agent)" : "")), cell(short(peer.id), "mono"),
            cell(peer.self ? "0" : peer.hops == null ? "–" : String(peer.hops), "number"),
            cell(peer.self || peer.next_hop == null || peer.next_hop === peer.id ? "" : names[peer.next_hop] || short(peer.next_hop)))));
          const subscriptions = [];
          for (const s of status.subscriptions) {
            const query = cell(s.query === "" ? "the whole store" : s.query, "mono");
            query.prepend(html("span", { class: "muted" }, `#${s.id}  `));
            const peers = s.sync || [];
            subscriptions.push(row(query, cell(!peers.length ? "no peer" : s.caught_up ? "caught up" : "syncing", s.caught_up ? "" : "standby")));
            for (const p of peers) {
              // What arrived since this agent asked, against what the peer says is left.
              const done = html("td", { class: "progress" });
              const bar = html("progress", p.fraction == null ? { max: 1 } : { max: 1, value: p.fraction });
              const left = p.caught_up ? "caught up" : p.documents_to_go == null ? "waiting for the peer's count"
                : `about ${plural(p.documents_to_go, "document")}, ${bytes(p.bytes_to_go)} to go`;
              done.append(bar, html("div", {}, `${plural(p.documents_received, "document")}, ${bytes(p.bytes_received)} · ${left}`));
              const tr = row(cell(`from ${peerName(p.label)}`, "muted"), done);
              tr.setAttribute("data-sync", `${s.id} ${p.peer}`);
              subscriptions.push(tr);
            }
          }
          document.getElementById("subscriptions").replaceChildren(...(subscriptions.length ? subscriptions : [placeholder("none", 2)]));
          const fetches = (status.attachments || []).map((f) => {
            const done = html("td", { class: "progress" });
            done.append(html("progress", f.total_bytes ? { max: f.total_bytes, value: f.bytes_fetched } : { max: 1 }),
              html("div", {}, `${bytes(f.bytes_fetched)} of ${f.total_bytes == null ? "?" : bytes(f.total_bytes)}`));
            const tr = row(cell(short(f.hash), "mono"), cell(f.state + (f.source ? ` from ${peerName(f.source)}` : "")), done);
            tr.setAttribute("data-attachment", f.hash);
            return tr;
          });
          document.getElementById("attachments").replaceChildren(...(fetches.length ? fetches : [placeholder("none under way", 3)]));
          const store = status.store;
          document.getElementById("store").replaceChildren(
            figure(store.documents == null ? "–" : store.documents.toLocaleString("en"), "documents"), figure(bytes(store.bytes), "database files"),
            figure(String((store.collections || []).length), "collections"));
          const collections = (store.collections || []).map((c) => row(cell(c.name), cell(c.documents.toLocaleString("en"), "number")));
          document.getElementById("collections").replaceChildren(...(store.error ? [placeholder(store.error, 2)] : collections));
        }

        function drawSync(status, now) {
          const sync = status.sync;
          if (previous) {
            const seconds = Math.max((now - previous.time) / 1000, 0.001);
            const moved = (sync.bytes_sent + sync.bytes_received) - (previous.status.sync.bytes_sent + previous.status.sync.bytes_received);
            rates.push(Math.max(moved, 0) / seconds);
            if (rates.length > 60) rates.shift();
          }
          document.getElementById("sync").replaceChildren(
            figure(String(sync.sessions ?? "–"), "sessions"),
            figure(sync.lag_seconds == null ? "–" : sync.lag_seconds.toFixed(1) + " s", "lag"),
            figure(rates.length ? bytes(rates[rates.length - 1]) + "/s" : "–", "now"),
            figure(bytes(sync.bytes_sent), `sent, ${sync.frames_sent ?? 0} frames`),
            figure(bytes(sync.bytes_received), `received, ${sync.frames_received ?? 0} frames`),
            figure(String(status.subscriptions.length), "subscriptions"));
          const peak = Math.max(1, ...rates);
          const points = rates.map((rate, i) => `${(i * 10).toFixed(0)},${(42 - rate / peak * 38).toFixed(1)}`).join(" ");
          document.getElementById("activity").replaceChildren(
            svg("line", { x1: 0, y1: 42, x2: 600, y2: 42, style: "stroke: var(--rule)" }),
            svg("polyline", { points, fill: "none", style: "stroke: var(--lan)", "stroke-width": 2 }));
        }

        function draw(status) {
          const now = Date.now();
          document.title = `${status.name} · Arcus`;
          document.getElementById("name").textContent = status.name;
          document.getElementById("peer").textContent = status.peer;
          document.getElementById("uptime").textContent = `up ${duration(status.uptime_seconds)} · ${status.transports.join(", ")}`;
          drawMesh(status);
          drawTables(status);
          drawSync(status, now);
          previous = { status, time: now };
        }

        function showState(live, text) {
          const state = document.getElementById("state");
          state.className = live ? "live" : "down";
          state.textContent = text;
        }

        function needToken(text) {
          sessionStorage.removeItem(tokenKey);
          showState(false, text);
          document.getElementById("token-help").hidden = false;
        }

        async function poll() {
          const token = sessionStorage.getItem(tokenKey);
          if (!token) return needToken("no token: open the link arcus status --page prints");
          try {
            const response = await fetch("/v1/status", { cache: "no-store", headers: { Authorization: "Bearer " + token } });
            if (response.status === 401) return needToken("the agent refused the token: open the link arcus status --page prints");
            if (!response.ok) throw new Error(`the agent answered ${response.status}`);
            draw(await response.json());
            showState(true, "● live");
          } catch (error) {
            showState(false, `agent not answering (${error.message}); retrying`);
          }
          setTimeout(poll, 1000);
        }
        poll();
        </script>
        </body>
        </html>
        """#
}
