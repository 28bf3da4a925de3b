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
            "_id": .string("\(options.name)-\(index)"), "sensor": .string(options.name),
            "celsius": .double(20 + Double(index) / 10), "at": .string(ISO8601DateFormatter().string(from: Date())),
        ]
        try await agent.execute("INSERT INTO readings DOCUMENTS (:reading) ON ID CONFLICT DO UPDATE", arguments: ["reading": reading])
    }

    let watching = try agent.observe("SELECT * FROM readings WHERE sensor != :me ORDER BY _id", arguments: ["me": .string(options.name)])
    let seen = Task {
        var count = 0
        for await event in watching {
            for index in event.diff.insertions { print("\(options.name) saw \(event.items[index].jsonString)") }
            count = event.items.count
            if let expected = options.expect, count >= expected { return true }
        }
        return false
    }
    let timer = Task {
        try? await Task.sleep(for: .milliseconds(Int64(options.timeout * 1000)))
        seen.cancel()
    }
    // Without --expect it logs until the timeout.
    let complete = await seen.value || options.expect == nil
    timer.cancel()
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
