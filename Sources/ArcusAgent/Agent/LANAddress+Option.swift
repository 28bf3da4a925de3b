import ArcusLAN

extension LANAddress {
    /// Reads the `HOST:PORT` given to `option` (`--http`, `--listen`, `--peer`), with the LAN
    /// transport's grammar; `listening` lets the port be 0 (any free port). The error names the
    /// option, so that the user knows which to fix.
    init(parsing text: String, option: String, listening: Bool) throws(CommandError) {
        do {
            try self.init(parsing: text, listening: listening)
        } catch {
            throw CommandError("\(option) \(text.debugDescription) is not HOST:PORT (such as 127.0.0.1:4747): \(error)", exitStatus: 2)
        }
    }
}
