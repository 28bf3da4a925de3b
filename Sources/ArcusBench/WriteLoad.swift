import ArcusAgent
import ArcusCRDT
import ArcusStore
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// `arcus bench write-load --data DIR`: writes documents `{"_id": "<n>", …}` to collection
/// `load`, one transaction each, and prints each `_id` on its own line only after its commit
/// returned — so whatever it printed must survive a crash at any moment.
public enum WriteLoad {
    public static func run(data directory: String, count: Int?, start: Int) throws {
        let store = try Store(directory: URL(fileURLWithPath: directory))
        var n = start
        while count.map({ n < start + $0 }) ?? true {
            let id = String(n)
            try store.write { tx in
                try tx.upsert(["_id": .string(id), "n": .int(Int64(n)), "status": "written", "payload": .string(String(repeating: "x", count: 64))], into: "load")
            }
            // Straight to the file descriptor: nothing sits in a buffer when the process dies.
            let line = id + "\n"
            line.withCString { _ = write(STDOUT_FILENO, $0, strlen($0)) }
            n += 1
        }
    }
}
