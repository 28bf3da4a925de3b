import Foundation
import Logging
import ServiceLifecycle
import Synchronization

/// The HTTP server's copy of the agent's token for the user running it (`UserTokenFiles`):
/// written once the server listens (only then is its port known), removed when it stops. A
/// failure to write it costs only convenience (the CLI then needs --token-file), so it is one
/// warning, not a failure to start.
final class UserTokenHandoff: Sendable {
    private let token: APIToken
    private let logger: Logger
    private let environment: [String: String]
    private let published = Mutex<String?>(nil)

    init(token: APIToken, logger: Logger, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.token = token
        self.logger = logger
        self.environment = environment
    }

    func publish(host: String, port: Int) {
        do throws(UserTokenFiles.Failure) {
            let path = try UserTokenFiles.publish(token, host: host, port: port, environment: environment)
            published.withLock { $0 = path }
            logger.debug("the API token for this user's arcus commands is in \(path)")
        } catch {
            logger.warning("""
                could not keep a copy of the API token for this user's arcus commands (\(error)); \
                they need --token-file DIR/api-token or ARCUS_TOKEN
                """)
        }
    }

    func withdraw() {
        guard let path = published.withLock({ path in defer { path = nil }; return path }) else { return }
        UserTokenFiles.withdraw(path, token: token)
    }

    /// The HTTP server, then the withdrawal of the token's copy once it has stopped.
    struct Service<Application: ServiceLifecycle.Service>: ServiceLifecycle.Service {
        let application: Application
        let handoff: UserTokenHandoff

        func run() async throws {
            defer { handoff.withdraw() }
            try await application.run()
        }
    }
}
