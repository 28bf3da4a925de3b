"""The token, found as the arcus CLI finds it: given (the token or a file), else ARCUS_TOKEN, else
the copy the agent keeps for the user who runs it; without one, the agent's 401 with what to do."""

from __future__ import annotations

import os
import socket
import tempfile
import unittest

import agents
from arcus_client import AgentUnreachableError, Client, TokenError, UnauthorizedError


class TokenTests(unittest.TestCase):
    root: tempfile.TemporaryDirectory[str]
    agent: agents.Agent

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = agents.temporary_root("arcus-py-token-")
        cls.addClassCleanup(cls.root.cleanup)
        cls.agent = agents.start(cls.root.name, "tokens")
        cls.addClassCleanup(cls.agent.stop)

    def environ(self, **values: str) -> dict[str, str]:
        """An environment with no ARCUS_TOKEN and a state directory that holds no token copy."""
        empty = os.path.join(self.root.name, "empty-state")
        os.makedirs(empty, mode=0o700, exist_ok=True)
        environ = {k: v for k, v in os.environ.items() if k != "ARCUS_TOKEN"}
        environ["XDG_STATE_HOME"] = empty
        environ.update(values)
        return environ

    def works(self, client: Client) -> None:
        self.assertEqual(client.status().peer, self.agent.peer)

    def test_given_token(self) -> None:
        self.works(Client(self.agent.url, token=self.agent.token.upper() + "\n", environ=self.environ()))

    def test_token_file(self) -> None:
        # Wins over a wrong ARCUS_TOKEN, as --token-file does.
        self.works(Client(self.agent.url, token_file=self.agent.token_file, environ=self.environ(ARCUS_TOKEN="ab" * 32)))

    def test_arcus_token(self) -> None:
        self.works(Client(self.agent.url, environ=self.environ(ARCUS_TOKEN=self.agent.token)))

    def test_the_copy_the_agent_keeps_for_its_user(self) -> None:
        port = self.agent.url.rsplit(":", 1)[1]
        copy = os.path.join(self.agent.state_home, "arcus", "agents", f"localhost:{port}")
        with open(copy) as file:
            self.assertEqual(file.read().strip(), self.agent.token)
        self.works(Client(self.agent.url, environ=self.agent.environ))
        self.works(Client(self.agent.url.replace("127.0.0.1", "localhost"), environ=self.agent.environ))

    def test_no_token_is_the_agents_401_with_what_to_do(self) -> None:
        client = Client(self.agent.url, environ=self.environ())
        with self.assertRaises(UnauthorizedError) as caught:
            client.status()
        error = caught.exception
        self.assertEqual(error.status, 401)
        agent_says, hint = error.message.split("\n", 1)
        self.assertTrue(agent_says.startswith("this route needs the agent's API token, as the header Authorization: Bearer <token>"), agent_says)
        self.assertIn(f"the agent at {self.agent.url} runs as you, and no token for it is in {self.environ()['XDG_STATE_HOME']}/arcus/agents/localhost:", hint)
        self.assertIn("Client(token_file=\"DIR/api-token\")", hint)
        self.assertIn("ARCUS_TOKEN=<64 hex digits>", hint)

    def test_wrong_token(self) -> None:
        with self.assertRaises(UnauthorizedError) as caught:
            Client(self.agent.url, environ=self.environ(ARCUS_TOKEN="ab" * 32)).execute("SELECT * FROM cars")
        self.assertIn("does not carry this agent's API token", caught.exception.message)
        self.assertIn("the token in ARCUS_TOKEN is not this agent's", caught.exception.message)

    def test_tokens_that_are_not_tokens_are_refused_before_any_request(self) -> None:
        with self.assertRaises(TokenError) as caught:
            Client(self.agent.url, environ=self.environ(ARCUS_TOKEN="not-hex"))
        self.assertIsNone(caught.exception.status)
        self.assertIn("ARCUS_TOKEN is not an API token", caught.exception.message)
        with self.assertRaises(TokenError) as caught:
            Client(self.agent.url, token_file=os.path.join(self.root.name, "missing"))
        self.assertIn("cannot read the token file", caught.exception.message)
        with self.assertRaises(TokenError):
            Client(self.agent.url, token="abc")

    def test_no_agent(self) -> None:
        with socket.socket() as unused:
            unused.bind(("127.0.0.1", 0))
            port = unused.getsockname()[1]
        client = Client(f"http://127.0.0.1:{port}", environ=self.environ())
        with self.assertRaises(AgentUnreachableError) as caught:
            client.status()
        self.assertIsNone(caught.exception.status)
        self.assertIn(f"no agent at http://127.0.0.1:{port}", caught.exception.message)
        with self.assertRaises(ValueError):
            Client("https://127.0.0.1:4747")


if __name__ == "__main__":
    unittest.main()
