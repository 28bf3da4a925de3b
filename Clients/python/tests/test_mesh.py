"""Two agents linked over LAN TCP on 127.0.0.1: a write that waits until the other holds it, an
observer on one of a write on the other, a subscription's progress, the peers, and an attachment
the follower fetches from the source (through 202 answers)."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
import unittest
from typing import Any

import agents
from arcus_client import Client, Progress, SubscriptionState, UnsyncedError


class MeshTests(unittest.TestCase):
    root: tempfile.TemporaryDirectory[str]
    source: agents.Agent
    follower: agents.Agent
    a: Client
    b: Client

    @classmethod
    def setUpClass(cls) -> None:
        cls.root = agents.temporary_root("arcus-py-mesh-")
        cls.addClassCleanup(cls.root.cleanup)
        cls.source, cls.follower = agents.lan_pair(cls.root.name, subscribe="SELECT * FROM cars")
        cls.addClassCleanup(cls.source.stop)
        cls.addClassCleanup(cls.follower.stop)
        cls.a = Client(cls.source.url, token_file=cls.source.token_file)
        cls.b = Client(cls.follower.url, token_file=cls.follower.token_file)

        def linked() -> bool:
            peer = cls.a.peers().peer("follower")
            return peer is not None and peer.hops == 1
        agents.eventually(linked, what="the agents linking")

    def test_peers(self) -> None:
        for client, me, other in ((self.a, self.source, self.follower), (self.b, self.follower, self.source)):
            graph = client.peers()
            self.assertEqual(graph.self_id, me.peer)
            peer = graph.peer(other.name)
            assert peer is not None
            self.assertEqual((peer.id, peer.hops, peer.next_hop, peer.is_self), (other.peer, 1, other.peer, False))
            self.assertTrue(any(link.transport == "lan" and {link.a, link.b} == {me.peer, other.peer} for link in graph.links))
        self.assertEqual(self.b.status().transports, ["lan"])

    def test_wait_synced(self) -> None:
        result = self.a.execute("INSERT INTO cars DOCUMENTS (:car)", {"car": {"_id": "w1", "make": "saab"}},
                                wait_synced=["follower"], timeout=15)
        self.assertEqual(result.synced, ["follower"])
        self.assertEqual(result.mutated_document_ids, ["w1"])
        # Held there as soon as the answer came.
        self.assertEqual(self.b.execute("SELECT * FROM cars WHERE _id = 'w1'").items, [{"_id": "w1", "make": "saab"}])

        # The follower does not subscribe to trucks: 504, the write committed here all the same.
        with self.assertRaises(UnsyncedError) as caught:
            self.a.execute("INSERT INTO trucks DOCUMENTS ({'_id': 't1'})", wait_synced=[self.follower.peer], timeout=1)
        error = caught.exception
        self.assertEqual((error.status, error.unsynced), (504, [self.follower.peer]))
        self.assertIn("does not subscribe to trucks", error.message)
        self.assertEqual(error.result.mutated_document_ids, ["t1"])
        self.assertIsInstance(error.result.commit_id, int)
        self.assertEqual(len(self.a.execute("SELECT * FROM trucks WHERE _id = 't1'").items), 1)

    def test_observe_on_the_follower_a_write_on_the_source(self) -> None:
        async def run() -> list[Any]:
            async with self.b.observe("SELECT * FROM cars WHERE make = :make", {"make": "volvo"}) as events:
                first = await asyncio.wait_for(events.__anext__(), 10)
                self.assertEqual(first.items, [])
                await asyncio.to_thread(self.a.execute, "INSERT INTO cars DOCUMENTS (:car)", {"car": {"_id": "o1", "make": "volvo"}})
                while True:
                    event = await asyncio.wait_for(events.__anext__(), 15)
                    if event.items:
                        return event.items

        self.assertEqual(asyncio.run(run()), [{"_id": "o1", "make": "volvo"}])

    def test_subscription_progress(self) -> None:
        self.a.execute("INSERT INTO parts DOCUMENTS " + ", ".join(f"({{'_id': 'p{i}', 'n': {i}}})" for i in range(200)))
        subscription = self.b.subscribe("SELECT * FROM parts")
        seen: list[SubscriptionState] = []
        done = self.b.wait_caught_up(subscription.id, timeout=20, progress=seen.append)
        self.assertTrue(done.caught_up)
        self.assertEqual(seen[-1], done)
        [progress] = done.sync
        self.assertEqual(progress.label, f"source ({self.source.peer[:16]})")
        self.assertEqual((progress.peer, progress.site), (self.source.peer, self.source.peer[:16]))
        self.assertTrue(progress.caught_up)
        self.assertGreaterEqual(progress.documents_received, 200)
        self.assertGreater(progress.bytes_received, 0)
        self.assertEqual((progress.documents_to_go, progress.bytes_to_go, progress.fraction), (0, 0, 1.0))
        self.assertLessEqual(progress.started_at or 0, time.time())
        self.assertGreater(progress.started_at or 0, 0)
        self.assertEqual(len(self.b.execute("SELECT * FROM parts").items), 200)
        self.assertIn(subscription.id, [s.id for s in self.b.status().subscriptions])
        self.b.unsubscribe(subscription.id)
        self.assertNotIn(subscription.id, [s.id for s in self.b.subscriptions()])

    def test_attachment_fetched_from_a_peer(self) -> None:
        blob = os.urandom(6 << 20)
        token = self.a.upload_attachment(blob, collection="cars", id="photo-car", field="photo", name="car.jpg")

        def synced() -> bool:
            items = self.b.execute("SELECT * FROM cars WHERE _id = 'photo-car'").items
            return bool(items) and items[0].get("photo", {}).get("_attachment") == token.hash
        agents.eventually(synced, what="the document reaching the follower")

        seen: list[Progress] = []
        out = os.path.join(self.root.name, "fetched.jpg")
        self.assertEqual(self.b.download_attachment(token.hash, out, progress=seen.append, timeout=60), len(blob))
        with open(out, "rb") as file:
            self.assertEqual(file.read(), blob)
        # First the agent's fetch from the source (202 answers), then the bytes from the agent.
        fetch_phases = [p for p in seen if p.phase != "downloading"]
        self.assertTrue(fetch_phases, seen)
        self.assertTrue(all(p.phase in ("waiting", "fetching") and p.total == len(blob) for p in fetch_phases), fetch_phases)
        self.assertEqual(seen.index(fetch_phases[-1]), len(fetch_phases) - 1)
        self.assertEqual(seen[-1], Progress("downloading", len(blob), len(blob)))
        self.assertEqual(self.b.attachment_fetches(), [])


if __name__ == "__main__":
    unittest.main()
