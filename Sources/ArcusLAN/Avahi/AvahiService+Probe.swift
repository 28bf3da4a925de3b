import CAvahi

extension AvahiService {
    /// Asks avahi-daemon for its version, once, without waiting for it: the daemon's version
    /// string, or the error that says why it does not answer (`AvahiError.noDaemon` when it is not
    /// running or the system bus is not). For `arcus doctor`; an agent uses `start(advertising:)`,
    /// which waits for a missing daemon instead.
    public static func probeDaemon() -> Result<String, AvahiError> {
        guard let poll = avahi_simple_poll_new() else { return .failure(AvahiError(code: Int32(AVAHI_ERR_NO_MEMORY))) }
        defer { avahi_simple_poll_free(poll) }
        var error: Int32 = 0
        // No NO_FAIL flag: with no daemon, creating the client fails at once.
        guard let client = avahi_client_new(avahi_simple_poll_get(poll), AvahiClientFlags(0), { _, _, _ in }, nil, &error) else {
            let failure = AvahiError(code: error)
            return .failure(failure == .dbusUnreachable ? .noDaemon : failure)
        }
        defer { avahi_client_free(client) }
        guard let version = avahi_client_get_version_string(client) else {
            return .failure(AvahiError(code: avahi_client_errno(client)))
        }
        return .success(String(cString: version))
    }
}
