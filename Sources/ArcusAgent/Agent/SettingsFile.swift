#if canImport(Glibc)
import Glibc
#endif
import ArcusCRDT
import ArcusStore
import Foundation

/// `DIR/settings.json`: what `ALTER SYSTEM SET` changed, as `{"log_level": "debug", …}`, read
/// when the agent starts and laid over its configuration (as PostgreSQL's postgresql.auto.conf
/// over postgresql.conf). Replaced whole on each change — a new file fsynced, renamed over the
/// old, its directory fsynced — so that a crash or a power cut leaves the old settings or the
/// new, never half of them. Only the agent's user may read it (mode 0600).
struct SettingsFile: Sendable {
    static let name = "settings.json"
    /// Far more than every setting takes: a larger file is not one this agent wrote.
    static let maximumBytes = 64 << 10

    let path: String

    init(dataDirectory: String) {
        path = (dataDirectory as NSString).appendingPathComponent(Self.name)
    }

    /// The overrides in the file (none when there is no file). A file that is not a JSON object
    /// of known settings with values they take is an error that names the file and what to do.
    func read() throws(CommandError) -> [RuntimeSetting: Value] {
        guard FileManager.default.fileExists(atPath: path) else { return [:] }
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: Self.maximumBytes + 1) ?? Data()
        } catch {
            throw CommandError("cannot read the settings ALTER SYSTEM made, in \(path): \(error.localizedDescription)")
        }
        let fix = "fix or remove it (removing it resets every setting to the configuration's)"
        guard data.count <= Self.maximumBytes else { throw CommandError("\(path) is larger than \(Self.maximumBytes) bytes: \(fix)") }
        guard case .object(let object)? = try? Value(json: String(decoding: data, as: UTF8.self)) else {
            throw CommandError("\(path) is not a JSON object of settings: \(fix)")
        }
        var overrides: [RuntimeSetting: Value] = [:]
        for (name, value) in object {
            do throws(StoreError) {
                let setting = try RuntimeSetting.named(name)
                overrides[setting] = try setting.check(value)
            } catch {
                throw CommandError("\(path): \(error.description); \(fix)")
            }
        }
        return overrides
    }

    /// Replaces the file with `overrides` (removes it when there are none).
    func write(_ overrides: [RuntimeSetting: Value]) throws(StoreError) {
        let directory = (path as NSString).deletingLastPathComponent
        if overrides.isEmpty {
            if unlink(path) != 0 && errno != ENOENT { throw failure("removing", path) }
        } else {
            let text = Value.object(Dictionary(uniqueKeysWithValues: overrides.map { ($0.key.rawValue, $0.value) })).jsonString + "\n"
            let temporary = path + ".\(getpid()).\(UInt32.random(in: 0...UInt32.max)).new"
            try writeSynced(Array(text.utf8), to: temporary)
            guard rename(temporary, path) == 0 else {
                let error = failure("renaming \(temporary) to", path)
                unlink(temporary)
                throw error
            }
        }
        try syncDirectory(directory)
    }

    private func writeSynced(_ bytes: [UInt8], to path: String) throws(StoreError) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw failure("creating", path) }
        defer { close(descriptor) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else {
                unlink(path)
                throw failure("writing", path)
            }
            written += count
        }
        guard fsync(descriptor) == 0 else {
            unlink(path)
            throw failure("syncing", path)
        }
    }

    private func syncDirectory(_ directory: String) throws(StoreError) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw failure("opening", directory) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw failure("syncing", directory) }
    }

    private func failure(_ doing: String, _ path: String) -> StoreError {
        StoreError.invalidQuery("could not save the setting: \(doing) \(path) failed: \(String(cString: strerror(errno))); nothing was changed")
    }
}
