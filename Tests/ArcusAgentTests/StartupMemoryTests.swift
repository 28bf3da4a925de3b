import Foundation
import Testing
@testable import ArcusAgent

/// The agent hands the pages start-up touched back to the kernel (`StartupMemory`).
struct StartupMemoryTests {
    @Test("only private, read-only, file-backed mappings are advised: never data, the heap, stacks or shared mappings")
    func choosesReadOnlyFileMappings() {
        let maps = """
            55dde3a01000-55dde534d000 r-xp 00000000 fe:00 5374224                    /usr/bin/arcus
            55dde534d000-55dde540e000 r--p 0194b000 fe:00 5374224                    /usr/bin/arcus
            55dde540e000-55dde55c6000 rw-p 01a0c000 fe:00 5374224                    /usr/bin/arcus
            55dde6000000-55dde6100000 rw-p 00000000 00:00 0                          [heap]
            7f0000000000-7f0000010000 r--s 00000000 fe:00 99                         /data/store.sqlite-shm
            7f0000010000-7f0000020000 r-xp 00000000 fe:00 98                         /usr/lib/libswiftCore.so
            7f0000020000-7f0000030000 r--p 00000000 fe:00 97                         /tmp/gone (deleted)
            7ffc00000000-7ffc00021000 rw-p 00000000 00:00 0                          [stack]
            7ffc00030000-7ffc00032000 r-xp 00000000 00:00 0                          [vdso]
            """
        let chosen = StartupMemory.readOnlyFileMappings(maps)
        #expect(chosen.map(\.path) == ["/usr/bin/arcus", "/usr/bin/arcus", "/usr/lib/libswiftCore.so"])
        #expect(chosen.first?.start == 0x55dde3a01000 && chosen.first?.end == 0x55dde534d000)
    }

    @Test("releasing drops resident pages of this process's read-only file mappings, and the code it drops still runs")
    func releaseLowersResidentFilePages() throws {
        // Every mapping is read, not just the first page of /proc/self/maps.
        let maps = try #require(StartupMemory.procFile("/proc/self/maps"))
        #expect(maps.utf8.count > 4096 && maps.hasSuffix("\n"), "\(maps.utf8.count) bytes")
        let mapped = StartupMemory.readOnlyFileMappings(maps)
        #expect(mapped.contains { $0.path.hasSuffix("libswiftCore.so") }, "\(mapped.map(\.path))")
        let before = try Self.residentReadOnlyFileKB()
        guard case .success(let advised) = StartupMemory.release() else {
            Issue.record("release failed: \(StartupMemory.release())")
            return
        }
        #expect(advised > 1 << 20)
        let after = try Self.residentReadOnlyFileKB()
        #expect(after < before, "resident read-only file pages: \(before) kB before, \(after) kB after")
        // The pages come back as they are needed: parsing again runs code that was paged out.
        #expect(StartupMemory.readOnlyFileMappings("1000-2000 r-xp 0 0:0 1 /bin/x").count == 1)
    }

    /// Resident kB of the mappings `release` advises, from /proc/self/smaps.
    static func residentReadOnlyFileKB() throws -> Int {
        let smaps = try #require(StartupMemory.procFile("/proc/self/smaps"))
        var total = 0, counting = false
        for line in smaps.split(separator: "\n") {
            let tokens = line.split(separator: " ")
            if tokens.count >= 5, tokens[0].contains("-"), tokens[1].count == 4 {
                counting = !StartupMemory.readOnlyFileMappings(String(line)).isEmpty
            } else if counting, line.hasPrefix("Rss:") {
                total += Int(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
            }
        }
        return total
    }
}
