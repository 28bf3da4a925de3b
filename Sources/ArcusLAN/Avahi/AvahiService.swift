import CAvahi
import Foundation

/// This agent on the LAN through avahi-daemon: publishes an `Advertisement` as `_arcus._tcp`,
/// browses for the other agents and resolves them, and reports all of it on `events`.
///
/// It owns every avahi handle it uses: a threaded poll (avahi's own event thread), the client
/// (a D-Bus connection to the daemon), the entry group that holds the advertisement, the browser
/// and one resolver per service seen. It recovers on its own from what happens to a long-running
/// agent: a name taken by another host (publishes under avahi's alternative name), a daemon
/// restart (recreates the client and publishes again), a daemon that is not running (one
/// `.warning`, then waits for it).
///
/// Call `start(advertising:)` once and `stop()` once, from any task or thread.
public final class AvahiService: @unchecked Sendable {
    // @unchecked: the avahi handles and the state below are touched only by avahi's poll thread
    // while it runs (every callback runs there, with the poll's lock held), and by `start` before
    // that thread starts and `stop` after it has been joined; `lifecycle` orders start and stop.

    /// The DNS-SD service type every Arcus agent publishes and browses.
    public static let serviceType = "_arcus._tcp"

    /// Everything the agent reports, in order. Finishes after `stop()`.
    public let events: AsyncStream<DiscoveryEvent>
    private let continuation: AsyncStream<DiscoveryEvent>.Continuation

    /// The interface to publish and browse on, or `AVAHI_IF_UNSPEC` for every interface the
    /// daemon allows.
    private let interface: AvahiIfIndex

    private let lifecycle = NSLock()
    private var poll: OpaquePointer?
    private var stopped = false

    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private var browser: OpaquePointer?
    private var resolvers: [ServiceKey: OpaquePointer] = [:]
    private var advertisement: Advertisement?
    /// The name we publish under: the advertisement's, or avahi's alternative after a collision.
    private var serviceName: String?
    /// Whether the user has been told the daemon is missing, so that a daemon which stays away
    /// costs one warning, not one per reconnect.
    private var toldDaemonMissing = false

    /// - Parameter interface: the network interface index (`if_nametoindex`) to publish and browse
    ///   on; nil for every interface avahi-daemon is allowed to use.
    public init(interface: Int32? = nil) {
        self.interface = interface ?? Int32(AVAHI_IF_UNSPEC)
        // A bounded buffer: a LAN flooding us with services must not grow memory without end.
        (events, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1024))
    }

    deinit {
        stop()
    }

    /// Connects to avahi-daemon, publishes `advertisement` (if any) and starts browsing.
    ///
    /// A missing or failing daemon is not an error here: it is reported on `events` as a
    /// `.warning`, and the service waits for the daemon. Throws only when avahi's event thread
    /// cannot be created.
    public func start(advertising advertisement: Advertisement?) throws(AvahiError) {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        precondition(poll == nil && !stopped, "AvahiService.start(advertising:) is called once")
        guard let poll = avahi_threaded_poll_new() else { throw AvahiError(code: Int32(AVAHI_ERR_NO_MEMORY)) }
        self.poll = poll
        self.advertisement = advertisement
        serviceName = advertisement?.name
        // The poll thread is not running yet: this thread may call avahi without its lock.
        connect()
        let started = avahi_threaded_poll_start(poll)
        guard started >= 0 else {
            releaseClient()
            avahi_threaded_poll_free(poll)
            self.poll = nil
            throw AvahiError(code: started)
        }
    }

    /// Withdraws the advertisement, stops browsing and releases every handle. The other agents
    /// see this one `.lost`. Idempotent.
    public func stop() {
        lifecycle.lock()
        defer { lifecycle.unlock() }
        guard !stopped else { return }
        stopped = true
        if let poll {
            // Joins the poll thread: no callback runs after this.
            avahi_threaded_poll_stop(poll)
            releaseClient()
            avahi_threaded_poll_free(poll)
            self.poll = nil
        }
        continuation.finish()
    }

    // MARK: - The client

    /// Creates the client. NO_FAIL: with no daemon it waits for one (state CONNECTING) instead
    /// of failing, which is also how it comes back after a daemon restart.
    private func connect() {
        var error: Int32 = 0
        let client = avahi_client_new(
            avahi_threaded_poll_get(poll), AVAHI_CLIENT_NO_FAIL,
            { client, state, userdata in AvahiService.from(userdata).clientChanged(client, state) },
            Unmanaged.passUnretained(self).toOpaque(), &error
        )
        guard let client else {
            // NO_FAIL waits for a missing daemon, but not for a missing bus: that fails here as
            // a D-Bus error, which to the user is the same missing piece.
            let failure = AvahiError(code: error)
            report(.warning((failure == .dbusUnreachable ? .noDaemon : failure).warning))
            return
        }
        self.client = client
    }

    /// Frees the client and, first, everything made from it (avahi's documented order).
    private func releaseClient() {
        for resolver in resolvers.values { avahi_service_resolver_free(resolver) }
        resolvers = [:]
        if let browser { avahi_service_browser_free(browser) }
        browser = nil
        if let group { avahi_entry_group_free(group) }
        group = nil
        if let client { avahi_client_free(client) }
        client = nil
    }

    /// On the poll thread. `client` may not be stored yet: avahi calls back from inside
    /// `avahi_client_new`.
    private func clientChanged(_ client: OpaquePointer?, _ state: AvahiClientState) {
        guard let client else { return }
        switch state {
        case AVAHI_CLIENT_S_RUNNING:
            toldDaemonMissing = false
            publish(with: client)
            browse(with: client)
        case AVAHI_CLIENT_S_COLLISION, AVAHI_CLIENT_S_REGISTERING:
            // The daemon is renaming its host: records under the old name are void; publish
            // again once it is running.
            if let group { avahi_entry_group_reset(group) }
        case AVAHI_CLIENT_CONNECTING:
            if !toldDaemonMissing {
                toldDaemonMissing = true
                report(.warning(AvahiError.noDaemon.warning))
            }
        case AVAHI_CLIENT_FAILURE:
            let error = AvahiError(code: avahi_client_errno(client))
            if error == .disconnected {
                // A daemon restart: the client and all it made are dead. Start over; NO_FAIL
                // waits for the daemon to come back.
                report(.warning(error.warning))
                toldDaemonMissing = true
                self.client = client
                releaseClient()
                connect()
            } else {
                report(.warning(error.warning))
            }
        default:
            break
        }
    }

    // MARK: - Publishing

    private func publish(with client: OpaquePointer) {
        guard let advertisement, serviceName != nil else { return }
        if group == nil {
            group = avahi_entry_group_new(
                client,
                { group, state, userdata in AvahiService.from(userdata).groupChanged(group, state) },
                Unmanaged.passUnretained(self).toOpaque()
            )
        }
        guard let group else {
            report(.warning(AvahiError(code: avahi_client_errno(client)).warning))
            return
        }
        guard avahi_entry_group_is_empty(group) != 0 else { return }

        var txt: UnsafeMutablePointer<AvahiStringList>? = nil
        // avahi_string_list_add_arbitrary prepends: add in reverse to publish in order.
        for entry in advertisement.txtEntries.reversed() {
            txt = entry.withUnsafeBufferPointer { avahi_string_list_add_arbitrary(txt, $0.baseAddress, $0.count) }
        }
        defer { avahi_string_list_free(txt) }

        // A name held by another client of the same daemon fails here at once; one held by
        // another host fails later, in `groupChanged`. Both move to avahi's alternative name.
        for _ in 0..<Self.maximumRenames {
            let added = avahi_entry_group_add_service_strlst(
                group, interface, Int32(AVAHI_PROTO_UNSPEC), AvahiPublishFlags(0),
                serviceName, Self.serviceType, nil, nil, advertisement.port, txt
            )
            if added == Int32(AVAHI_ERR_COLLISION) {
                moveToAlternativeName()
                continue
            }
            if added < 0 {
                report(.warning("could not publish \(serviceName ?? ""): \(AvahiError(code: added))"))
                avahi_entry_group_reset(group)
                return
            }
            let committed = avahi_entry_group_commit(group)
            if committed < 0 {
                report(.warning("could not publish \(serviceName ?? ""): \(AvahiError(code: committed))"))
            }
            return
        }
        report(.warning("could not publish: \(Self.maximumRenames) names in a row were taken"))
    }

    /// Bounds the renames in a row, so a network that answers every name as taken cannot spin us.
    static let maximumRenames = 32

    private func moveToAlternativeName() {
        guard let current = serviceName, let alternative = avahi_alternative_service_name(current) else { return }
        serviceName = String(cString: alternative)
        avahi_free(alternative)
    }

    private func groupChanged(_ group: OpaquePointer?, _ state: AvahiEntryGroupState) {
        guard let group else { return }
        switch state {
        case AVAHI_ENTRY_GROUP_ESTABLISHED:
            if let serviceName { report(.published(name: serviceName)) }
        case AVAHI_ENTRY_GROUP_COLLISION:
            moveToAlternativeName()
            avahi_entry_group_reset(group)
            publish(with: avahi_entry_group_get_client(group))
        case AVAHI_ENTRY_GROUP_FAILURE:
            let error = AvahiError(code: avahi_client_errno(avahi_entry_group_get_client(group)))
            report(.warning("could not publish \(serviceName ?? ""): \(error)"))
        default:
            break
        }
    }

    // MARK: - Browsing and resolving

    private func browse(with client: OpaquePointer) {
        guard browser == nil else { return }
        browser = avahi_service_browser_new(
            client, interface, Int32(AVAHI_PROTO_UNSPEC), Self.serviceType, nil, AvahiLookupFlags(0),
            { browser, interface, proto, event, name, type, domain, flags, userdata in
                AvahiService.from(userdata).browserEvent(browser, interface, proto, event, name, type, domain, flags)
            },
            Unmanaged.passUnretained(self).toOpaque()
        )
        if browser == nil {
            report(.warning("could not browse for \(Self.serviceType): \(AvahiError(code: avahi_client_errno(client)))"))
        }
    }

    private func browserEvent(
        _ browser: OpaquePointer?, _ interface: AvahiIfIndex, _ proto: AvahiProtocol, _ event: AvahiBrowserEvent,
        _ name: UnsafePointer<CChar>?, _ type: UnsafePointer<CChar>?, _ domain: UnsafePointer<CChar>?,
        _ flags: AvahiLookupResultFlags
    ) {
        guard let browser else { return }
        let client = avahi_service_browser_get_client(browser)
        switch event {
        case AVAHI_BROWSER_NEW, AVAHI_BROWSER_REMOVE:
            guard let name, flags.rawValue & AVAHI_LOOKUP_RESULT_OUR_OWN.rawValue == 0 else { return }
            let key = ServiceKey(interface: interface, protocol: proto, name: String(cString: name))
            if let resolver = resolvers.removeValue(forKey: key) { avahi_service_resolver_free(resolver) }
            guard event == AVAHI_BROWSER_NEW else {
                report(.lost(name: key.name))
                return
            }
            // The resolver stays open while the service is there, so a changed port or TXT
            // record is reported as another `.found`. It asks for an address of the family the
            // service was seen on: the one its mDNS packets show is reachable.
            let resolver = avahi_service_resolver_new(
                client, interface, proto, name, type, domain, proto, AvahiLookupFlags(0),
                { resolver, interface, proto, event, name, _, _, host, address, port, txt, _, userdata in
                    AvahiService.from(userdata).resolved(resolver, interface, event, name, host, address, port, txt)
                },
                Unmanaged.passUnretained(self).toOpaque()
            )
            if let resolver {
                resolvers[key] = resolver
            } else {
                report(.ignored(name: key.name, reason: "could not resolve: \(AvahiError(code: avahi_client_errno(client)))"))
            }
        case AVAHI_BROWSER_FAILURE:
            // A lost daemon also fails the client, which reconnects; anything else is worth a word.
            let error = AvahiError(code: avahi_client_errno(client))
            if error != .disconnected {
                report(.warning("browsing for \(Self.serviceType) failed: \(error)"))
            }
        default:
            break  // ALL_FOR_NOW, CACHE_EXHAUSTED: nothing to do with them.
        }
    }

    private func resolved(
        _ resolver: OpaquePointer?, _ interface: AvahiIfIndex, _ event: AvahiResolverEvent,
        _ name: UnsafePointer<CChar>?, _ host: UnsafePointer<CChar>?, _ address: UnsafePointer<AvahiAddress>?,
        _ port: UInt16, _ txt: UnsafeMutablePointer<AvahiStringList>?
    ) {
        guard let resolver, let name else { return }
        let serviceName = String(cString: name)
        guard event == AVAHI_RESOLVER_FOUND, let host, let address else {
            let error = AvahiError(code: avahi_client_errno(avahi_service_resolver_get_client(resolver)))
            if let key = resolvers.first(where: { $0.value == resolver })?.key {
                resolvers[key] = nil
                avahi_service_resolver_free(resolver)
            }
            report(.ignored(name: serviceName, reason: "did not resolve: \(error)"))
            return
        }
        do {
            let record = try ServiceTXT(entries: Self.strings(of: txt))
            let numeric = String(unsafeUninitializedCapacity: Int(AVAHI_ADDRESS_STR_MAX)) { buffer in
                buffer.withMemoryRebound(to: CChar.self) { text in
                    avahi_address_snprint(text.baseAddress, text.count, address)
                    return strnlen(text.baseAddress!, text.count)
                }
            }
            report(.found(DiscoveredService(
                name: serviceName, address: numeric, hostName: String(cString: host),
                port: port, txt: record, interface: interface
            )))
        } catch {
            report(.ignored(name: serviceName, reason: "malformed TXT record: \(error.reason)"))
        }
    }

    /// The TXT strings of a list from the network, copying no more than the parser accepts plus
    /// one, so that an oversized record is refused without being copied whole.
    static func strings(of list: UnsafeMutablePointer<AvahiStringList>?) -> [[UInt8]] {
        var strings: [[UInt8]] = []
        var node = list
        while let current = node, strings.count <= ServiceTXT.maximumEntries {
            let size = min(avahi_string_list_get_size(current), ServiceTXT.maximumEntryBytes + 1)
            strings.append(Array(UnsafeBufferPointer(start: avahi_string_list_get_text(current), count: size)))
            node = avahi_string_list_get_next(current)
        }
        return strings
    }

    private func report(_ event: DiscoveryEvent) {
        continuation.yield(event)
    }

    private static func from(_ userdata: UnsafeMutableRawPointer?) -> AvahiService {
        Unmanaged<AvahiService>.fromOpaque(userdata!).takeUnretainedValue()
    }
}

/// One service as the browser sees it: the same name on two interfaces or protocols is two.
private struct ServiceKey: Hashable {
    var interface: AvahiIfIndex
    var `protocol`: AvahiProtocol
    var name: String
}
