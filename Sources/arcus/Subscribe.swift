import ArcusAgent
import ArgumentParser
import Foundation

struct Subscribe: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register a sync subscription in a running agent; it persists in the agent's store.",
        discussion: """
            Prints {"id": …, "query": …}; `DELETE /v1/subscriptions/ID` cancels it.
              arcus subscribe --agent http://127.0.0.1:4747 "SELECT * FROM cars"
            With --wait it then shows the initial sync's progress on standard error (documents and
            bytes received, and what each peer says is still to come) and returns once every
            connected peer has sent what it has:
              arcus subscribe --agent http://127.0.0.1:4747 "SELECT * FROM cars" --wait --timeout 600
            """
    )

    @Option(help: "The agent's URL, as its ready line gives it.")
    var agent: String

    @OptionGroup var token: AgentTokenOption

    @Argument(help: "The SELECT whose documents this peer asks its neighbours for.")
    var query: String

    @Option(help: "Arguments for :name placeholders, as a JSON object.")
    var args: String?

    @Flag(help: "Wait until every connected peer has sent what it has of the subscription, showing progress.")
    var wait = false

    @Option(help: "With --wait: give up after this many seconds (exit status 1; the subscription stays).")
    var timeout: Double?

    func validate() throws {
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
        if timeout != nil && !wait { throw ValidationError("--timeout goes with --wait") }
    }

    func run() async throws {
        do {
            let client = try AgentClient(url: agent, tokenFile: token.tokenFile)
            let answer = try await client.subscribe(query, arguments: try CommandArguments.parse(args))
            print(answer)
            guard wait else { return }
            let id = try Self.id(in: answer)
            try await InitialSyncProgress(client: client, subscription: id, timeout: timeout).wait()
        } catch {
            Terminal.clearProgress()
            Terminal.writeError(error.message + "\n")
            throw ExitCode(error.exitStatus)
        }
    }

    static func id(in answer: String) throws(CommandError) -> Int {
        struct Created: Decodable { var id: Int }
        guard let created = try? JSONDecoder().decode(Created.self, from: Data(answer.utf8)) else {
            throw CommandError("the agent's answer names no subscription id: \(answer.prefix(200))")
        }
        return created.id
    }
}

/// Polls the agent's subscriptions and shows one subscription's sync until every connected
/// peer is caught up: a line redrawn in place on a terminal, else a line each second.
struct InitialSyncProgress {
    let client: AgentClient
    let subscription: Int
    let timeout: Double?

    static let interval = Duration.milliseconds(250)

    func wait() async throws(CommandError) {
        let start = ContinuousClock.now
        var line = Terminal.ProgressLine()
        while true {
            let progress = try await current()
            let peers = progress.sync ?? []
            if !peers.isEmpty, peers.allSatisfy(\.caughtUp) {
                Terminal.clearProgress()
                let seconds = (ContinuousClock.now - start) / .seconds(1)
                let documents = peers.reduce(0) { $0 + $1.documentsReceived }, bytes = peers.reduce(0) { $0 + $1.bytesReceived }
                Terminal.writeError("#\(subscription): caught up with \(StatusSummary.count(peers.count, "peer")): "
                    + "\(StatusSummary.number(documents)) documents, \(StatusSummary.bytes(bytes)) received in \(String(format: "%.1f", seconds)) s\n")
                return
            }
            line.show(progress.summary)
            if let timeout, ContinuousClock.now - start > .seconds(timeout) {
                Terminal.clearProgress()
                throw CommandError("""
                    subscription #\(subscription) is not caught up after \(timeout) s (\(progress.summary)); it stays registered \
                    and goes on syncing: watch it with `arcus status --agent \(client.baseURL)`
                    """, exitStatus: 1)
            }
            do { try await Task.sleep(for: Self.interval) } catch { throw CommandError("cancelled", exitStatus: 1) }
        }
    }

    private func current() async throws(CommandError) -> SubscriptionProgress {
        struct List: Decodable { var subscriptions: [SubscriptionProgress] }
        let text = try await client.subscriptions()
        let decoder = JSONDecoder()
        decoder.keyDecodingStrategy = .convertFromSnakeCase
        guard let list = try? decoder.decode(List.self, from: Data(text.utf8)) else {
            throw CommandError("the agent's /v1/subscriptions answer is not a list of subscriptions: \(text.prefix(200))")
        }
        guard let mine = list.subscriptions.first(where: { $0.id == subscription }) else {
            throw CommandError("subscription #\(subscription) was cancelled while waiting for it", exitStatus: 1)
        }
        return mine
    }
}
