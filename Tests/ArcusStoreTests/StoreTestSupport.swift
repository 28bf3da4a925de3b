import ArcusCRDT
import Foundation
@testable import ArcusStore

/// A store in a fresh temporary data directory, removed when the test ends.
final class TemporaryStore {
    let directory: URL
    let store: Store

    init(options: Store.Options = Store.Options()) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-test-\(UUID().uuidString)")
        store = try Store(directory: directory, options: options)
    }

    deinit { try? FileManager.default.removeItem(at: directory) }
}

extension QueryResult {
    var ids: [String] { mutatedDocumentIDs.compactMap(\.stringValue) }
}
