import ArcusAgent
import ArcusCRDT
import ArgumentParser
import Foundation

struct Attachment: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachment",
        abstract: "Put a file into a running agent's document as an attachment, get one (fetched from peers as needed), list fetches.",
        discussion: """
              arcus attachment put --agent http://127.0.0.1:4747 photo.jpg --collection photos --id p1 --field image
              arcus attachment get --agent http://127.0.0.1:4747 HASH --out photo.jpg
              arcus attachment list --agent http://127.0.0.1:4747 [--json]
            """,
        subcommands: [Put.self, Get.self, List.self]
    )

    struct Put: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Store FILE as an attachment in a field of a document (created if absent); prints the token.",
            discussion: "At most \(AgentHTTPAPI.maximumAttachmentBytes >> 20) MiB. The token's \"_attachment\" is the hash `arcus attachment get` takes."
        )

        @Option(help: "The agent's URL, as its ready line gives it.")
        var agent: String

        @OptionGroup var token: AgentTokenOption

        @Argument(help: "The file to store.")
        var file: String

        @Option(help: "The document's collection.")
        var collection: String

        @Option(help: "The document's _id (a string).")
        var id: String

        @Option(help: "The field that holds the token; dotted for a nested field (photo.full).")
        var field: String

        func run() async throws {
            do {
                print(try await AgentClient(url: agent, tokenFile: token.tokenFile).putAttachment(path: file, collection: collection, id: id, field: field))
            } catch {
                Terminal.writeError(error.message + "\n")
                throw ExitCode(error.exitStatus)
            }
        }
    }

    struct Get: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write an attachment's bytes to a file, waiting while the agent fetches it from its peers.",
            discussion: """
                Progress goes to standard error. The bytes go to OUT.partial first and OUT only once \
                complete, so OUT is never half a file. Stop with Ctrl-C: what arrived stays with the \
                agent, and the next get resumes from it.
                """
        )

        @Option(help: "The agent's URL, as its ready line gives it.")
        var agent: String

        @OptionGroup var token: AgentTokenOption

        @Argument(help: "The attachment's hash: \"_attachment\" in the document, 64 hex digits.")
        var hash: String

        @Option(help: "The file to write.")
        var out: String

        /// Seconds between asks while the agent fetches.
        static let pollInterval = 0.25

        func run() async throws {
            do {
                try await download()
            } catch {
                Terminal.clearProgress()
                Terminal.writeError(error.message + "\n")
                throw ExitCode(error.exitStatus)
            }
        }

        private func download() async throws(CommandError) {
            let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
            let partial = out + ".partial"
            var reporter = ProgressReporter(hash: hash)
            while true {
                switch try await client.downloadAttachment(hash, to: partial) {
                case .written(let bytes):
                    // rename(2) replaces OUT at once: it is the old file or the new one, never half.
                    guard rename(partial, out) == 0 else {
                        throw CommandError("cannot move \(partial) to \(out): \(String(cString: strerror(errno)))")
                    }
                    reporter.finish(bytes: bytes, file: out)
                    return
                case .fetching(let json):
                    reporter.report(json)
                }
                do {
                    try await Task.sleep(for: .milliseconds(Int(Self.pollInterval * 1000)))
                } catch {
                    throw CommandError("stopped while the agent was fetching \(hash)")
                }
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the attachment fetches under way in a running agent.")

        @Option(help: "The agent's URL, as its ready line gives it.")
        var agent: String

        @OptionGroup var token: AgentTokenOption

        @Flag(help: "Print the fetches as JSON (as GET /v1/attachments answers) instead of a table.")
        var json = false

        func run() async throws {
            do {
                let document = try await AgentClient(url: agent, tokenFile: token.tokenFile).attachmentFetches()
                print(json ? document : try AttachmentFetchTable(json: document).text)
            } catch {
                Terminal.writeError(error.message + "\n")
                throw ExitCode(error.exitStatus)
            }
        }
    }
}

/// "fetching 1a2b3c4d…: 1.2 MB of 4.0 MB (30%)" on standard error: in place on a terminal,
/// otherwise a line at most each second.
struct ProgressReporter {
    let hash: String
    private var line = Terminal.ProgressLine()

    init(hash: String) { self.hash = hash }

    mutating func report(_ json: String) {
        guard case .object(let status)? = try? Value(json: json) else { return }
        let fetched: Int64
        if case .int(let n)? = status["bytes_fetched"] { fetched = n } else { fetched = 0 }
        var total: Int64?
        if case .int(let n)? = status["total_bytes"] { total = n }
        var state = "fetching"
        if case .string(let text)? = status["state"] { state = text }
        line.show(Self.line(hash: hash, state: state, fetched: fetched, total: total))
    }

    mutating func finish(bytes: Int64, file: String) {
        Terminal.clearProgress()
        Terminal.writeError("wrote \(Self.size(bytes)) to \(file)\n")
    }

    static func line(hash: String, state: String, fetched: Int64, total: Int64?) -> String {
        let waiting = state == "waiting" ? ", waiting for a peer that has it" : ""
        guard let total else { return "fetching \(hash.prefix(8))…: \(size(fetched))\(waiting)" }
        let percent = total == 0 ? 100 : Int(Double(fetched) * 100 / Double(total))
        return "fetching \(hash.prefix(8))…: \(size(fetched)) of \(size(total)) (\(percent)%)\(waiting)"
    }

    static func size(_ bytes: Int64) -> String { StatusSummary.bytes(Int(clamping: bytes)) }
}

/// `arcus attachment list`: one row per fetch.
struct AttachmentFetchTable {
    let text: String

    init(json: String) throws(CommandError) {
        guard case .object(let document)? = try? Value(json: json), case .array(let fetches)? = document["fetches"] else {
            throw CommandError("the agent's answer to GET /v1/attachments is not {\"fetches\": […]}; is it an arcus agent of this version?")
        }
        guard !fetches.isEmpty else {
            text = "no attachment fetches under way"
            return
        }
        var rows = [["HASH", "STATE", "FETCHED", "TOTAL", "SOURCE"]]
        for case .object(let fetch) in fetches {
            func string(_ key: String) -> String {
                switch fetch[key] {
                case .string(let text)?: return text
                case .int(let n)?: return ProgressReporter.size(n)
                default: return "-"
                }
            }
            rows.append([string("hash"), string("state"), string("bytes_fetched"), string("total_bytes"), string("source")])
        }
        text = StatusSummary.columns(rows).joined(separator: "\n")
    }
}
