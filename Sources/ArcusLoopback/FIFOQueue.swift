/// A first-in, first-out queue with amortised constant-time operations at both ends: new
/// elements go on `back`; `front` holds the oldest, reversed, and is refilled when it runs out.
struct FIFOQueue<Element> {
    private var front: [Element] = []
    private var back: [Element] = []

    var isEmpty: Bool { front.isEmpty && back.isEmpty }

    var first: Element? { front.last ?? back.first }

    mutating func append(_ element: Element) {
        back.append(element)
    }

    mutating func popFirst() -> Element? {
        if front.isEmpty {
            guard !back.isEmpty else { return nil }
            front = back.reversed()
            back.removeAll(keepingCapacity: true)
        }
        return front.popLast()
    }

    mutating func removeAll() {
        front = []
        back = []
    }
}

extension FIFOQueue: Sendable where Element: Sendable {}
