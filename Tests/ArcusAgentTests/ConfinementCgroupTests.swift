@testable import ArcusAgent
@testable import ArcusBench
import Foundation
import Testing

/// `arcus bench lan --confine-follower`'s cgroup, where none can be made: the error says why and
/// what to do, and nothing is left behind. (Making a real one needs root; the bench does that.)
struct ConfinementCgroupTests {
    private func scratch() throws -> URL {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-cgroup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        return directory
    }

    @Test("without a cgroup file system, the error says so and how to go on")
    func noCgroups() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        do {
            _ = try ConfinementCgroup(name: "follower", limits: .init(), root: root.path)
            Issue.record("a cgroup was made in an empty directory")
        } catch let error as BenchError {
            #expect(error.description.contains("no cgroups to confine the follower in"), "\(error)")
            #expect(error.description.contains("run without --confine-follower"), "\(error)")
        }
    }

    @Test("cgroup v2 without the memory controller is refused, naming it")
    func missingController() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        try Data("cpu io pids\n".utf8).write(to: root.appendingPathComponent("cgroup.controllers"))
        #expect {
            _ = try ConfinementCgroup(name: "follower", limits: .init(), root: root.path)
        } throws: { error in
            (error as? BenchError)?.description.contains("no memory controller") == true
        }
        #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("follower").path))
    }

    @Test("a cgroup v1 whose limits cannot be written is removed again, and the error names the file")
    func unwritableLimits() throws {
        let root = try scratch()
        defer { try? FileManager.default.removeItem(at: root) }
        for (controller, file) in [("cpu", "cpu.cfs_quota_us"), ("memory", "memory.limit_in_bytes")] {
            try FileManager.default.createDirectory(at: root.appendingPathComponent(controller), withIntermediateDirectories: true)
            try Data("-1\n".utf8).write(to: root.appendingPathComponent(controller).appendingPathComponent(file))
        }
        // A plain directory has no control files to write the limits to, as a kernel's cgroup would.
        #expect {
            _ = try ConfinementCgroup(name: "follower", limits: .init(), root: root.path)
        } throws: { error in
            (error as? BenchError)?.description.contains("cpu.cfs_period_us") == true
        }
        for controller in ["cpu", "memory"] {
            #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent(controller).appendingPathComponent("follower").path))
        }
    }
}
