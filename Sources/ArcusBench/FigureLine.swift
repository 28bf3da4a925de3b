import ArcusAgent
import ArcusCRDT

/// The one-line JSON object a benchmark or a demo prints: its fields in the order given (a
/// `Value.object` would sort them), so people reading a run see the headline figures first.
package enum FigureLine {
    package static func json(_ fields: [(String, Value)]) -> String {
        "{" + fields.map { "\(Value.string($0.0).jsonString): \($0.1.jsonString)" }.joined(separator: ", ") + "}"
    }
}
