import ArgumentParser

/// `--token-file`, for every command that talks to a running agent. Without it, the token comes
/// from ARCUS_TOKEN, or from the copy the agent keeps for the user who runs it
/// (`AgentCredential`), so that as that user (or as root) no one handles the token by hand.
struct AgentTokenOption: ParsableArguments {
    @Option(help: """
        A file holding the agent's API token, such as its DIR/api-token (default: ARCUS_TOKEN, else the copy the agent \
        keeps for the user who runs it, under ~/.local/state/arcus/agents).
        """)
    var tokenFile: String?
}
