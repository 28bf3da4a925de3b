import ArcusAgent
import ArgumentParser
import Foundation

struct Mesh: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Make a mesh's shared secret, or a mesh authority and the certificates that admit peers to the mesh.",
        discussion: """
            A mesh proves membership with a shared secret (small fleets) or with certificates that \
            one authority key signs. A shared secret:
              arcus mesh secret ./mesh.secret            # 32 random bytes, mode 0600
            Copy it to every device and name it in the configuration: {"mesh_secret_file": "./mesh.secret"}. \
            Secrets people choose are refused unless they are out of reach of guessing (Docs/Security.md). \
            Certificates:
              arcus mesh identity --data ./data          # on the peer: its public key
              arcus mesh init --out ./authority
              arcus mesh issue --authority ./authority --peer gate-7 --public-key <128 hex digits> \\
                --read cars,trucks --write cars --out gate-7.cert
              arcus mesh issue --authority ./authority --peer hub --identity hub/identity --read '*' --write '*' --relay --out hub.cert
            Give every peer ./authority/authority.pub and its own certificate; keep authority.key offline.
            A lost or stolen device: arcus mesh revoke --authority ./authority --peer-id ID --out revocations,
            then give the list to any one agent (arcus mesh revocations --agent URL revocations); the mesh passes it on.
            `arcus mesh noise-vectors FILE` checks the handshake against published Noise test vectors.
            """,
        subcommands: [Secret.self, Identity.self, Init.self, Issue.self, Revoke.self, Revocations.self, NoiseVectors.self]
    )

    struct Secret: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Write a new shared mesh secret to FILE: 32 random bytes, mode 0600. Refuses to replace an existing file.",
            discussion: """
                Prints one JSON line (the file, its size, and the mesh id agents holding it advertise), then on \
                standard error what to do next: copy FILE to every device of the mesh and name it in \
                mesh_secret_file in each agent's configuration.
                """
        )

        @Argument(help: "The file to create.")
        var file: String

        func run() throws {
            let secret = MeshSecretFile(file)
            try reportingErrors { print(try secret.create()) }
            Terminal.writeError(secret.nextSteps + "\n")
        }
    }

    struct NoiseVectors: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "noise-vectors",
            abstract: "Run published Noise test vectors through the mesh's handshake and session code.",
            discussion: """
                FILE holds vectors in the Noise wiki's JSON format, as cacophony and snow publish them \
                ({"vectors": [...]}). Every vector whose protocol the mesh implements \
                (Noise_XX_25519_ChaChaPoly_SHA256, alone or with psk modifiers such as XXpsk0, the one a \
                shared secret uses) runs with its keys injected: each handshake and transport message must \
                come out byte for byte, and the handshake hash match. Prints a line per failing vector \
                naming the message, the number skipped (other protocols), and last `N passed, M failed`. \
                Exit status 1 when any failed, 2 when FILE is not such a file.
                  arcus mesh noise-vectors Tests/ArcusMeshTests/Fixtures/noise/Noise_XX_25519_ChaChaPoly_SHA256.json
                """
        )

        @Argument(help: "The JSON file of test vectors.")
        var file: String

        func run() async throws {
            let check = NoiseVectorCheck(file)
            var lines: [String] = []
            var failed = 0
            do {
                let report = try await check.run()
                (lines, failed) = (report.lines, report.failed)
            } catch {
                Terminal.writeError(error.message + "\n")
                throw ExitCode(error.exitStatus)
            }
            for line in lines { print(line) }
            if failed > 0 { throw ExitCode(1) }
        }
    }

    struct Identity: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Show this peer's identity (made on first use in DIR/identity, mode 0600): its peer id and public key.",
            discussion: "Give the public key (or the identity file's path) to the mesh authority: arcus mesh issue --public-key HEX."
        )

        @Option(help: "The peer's data directory.")
        var data: String

        func run() throws {
            try reportingErrors { print(try DataDirectoryIdentity(data).loadOrCreate()) }
        }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create a mesh authority: authority.key (private, mode 0600) and authority.pub in DIR."
        )

        @Option(help: "The directory to create the authority in (created if needed; must not hold one already).")
        var out: String

        func run() throws {
            try reportingErrors { print(try AuthorityDirectory(out).create()) }
        }
    }

    struct Issue: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Sign a certificate admitting one peer to the mesh, with its permissions.",
            discussion: """
                Prints one JSON line describing the certificate. Without --read or --write the peer may read or write nothing. \
                Only a peer issued with --relay may pass on other peers' writes (multi-hop through it): give it to hubs and \
                the devices a mesh routes through; other peers' writes from a peer without it are refused.
                """
        )

        @Option(help: "The authority directory `arcus mesh init` made.")
        var authority: String

        @Option(help: "The peer's name in the mesh (1 to 128 bytes).")
        var peer: String

        @Option(name: .customLong("public-key"), help: "The peer's public key: 128 hex digits.")
        var publicKey: String?

        @Option(help: "The peer's identity file, instead of --public-key.")
        var identity: String?

        @Option(help: "Collections the peer may read, comma-separated, or * for all.")
        var read: String = ""

        @Option(help: "Collections the peer may write, comma-separated, or * for all.")
        var write: String = ""

        @Flag(help: "Let the peer relay: pass on other peers' writes, which its peers then take on its word.")
        var relay = false

        @Option(help: "Days until the certificate expires (1 to 3650).")
        var days: Int = CertificateRequest.defaultDays

        @Option(help: "The file to write the certificate to.")
        var out: String

        func validate() throws {
            guard (publicKey == nil) != (identity == nil) else {
                throw ValidationError("give the peer's key with exactly one of --public-key HEX and --identity FILE")
            }
        }

        func run() throws {
            let source: CertificateRequest.PublicKeySource = publicKey.map { .hex($0) } ?? .identityFile(identity ?? "")
            let request = CertificateRequest(
                authority: AuthorityDirectory(authority), peerName: peer, publicKey: source,
                read: collections(read), write: collections(write), relay: relay, days: days, output: out
            )
            try reportingErrors { print(try request.issue()) }
        }

        private func collections(_ list: String) -> [String] {
            list.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        }
    }
}

extension Mesh {
    struct Revoke: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Revoke peers: add them to the authority's signed revocation list.",
            discussion: """
                Writes the list (numbered one above the last) to DIR/revocations and to --out. Give it to any one agent \
                (`arcus mesh revocations --agent URL FILE`, or revocation_file in its config): agents pass it to every peer \
                they sync with, refuse the revoked peers' handshakes, close their links as the list arrives, and take no \
                more of their writes from anyone. Prints one JSON line.
                """
        )

        @Option(help: "The authority directory `arcus mesh init` made.")
        var authority: String

        @Option(name: .customLong("peer-id"), help: "A peer id to revoke (32 hex digits); repeat for more.")
        var peerIDs: [String] = []

        @Option(help: "A certificate whose peer to revoke; repeat for more.")
        var certificate: [String] = []

        @Option(help: "Where to write a copy of the list.")
        var out: String?

        func validate() throws {
            guard !peerIDs.isEmpty || !certificate.isEmpty else { throw ValidationError("name the peers to revoke with --peer-id ID or --certificate FILE") }
        }

        func run() throws {
            let request = RevocationRequest(
                authority: AuthorityDirectory(authority), peers: peerIDs.map { .peerID($0) } + certificate.map { .certificate($0) }, output: out
            )
            try reportingErrors { print(try request.revoke()) }
        }
    }

    struct Revocations: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Hand a running agent the authority's revocation list; it adopts it if newer and passes it on.",
            discussion: "Prints the agent's answer: the list in force (serial) and the peers it revokes."
        )

        @Option(help: "The agent's HTTP address, such as http://127.0.0.1:4747.")
        var agent: String

        @Argument(help: "The list `arcus mesh revoke` wrote.")
        var file: String

        @OptionGroup var token: AgentTokenOption

        func run() async throws {
            do {
                guard let data = FileManager.default.contents(atPath: file) else {
                    throw CommandError("cannot read \(file): it does not exist or is not readable", exitStatus: 2)
                }
                print(try await AgentClient(url: agent, tokenFile: token.tokenFile).publishRevocations(Array(data.prefix(1 << 20))))
            } catch let error as CommandError {
                Terminal.writeError(error.message + "\n")
                throw ExitCode(error.exitStatus)
            }
        }
    }
}

/// Runs `body`, printing a `CommandError` on standard error and exiting with its status.
private func reportingErrors(_ body: () throws -> Void) throws {
    do {
        try body()
    } catch let error as CommandError {
        Terminal.writeError(error.message + "\n")
        throw ExitCode(error.exitStatus)
    }
}
