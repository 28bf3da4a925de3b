/// The samples of a Prometheus text exposition (what `GET /metrics` answers) for the metric
/// names asked for: each series, by its name and labels, with its value.
///
/// Just enough of the format for the agent's own figures: `name{label="value",…} number`,
/// comments skipped, escapes in label values (`\"`, `\\`, `\n`) undone, a trailing timestamp
/// ignored. A line it cannot read is skipped rather than fatal: a scrape with one odd line
/// still has the figures it needs.
public struct PrometheusSamples: Sendable {
    public struct Series: Hashable, Sendable {
        public var name: String
        public var labels: [String: String]

        public init(_ name: String, _ labels: [String: String] = [:]) {
            self.name = name
            self.labels = labels
        }
    }

    public private(set) var values: [Series: Double] = [:]

    public init(text: String, names wanted: Set<String>) {
        for line in text.split(whereSeparator: \.isNewline) {
            let line = line.drop { $0 == " " || $0 == "\t" }
            guard !line.isEmpty, line.first != "#" else { continue }
            let nameEnd = line.firstIndex { $0 == "{" || $0 == " " || $0 == "\t" } ?? line.endIndex
            let name = String(line[..<nameEnd])
            guard wanted.contains(name), let (labels, rest) = Self.labels(line[nameEnd...]) else { continue }
            guard let number = rest.split(whereSeparator: { $0 == " " || $0 == "\t" }).first,
                  let value = Self.number(number) else { continue }
            values[Series(name, labels)] = value
        }
    }

    /// The value of one series, with exactly these labels.
    public func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        values[Series(name, labels)]
    }

    /// `{a="x",b="y"}` at the start of `text` (or nothing), and what follows it.
    private static func labels(_ text: Substring) -> ([String: String], Substring)? {
        guard text.first == "{" else { return ([:], text) }
        var labels: [String: String] = [:]
        var index = text.index(after: text.startIndex)
        while true {
            while index < text.endIndex, text[index] == " " || text[index] == "," { index = text.index(after: index) }
            guard index < text.endIndex else { return nil }
            if text[index] == "}" { return (labels, text[text.index(after: index)...]) }
            guard let equals = text[index...].firstIndex(of: "=") else { return nil }
            let key = text[index..<equals].trimmingSpaces
            var cursor = text.index(after: equals)
            guard cursor < text.endIndex, text[cursor] == "\"" else { return nil }
            cursor = text.index(after: cursor)
            var value = ""
            while cursor < text.endIndex, text[cursor] != "\"" {
                if text[cursor] == "\\", text.index(after: cursor) < text.endIndex {
                    cursor = text.index(after: cursor)
                    value.append(text[cursor] == "n" ? "\n" : text[cursor])
                } else {
                    value.append(text[cursor])
                }
                cursor = text.index(after: cursor)
            }
            guard cursor < text.endIndex else { return nil }
            labels[key] = value
            index = text.index(after: cursor)
        }
    }

    private static func number(_ text: Substring) -> Double? {
        switch text {
        case "+Inf": .infinity
        case "-Inf": -.infinity
        case "NaN": .nan
        default: Double(text)
        }
    }
}

extension Substring {
    fileprivate var trimmingSpaces: String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
