import ArcusTestSupport
import Foundation
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// The test helper that keeps a port busy closes its socket once: a second close(2) of the
/// number closed another test's socket in the same process (CI, 2026-12-01).
@Suite("HeldPort")
struct HeldPortTests {
    @Test("releasing a held port twice leaves a descriptor opened since under the same number open")
    func releaseTwice() throws {
        // open(2) hands out the lowest free number, so reopening right after the release takes
        // the number back, unless a test on another thread took it first; then try again.
        for _ in 1...5 {
            let held = try HeldPort(try freePort())
            let number = try #require(held.heldDescriptor)
            held.release()
            var opened: [Int32] = []
            while opened.count < 64 {
                let descriptor = open("/dev/null", O_RDONLY | O_CLOEXEC)
                guard descriptor >= 0 else { break }
                opened.append(descriptor)
                if descriptor >= number { break }
            }
            guard opened.last == number else {
                opened.forEach { close($0) }
                continue
            }
            held.release()
            let stillOpen = fcntl(number, F_GETFD) != -1
            #expect(stillOpen, "the second release closed descriptor \(number), which the test had opened since")
            opened.filter { $0 != number || stillOpen }.forEach { close($0) }
            return
        }
        Issue.record("another thread took the freed descriptor number first, five times over")
    }
}
