import Testing
@testable import ArcusBluetooth

@Suite("Addresses discovery announced before")
struct RememberedAddressesTests {
    @Test("a liar advertising from endless addresses is remembered only up to the capacity: the oldest go first, a repeat takes no room")
    func bounded() {
        var remembered = RememberedAddresses(capacity: 3)
        for address in ["a", "b", "a", "c"] { remembered.insert(address) }
        #expect(remembered.count == 3 && remembered.contains("a") && remembered.contains("c"))
        for number in 0..<10_000 { remembered.insert("liar-\(number)") }
        #expect(remembered.count == 3)
        #expect(!remembered.contains("a") && !remembered.contains("liar-9996"))
        #expect(remembered.contains("liar-9997") && remembered.contains("liar-9999"))
    }
}
