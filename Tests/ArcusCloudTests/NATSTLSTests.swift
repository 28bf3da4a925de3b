import ArcusCloud
import ArcusTestSupport
import Foundation
import Testing

@Suite("NATS over TLS", .timeLimit(.minutes(2)))
struct NATSTLSTests {
    @Test("with the CA that signed the server's certificate, a TLS connection works")
    func connectsWithTheCA() async throws {
        let files = try TestCertificates.make()
        defer { files.remove() }
        let server = try NATSServerProcess.start(jetStream: false, extraArguments: files.serverArguments)
        var options = testOptions(server.url)
        options.retryOnFailedConnect = false
        options.tls = NATSTLS(caFile: files.caCertificate)
        let connection = try NATSConnection(options)
        defer { connection.close() }
        let received = ReceivedMessages()
        let subscription = try connection.subscribe("arcus.tls") { received.append($0) }
        defer { subscription.cancel() }
        try connection.publish("arcus.tls", [7, 7])
        try connection.flush(within: .seconds(10))
        #expect(await eventually { received.count == 1 })
    }

    @Test("without TLS, or without the CA, the error says what to set")
    func refusedWithoutTheCA() throws {
        let files = try TestCertificates.make()
        defer { files.remove() }
        let server = try NATSServerProcess.start(jetStream: false, extraArguments: files.serverArguments)

        var plain = testOptions(server.url)
        plain.retryOnFailedConnect = false
        let plainError = #expect(throws: NATSError.self) { try NATSConnection(plain) }
        #expect(plainError?.description.contains("TLS") == true, "\(plainError?.description ?? "")")

        var untrusted = plain
        untrusted.tls = NATSTLS()
        let untrustedError = #expect(throws: NATSError.self) { try NATSConnection(untrusted) }
        #expect(untrustedError?.description.contains("caFile") == true, "\(untrustedError?.description ?? "")")

        var missingFile = plain
        missingFile.tls = NATSTLS(caFile: files.directory + "/missing.pem")
        let missingError = #expect(throws: NATSError.self) { try NATSConnection(missingFile) }
        #expect(missingError?.description.contains("missing.pem") == true, "\(missingError?.description ?? "")")
    }
}

/// A throwaway CA and a server certificate for 127.0.0.1 that it signed, made with `openssl`.
struct TestCertificates {
    let directory: String
    var caCertificate: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server-key.pem" }
    var serverArguments: [String] { ["--tls", "--tlscert", serverCertificate, "--tlskey", serverKey] }

    static func make() throws -> TestCertificates {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("arcus-tls-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let files = TestCertificates(directory: directory)
        try files.openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=Arcus Test CA",
            "-keyout", directory + "/ca-key.pem", "-out", files.caCertificate,
        ])
        try files.openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
            "-keyout", files.serverKey, "-out", directory + "/server.csr",
        ])
        try "subjectAltName=IP:127.0.0.1\n".write(toFile: directory + "/san.ext", atomically: true, encoding: .utf8)
        try files.openssl([
            "x509", "-req", "-in", directory + "/server.csr", "-CA", files.caCertificate, "-CAkey", directory + "/ca-key.pem",
            "-CAcreateserial", "-days", "2", "-extfile", directory + "/san.ext", "-out", files.serverCertificate,
        ])
        return files
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    private func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CertificateFailure(description: "openssl \(arguments.first ?? "") failed with status \(process.terminationStatus)")
        }
    }
}

struct CertificateFailure: Error, CustomStringConvertible {
    let description: String
}
