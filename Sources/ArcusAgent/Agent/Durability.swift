import ArcusStore

/// What an acknowledged write survives (`durability`, `--durability`; Docs/Agent.md,
/// "Durability: what an acknowledgement promises"). `full`, the default, is for devices whose
/// power can be pulled (aircraft cabins, farms): the write's commit is fsynced to the WAL before
/// the API answers, so it survives the process being killed and a power cut. `normal` survives
/// the process being killed, but a power cut may lose the last commits (since the last WAL
/// checkpoint), for one fsync less per write. Attachment blobs are fsynced either way.
public enum Durability: String, Sendable, CaseIterable {
    case full, normal

    /// The store's setting for it (`PRAGMA synchronous`).
    public var synchronous: Store.Options.Synchronous {
        switch self {
        case .full: .full
        case .normal: .normal
        }
    }

    /// Reads `text` given to `option` (`--durability`, or the file's `durability`).
    public static func parse(_ text: String, option: String = "--durability") throws(CommandError) -> Durability {
        guard let durability = Durability(rawValue: text.lowercased()) else {
            throw CommandError(
                "\(option) must be full (an acknowledged write survives a power cut) or normal (it survives the process being killed); got \(text.debugDescription)",
                exitStatus: 2
            )
        }
        return durability
    }
}
