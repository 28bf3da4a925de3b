"""One agent: DQL with arguments, the agent's errors, observe, subscriptions, peers, status and
attachments, through the installed arcus_client against a real `arcus agent` process."""

from __future__ import annotations

import asyncio
import json
import os
import unittest
import tempfile
import urllib.error
import urllib.request

import agents
from arcus_client import ArcusError, Client, ObserveEvent, Progress, QueryResult, UnsyncedError


class ClientTests(unittest.TestCase):
    root: tempfile.TemporaryDirectory[str]
    agent: agents.Agent
    client: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = agents.temporary_root("arcus-py-client-")
        cls.addClassCleanup(cls.root.cleanup)
        cls.agent = agents.start(cls.root.name, "solo")
        cls.addClassCleanup(cls.agent.stop)
        cls.client = Client(cls.agent.url, token_file=cls.agent.token_file)

    def test_execute_with_arguments(self) -> None:
        written = self.client.execute("INSERT INTO cars DOCUMENTS (:car)", {"car": {"_id": "exec-1", "color": "blue", "doors": 4}})
        self.assertEqual(written.mutated_document_ids, ["exec-1"])
        self.assertIsInstance(written.commit_id, int)
        self.assertIsNone(written.synced)
        updated = self.client.execute("UPDATE cars SET color = :color WHERE _id = :id", {"color": "red", "id": "exec-1"})
        assert updated.commit_id is not None and written.commit_id is not None
        self.assertGreater(updated.commit_id, written.commit_id)
        read = self.client.execute("SELECT * FROM cars WHERE _id = :id", {"id": "exec-1"})
        self.assertEqual(read, QueryResult(items=[{"_id": "exec-1", "color": "red", "doors": 4}], mutated_document_ids=[]))
        self.assertIsNone(read.commit_id)

    def test_errors_carry_the_agents_message(self) -> None:
        with self.assertRaises(ArcusError) as caught:
            self.client.execute("SELEC * FROM cars")
        self.assertEqual(caught.exception.status, 400)
        # The message is the agent's own, word for word (as the raw API answers it).
        self.assertEqual(caught.exception.message, self.raw_error("/v1/execute", {"statement": "SELEC * FROM cars"}))
        self.assertTrue(caught.exception.message.startswith("error at line 1, column 1: unknown statement 'SELEC'"), caught.exception.message)
        self.assertEqual(str(caught.exception), caught.exception.message)

        with self.assertRaises(ArcusError) as caught:
            self.client.execute("SELECT * FROM cars WHERE color = :color")
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("missing argument 'color'", caught.exception.message)

        with self.assertRaises(ArcusError) as caught:
            self.client.execute("INSERT INTO cars DOCUMENTS (:car)", {"car": {"_id": "x"}}, wait_synced=["nobody"], timeout=1)
        self.assertEqual(caught.exception.status, 400)
        self.assertNotIsInstance(caught.exception, UnsyncedError)
        self.assertIn("no peer named nobody", caught.exception.message)
        # Refused before anything was written.
        self.assertEqual(self.client.execute("SELECT * FROM cars WHERE _id = 'x'").items, [])

    def raw_error(self, path: str, body: dict[str, str]) -> str:
        request = urllib.request.Request(
            self.agent.url + path, data=json.dumps(body).encode(), method="POST",
            headers={"Content-Type": "application/json", "Authorization": "Bearer " + self.agent.token})
        with self.assertRaises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=10)
        return str(json.loads(caught.exception.read())["error"])

    def test_observe_is_an_async_iterator_that_sees_a_write(self) -> None:
        async def run() -> list[ObserveEvent]:
            seen: list[ObserveEvent] = []
            async for event in self.client.observe("SELECT * FROM boats WHERE size >= :size ORDER BY _id", {"size": 3}):
                seen.append(event)
                if len(seen) == 1:
                    await asyncio.to_thread(self.client.execute, "INSERT INTO boats DOCUMENTS (:a), (:b)",
                                            {"a": {"_id": "b1", "size": 5}, "b": {"_id": "b2", "size": 1}})
                elif len(seen) == 2:
                    await asyncio.to_thread(self.client.execute, "UPDATE boats SET size = 9 WHERE _id = 'b1'")
                else:
                    break
            return seen

        first, inserted, updated = asyncio.run(asyncio.wait_for(run(), 20))
        self.assertEqual(first.items, [])
        self.assertEqual(inserted.items, [{"_id": "b1", "size": 5}])  # b2 does not match :size
        self.assertEqual(inserted.diff.insertions, [0])
        self.assertEqual(updated.items, [{"_id": "b1", "size": 9}])
        self.assertEqual(updated.diff.updates, [0])

    def test_observe_errors_and_closing(self) -> None:
        async def run() -> None:
            with self.assertRaises(ArcusError) as caught:
                async for _ in self.client.observe("DELETE FROM boats"):
                    self.fail("no event for a statement that is not a SELECT")
            self.assertEqual(caught.exception.status, 400)
            self.assertIn("an observer needs a SELECT statement", caught.exception.message)
            # `async with` closes the connection on leaving; the next observer works the same.
            for _ in range(2):
                async with self.client.observe("SELECT * FROM nothing_here") as events:
                    event = await events.__anext__()
                    self.assertEqual(event.items, [])
                with self.assertRaises(StopAsyncIteration):
                    await events.__anext__()

        asyncio.run(asyncio.wait_for(run(), 20))

    def test_subscriptions(self) -> None:
        created = self.client.subscribe("SELECT * FROM trucks WHERE make = :make", {"make": "volvo"})
        self.assertEqual(created.query, "SELECT * FROM trucks WHERE make = :make")
        self.assertEqual(self.client.subscribe("SELECT * FROM trucks WHERE make = :make", {"make": "volvo"}).id, created.id)
        listed = self.client.subscription(created.id)
        self.assertEqual(listed.args, {"make": "volvo"})
        # No peer here: no progress, and not caught up (Docs/Agent.md, Sync progress).
        self.assertEqual(listed.sync, [])
        self.assertFalse(listed.caught_up)
        self.client.unsubscribe(created.id)
        self.assertNotIn(created.id, [s.id for s in self.client.subscriptions()])
        with self.assertRaises(ArcusError) as caught:
            self.client.unsubscribe(created.id)
        self.assertEqual((caught.exception.status, caught.exception.message), (404, f"no active subscription {created.id}"))

    def test_peers_and_status(self) -> None:
        graph = self.client.peers()
        self.assertEqual(graph.self_id, self.agent.peer)
        self.assertTrue(graph.peers[0].is_self)
        self.assertEqual(graph.peers[0].name, "solo")
        self.client.execute("INSERT INTO status_check DOCUMENTS ({'_id': 's1'}), ({'_id': 's2'})")
        status = self.client.status()
        self.assertEqual((status.name, status.peer, status.durability), ("solo", self.agent.peer, "full"))
        self.assertEqual(status.transports, ["loopback"])
        self.assertEqual(status.store.collections.get("status_check"), 2)
        self.assertGreater(status.uptime_seconds, 0)
        self.assertEqual(status.graph.self_id, self.agent.peer)
        self.assertIn("arcus_sync_sessions", self.client.metrics())

    def test_attachment_round_trip_with_progress(self) -> None:
        blob = os.urandom(300_000)
        path = os.path.join(self.root.name, "photo.jpg")
        with open(path, "wb") as file:
            file.write(blob)
        sent: list[Progress] = []
        token = self.client.upload_attachment(path, collection="photos", id="p1", field="image.full", progress=sent.append)
        self.assertEqual((token.length, token.collection, token.id, token.field), (len(blob), "photos", "p1", "image.full"))
        self.assertEqual(token.metadata, {"name": "photo.jpg"})
        self.assertEqual(sent[0], Progress("uploading", 0, len(blob)))
        self.assertEqual(sent[-1], Progress("uploading", len(blob), len(blob)))
        self.assertEqual([p.done for p in sent], sorted(p.done for p in sent))
        self.assertGreater(len(sent), 3)
        document = self.client.execute("SELECT * FROM photos WHERE _id = 'p1'").items[0]
        self.assertEqual(document["image"]["full"], {"_attachment": token.hash, "len": len(blob), "metadata": {"name": "photo.jpg"}})

        received: list[Progress] = []
        out = os.path.join(self.root.name, "copy.jpg")
        self.assertEqual(self.client.download_attachment(token.hash, out, progress=received.append), len(blob))
        with open(out, "rb") as file:
            self.assertEqual(file.read(), blob)
        self.assertFalse(os.path.exists(out + ".partial"))
        self.assertEqual(received[-1], Progress("downloading", len(blob), len(blob)))
        self.assertEqual({p.phase for p in received}, {"downloading"})  # this store has it: no fetch
        self.assertEqual(self.client.read_attachment(token.hash.upper()), blob)

        small = self.client.upload_attachment(b"hello", collection="photos", id="p2", field="note", name="hello.txt")
        self.assertEqual((small.length, small.metadata), (5, {"name": "hello.txt"}))
        self.assertEqual(self.client.read_attachment(small.hash), b"hello")

    def test_attachment_errors(self) -> None:
        with self.assertRaises(ArcusError) as caught:
            self.client.read_attachment("0" * 64)
        self.assertEqual(caught.exception.status, 404)
        self.assertIn(f"no document in this store references attachment {'0' * 64}", caught.exception.message)
        with self.assertRaises(ArcusError) as caught:
            self.client.read_attachment("not-a-hash")
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("is not an attachment hash", caught.exception.message)
        with self.assertRaises(ArcusError) as caught:
            self.client.upload_attachment(b"x", collection="photos", id="p3", field="_id")
        self.assertEqual(caught.exception.status, 400)
        self.assertIn("the _id of a document cannot hold an attachment", caught.exception.message)
        self.assertEqual(self.client.attachment_fetches(), [])


class StoppingAgentTests(unittest.TestCase):
    def test_observation_ends_when_the_agent_stops(self) -> None:
        root = agents.temporary_root("arcus-py-stop-")
        self.addCleanup(root.cleanup)
        agent = agents.start(root.name, "stopping")
        self.addCleanup(agent.stop)
        client = Client(agent.url, token=agent.token)

        async def run() -> int:
            count = 0
            async for _ in client.observe("SELECT * FROM cars"):
                count += 1
                self.assertEqual(await asyncio.to_thread(agent.stop), 0)
            return count

        self.assertEqual(asyncio.run(asyncio.wait_for(run(), 30)), 1)


if __name__ == "__main__":
    unittest.main()
