import Testing
@testable import ArcusAgent

/// The query string as a form: what `GET /v1/observe` and the attachment upload read.
@Suite("FormQuery")
struct FormQueryTests {
    @Test("+ is a space, %2B a plus, %XX a byte of UTF-8; the first of a repeated name counts")
    func decoding() throws {
        let query = FormQuery("q=SELECT+n+%2B+1+FROM+cars&args=%7B%22n%22%3A1%7D&name=caf%C3%A9&q=second&empty=&bare")
        #expect(try query.get("q") == "SELECT n + 1 FROM cars")
        #expect(try query.get("args") == #"{"n":1}"#)
        #expect(try query.get("name") == "café")
        #expect(try query.get("empty") == "")
        #expect(try query.get("bare") == "")
        #expect(try query.get("absent") == nil)
        #expect(try FormQuery(nil).get("q") == nil)
    }

    @Test("a % without two hex digits, or bytes that are not UTF-8, is a 400 naming the parameter", arguments: ["q=SELECT%ZZ", "q=50%", "q=%4", "q=%C3%28", "q=%FF"])
    func malformed(query: String) {
        let error = #expect(throws: APIError.self) { try FormQuery(query).get("q") }
        #expect(error?.status == .badRequest)
        #expect(error?.message.contains("query parameter q") == true, "\(String(describing: error?.message))")
    }
}
