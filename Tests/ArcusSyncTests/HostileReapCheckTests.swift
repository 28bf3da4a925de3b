import ArcusCRDT
import ArcusCodec
import Testing

/// Reap checks (`ReapCheck`) from a peer that lies: a server answers only for a whole
/// collection it serves that peer, and only about documents of that collection; anything else
/// ends the session and leaves the store as it was (`HostileInputTests.attack`).
@Suite("Hostile reap checks")
struct HostileReapCheckTests {
    static func key(_ collection: String, _ id: String) -> DocumentKey { DocumentKey(collection: collection, id: .string(id)) }

    @Test("a reap check for a subscription never announced")
    func unannounced() async throws {
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [encoder.encode(.reapCheck(ReapCheck(subscriptionID: 77, keys: [Self.key("orders", "o0001")])))]
        }
        #expect(reason?.contains("not a whole collection this side serves") == true, "\(reason ?? "nil")")
    }

    @Test("a reap check for a subscription that is not a whole collection: the answer would say what the query does not serve")
    func partialSubscription() async throws {
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [encoder.encode(.subscribe(Subscribe(subscriptionID: 9, query: "SELECT * FROM orders WHERE status = 'open'"))),
             encoder.encode(.reapCheck(ReapCheck(subscriptionID: 9, keys: [Self.key("orders", "o0001")])))]
        }
        #expect(reason?.contains("not a whole collection this side serves") == true, "\(reason ?? "nil")")
    }

    @Test("a reap check naming documents of another collection than the subscription's")
    func outsideTheCollection() async throws {
        let (reason, _) = try await HostileInputTests.attack { encoder in
            [encoder.encode(.subscribe(Subscribe(subscriptionID: 9, query: "SELECT * FROM orders"))),
             encoder.encode(.reapCheck(ReapCheck(subscriptionID: 9, keys: [Self.key("orders", "o0001"), Self.key("secrets", "s1")])))]
        }
        #expect(reason?.contains("names documents outside orders") == true, "\(reason ?? "nil")")
    }
}
