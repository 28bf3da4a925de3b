import ArcusCRDT

/// One thing `arcus doctor` looked at: what, how it stands, and what to do about it.
public struct DoctorCheck: Sendable, Hashable {
    public enum Status: String, Sendable, Hashable, Comparable {
        /// Works.
        case ok
        /// Works less well than it could (discovery off, a weak setting); the agent runs.
        case warning
        /// A transport or part the configuration asks for cannot work.
        case failure
        /// Would fail, but nothing configured needs it (a transport not in --transports).
        case unused

        private var rank: Int { [.ok: 0, .unused: 1, .warning: 2, .failure: 3][self]! }
        public static func < (a: Status, b: Status) -> Bool { a.rank < b.rank }
    }

    /// The part of the agent: store, mesh, lan, ble, cloud.
    public var area: String
    public var name: String
    public var status: Status
    /// What was found, in a line.
    public var detail: String
    /// What to do, when there is something to do.
    public var fix: String?

    public init(area: String, name: String, status: Status, detail: String, fix: String? = nil) {
        self.area = area
        self.name = name
        self.status = status
        self.detail = detail
        self.fix = fix
    }

    /// The same finding for a transport the configuration does not run: a failure there is only news.
    func unless(configured: Bool) -> DoctorCheck {
        guard !configured, status == .failure else { return self }
        var check = self
        check.status = .unused
        return check
    }

    var json: Value {
        var object: [String: Value] = [
            "area": .string(area), "check": .string(name), "status": .string(status.rawValue), "detail": .string(detail),
        ]
        if let fix { object["fix"] = .string(fix) }
        return .object(object)
    }
}
