/// The files for a TLS connection to NATS. All paths are PEM files on this machine.
public struct NATSTLS: Sendable, Hashable {
    /// The certificate authority that signed the server's certificate; `nil` trusts the system roots.
    public var caFile: String?
    /// A client certificate, for servers that verify clients (mutual TLS); needs `keyFile`.
    public var certificateFile: String?
    /// The private key of `certificateFile`.
    public var keyFile: String?

    public init(caFile: String? = nil, certificateFile: String? = nil, keyFile: String? = nil) {
        self.caFile = caFile
        self.certificateFile = certificateFile
        self.keyFile = keyFile
    }
}
