import Arcus
import Foundation

// A sensor logger: writes its own temperature readings into `readings` and prints every reading
// its peers write, as they arrive over the mesh. Run two (or more) with the same secret:
//
//   arcus mesh secret mesh.secret
//   sensor-logger --data a --name a --listen 127.0.0.1:7001 --secret mesh.secret
//   sensor-logger --data b --name b --listen 127.0.0.1:7002 --peer 127.0.0.1:7001 --secret mesh.secret
//
// With --expect N it exits once it has seen N readings from peers (0 on success, 1 on timeout).

struct Options {
    var data = "sensor-data"
    var name = "sensor"
    var listen = "127.0.0.1:0"
    var peers: [String] = []
    var secret: String?
    var readings = 3
    var expect: Int?
    var timeout = 60.0

    init(_ arguments: [String]) throws {
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let value = rest.popFirst() else { throw UsageError("\(flag) needs a value") }
            return value
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--data": data = try value(flag)
            case "--name": name = try value(flag)
            case "--listen": listen = try value(flag)
            case "--peer": peers.append(try value(flag))
            case "--secret": secret = try value(flag)
            case "--readings": readings = Int(try value(flag)) ?? readings
            case "--expect": expect = Int(try value(flag))
            case "--timeout": timeout = Double(try value(flag)) ?? timeout
            default: throw UsageError("unknown option \(flag)")
            }
        }
        guard secret != nil else { throw UsageError("give the mesh's secret file: --secret FILE (make one with: arcus mesh secret FILE)") }
    }
}

struct UsageError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func run() async throws -> Int32 {
    let options = try Options(Array(CommandLine.arguments.dropFirst()))
    var configuration = EmbeddedAgent.Configuration(dataDirectory: options.data, name: options.name, transports: ["lan"])
    configuration.listen = options.listen
    configuration.peers = options.peers
    configuration.mdns = false
    configuration.meshSecretFile = options.secret
    // Ask peers for every reading but our own.
    configuration.subscriptions = ["SELECT * FROM readings"]
    let agent = try await EmbeddedAgent.start(configuration)
    print("\(options.name): peer \(agent.peerID), listening on \(agent.lanAddress ?? "-")")

    for index in 0..<options.readings {
        let reading: Value = [
            "_id": .string("\(options.name)-\(index)"), "sensor": .string(options.name), "peer": .string(agent.peerID.description),
            "celsius": .double(20 + Double(index) / 10), "at": .string(ISO8601DateFormatter().string(from: Date())),
        ]
        try await agent.execute("INSERT INTO readings DOCUMENTS (:reading) ON ID CONFLICT DO UPDATE", arguments: ["reading": reading])
    }

    let watching = try agent.observe("SELECT * FROM readings WHERE sensor != :me ORDER BY _id", arguments: ["me": .string(options.name)])
    // The peers heard from, by the peer id each reading carries.
    let seen = Task { () -> Set<String>? in
        var peers: Set<String> = []
        for await event in watching {
            for index in event.diff.insertions { print("\(options.name) saw \(event.items[index].jsonString)") }
            for item in event.items { if case .string(let peer)? = item[path: "peer"] { peers.insert(peer) } }
            if let expected = options.expect, event.items.count >= expected { return peers }
        }
        return nil
    }
    let timer = Task {
        try? await Task.sleep(for: .milliseconds(Int64(options.timeout * 1000)))
        seen.cancel()
    }
    // Without --expect it logs until the timeout.
    let heard = await seen.value
    timer.cancel()
    let complete = heard != nil || options.expect == nil
    // Before stopping, the peers heard from get this logger's readings too: it may have seen
    // theirs before they pulled its own.
    if let heard, !heard.isEmpty {
        let mine = (0..<options.readings).map { DocumentKey("readings", "\(options.name)-\($0)") }
        for unsynced in try await agent.waitUntil(heard.sorted(), hold: mine, timeout: .seconds(10)) {
            print("\(options.name): \(unsynced.peer) does not hold its readings yet: \(unsynced.reason)")
        }
    }
    await agent.stop()
    if !complete { print("\(options.name): timed out before seeing \(options.expect ?? 0) readings from peers") }
    return complete ? 0 : 1
}

do {
    exit(try await run())
} catch {
    FileHandle.standardError.write(Data("sensor-logger: \(error)\n".utf8))
    exit(2)
}
