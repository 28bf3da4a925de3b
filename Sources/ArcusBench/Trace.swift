import ArcusAgent
import ArcusCRDT
import Foundation

/// A workload trace (shared/bench/TRACE.md): a header, then one operation per line.
public struct Trace: Sendable {
    public struct Header: Sendable {
        public var name: String
        public var seed: Int64
        public var replicas: Int
        public var collections: [String]

        public init(name: String, seed: Int64, replicas: Int, collections: [String]) {
            self.name = name
            self.seed = seed
            self.replicas = replicas
            self.collections = collections
        }
    }

    public enum Operation: Sendable {
        case upsert(replica: Int, key: DocumentKey, fields: [String: Value])
        case set(replica: Int, key: DocumentKey, path: FieldPath, value: Value)
        case increment(replica: Int, key: DocumentKey, path: FieldPath, by: Number)
        case unset(replica: Int, key: DocumentKey, path: FieldPath)
        case remove(replica: Int, key: DocumentKey)
        case sync(from: Int, to: Int)
    }

    public var header: Header
    public var operations: [Operation]

    public init(header: Header, operations: [Operation]) {
        self.header = header
        self.operations = operations
    }

    public struct FormatError: Error, CustomStringConvertible {
        public var line: Int
        public var message: String
        public var description: String { "trace line \(line): \(message)" }
    }

    /// Why a trace file could not be opened.
    public struct ReadError: Error, CustomStringConvertible {
        public var path: String
        public var description: String {
            FileManager.default.fileExists(atPath: path)
                ? "cannot read \(path): check its permissions"
                : "no trace at \(path): generate one with `python3 shared/bench/gen_trace.py --profile fleet --seed 1 > fleet.jsonl`"
        }
    }

    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else { throw ReadError(path: path) }
        try self.init(data: data)
    }

    public init(data: Data) throws {
        var lines = data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true).makeIterator()
        guard let first = lines.next() else { throw FormatError(line: 1, message: "empty trace") }
        let head = try Self.object(first, line: 1)
        guard case .int(let replicas)? = head["replicas"], replicas > 0, replicas <= 1024 else {
            throw FormatError(line: 1, message: "header needs \"replicas\" between 1 and 1024")
        }
        let collections: [String]
        if case .array(let items)? = head["collections"] {
            collections = items.compactMap(\.stringValue)
        } else {
            collections = []
        }
        var seed: Int64 = 0
        if case .int(let s)? = head["seed"] { seed = s }
        header = Header(name: head["trace"]?.stringValue ?? "trace", seed: seed, replicas: Int(replicas), collections: collections)
        operations = []
        var number = 1
        while let line = lines.next() {
            number += 1
            operations.append(try Self.operation(try Self.object(line, line: number), line: number, replicas: Int(replicas)))
        }
    }

    private static func object(_ bytes: Data.SubSequence, line: Int) throws -> [String: Value] {
        do {
            guard case .object(let o) = try Value(jsonBytes: bytes) else {
                throw FormatError(line: line, message: "expected a JSON object")
            }
            return o
        } catch let error as JSONError {
            throw FormatError(line: line, message: error.description)
        }
    }

    private static func operation(_ o: [String: Value], line: Int, replicas: Int) throws -> Operation {
        func fail(_ message: String) -> FormatError { FormatError(line: line, message: message) }
        func replica(_ name: String) throws -> Int {
            guard case .int(let r)? = o[name], r >= 0, r < replicas else { throw fail("\"\(name)\" must be a replica index below \(replicas)") }
            return Int(r)
        }
        func key() throws -> DocumentKey {
            guard let c = o["c"]?.stringValue, let id = o["id"] else { throw fail("needs \"c\" and \"id\"") }
            return DocumentKey(collection: c, id: id)
        }
        func path() throws -> FieldPath {
            guard case .array(let items)? = o["path"], !items.isEmpty else { throw fail("needs a non-empty \"path\"") }
            let names = items.compactMap(\.stringValue)
            guard names.count == items.count else { throw fail("\"path\" must hold field names") }
            return FieldPath(names)
        }
        switch o["op"]?.stringValue {
        case "upsert":
            guard case .object(let fields)? = o["v"] else { throw fail("upsert needs an object \"v\"") }
            return .upsert(replica: try replica("r"), key: try key(), fields: fields)
        case "set":
            guard let v = o["v"] else { throw fail("set needs \"v\"") }
            return .set(replica: try replica("r"), key: try key(), path: try path(), value: v)
        case "inc":
            guard let by = o["by"].flatMap(Number.init) else { throw fail("inc needs a number \"by\"") }
            return .increment(replica: try replica("r"), key: try key(), path: try path(), by: by)
        case "unset":
            return .unset(replica: try replica("r"), key: try key(), path: try path())
        case "remove":
            return .remove(replica: try replica("r"), key: try key())
        case "sync":
            return .sync(from: try replica("from"), to: try replica("to"))
        default:
            throw fail("unknown op \(o["op"]?.jsonString ?? "(none)")")
        }
    }
}

extension Trace.Operation {
    /// A write: the replica that makes it, the document, and the CRDT delta-mutator it applies
    /// with a fresh stamp. Nil for a sync.
    var write: (replica: Int, key: DocumentKey, mutation: (inout DocumentState, Stamp) -> DocumentState?)? {
        switch self {
        case .upsert(let r, let key, let fields): return (r, key, { state, stamp in state.upsert(fields, at: stamp) })
        case .set(let r, let key, let path, let value): return (r, key, { state, stamp in state.set(path, to: value, at: stamp) })
        case .increment(let r, let key, let path, let amount): return (r, key, { state, stamp in state.increment(path, by: amount, at: stamp) })
        case .unset(let r, let key, let path): return (r, key, { state, stamp in state.unset(path, at: stamp) })
        case .remove(let r, let key): return (r, key, { state, stamp in state.remove(at: stamp) })
        case .sync: return nil
        }
    }
}
