import Testing
import ArcusLAN

@Suite struct AvahiErrorTests {
    @Test func aMissingDaemonSaysWhatToStartAndTheWayAround() {
        let warning = AvahiError.noDaemon.warning
        #expect(warning.contains("avahi-daemon is not running"))
        #expect(warning.contains("--peer HOST:PORT"))
    }

    @Test func otherErrorsCarryAvahisOwnWords() {
        #expect(AvahiError(code: -8).warning.contains("Local name collision"))
        #expect(AvahiError.disconnected.warning.contains("reconnecting"))
    }
}
