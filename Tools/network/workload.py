"""Writes through every host's HTTP API during the run, and the history of what each returned.

Each host has one writer thread inside its network namespace. What a write returned decides how
the checker reads it:
  ok       the agent answered 200: acknowledged (`mutated` says whether the WHERE matched here)
  fail     it certainly did not happen (connection refused, a 4xx/5xx answer)
  unknown  the request may have been applied (a timeout, or the connection dropped after sending)

The operations keep each field with one writer, so the checker can be exact:
  docs:      insert (by its owner, id hN-k: fields owner, created), `w<N>` set by host N only (an
             increasing value), `shared` set by anyone (any written value may win), delete by the
             owner, evict (local; the subscription brings it back)
  counters:  c0..c3, created before the faults, incremented by anyone
"""

import http.client
import random
import socket
import threading
import time
import urllib.error

from hosts import HostClient, enter_network_namespace

COUNTERS = [f"c{i}" for i in range(4)]


class History:
    def __init__(self):
        self.lock = threading.Lock()
        self.events = []
        self.inserted = []  # ids acknowledged as inserted, for the others to update

    def record(self, **event):
        with self.lock:
            self.events.append(event)
            if event["op"] == "insert" and event["outcome"] == "ok":
                self.inserted.append(event["id"])

    def known_ids(self):
        with self.lock:
            return list(self.inserted)


def attempt(client, statement, args):
    """(outcome, mutated ids) of one statement."""
    try:
        answer = client.execute(statement, args)
        return "ok", answer.get("mutatedDocumentIDs", [])
    except urllib.error.HTTPError as e:
        # A refusal (4xx) wrote nothing; a server error might have come after the commit.
        return ("fail" if e.code < 500 else "unknown"), []
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            return "fail", []
        return "unknown", []
    except (socket.timeout, TimeoutError, ConnectionResetError, http.client.HTTPException, OSError):
        return "unknown", []


class Writer(threading.Thread):
    def __init__(self, host, history, seed, stop_at, interval=0.08):
        super().__init__(name=f"writer-{host.name}", daemon=True)
        self.host = host
        self.history = history
        self.rng = random.Random(seed)
        self.stop_at = stop_at
        self.interval = interval
        self.next_doc = 0
        self.field_value = 0
        self.deleted = set()
        self.error = None

    def run(self):
        try:
            enter_network_namespace(self.host.netns)
            self.client = HostClient(self.host, timeout=4.0)
            while time.time() < self.stop_at:
                self.step()
                time.sleep(self.rng.uniform(0.5, 1.5) * self.interval)
        except BaseException as e:
            self.error = e

    def step(self):
        n, rng = self.host.index, self.rng
        known = self.history.known_ids()
        own = [d for d in known if d.startswith(f"h{n}-") and d not in self.deleted]
        r = rng.random()
        if r < 0.30 or not known:
            self.next_doc += 1
            doc_id = f"h{n}-{self.next_doc}"
            self.do("insert", doc_id, "INSERT INTO docs DOCUMENTS (:doc)",
                    {"doc": {"_id": doc_id, "owner": n, "created": self.next_doc}})
        elif r < 0.55:
            self.field_value += 1
            doc_id = rng.choice(known)
            self.do("set", doc_id, f"UPDATE docs SET w{n} = :v WHERE _id = :id", {"v": self.field_value, "id": doc_id},
                    field=f"w{n}", value=self.field_value)
        elif r < 0.65:
            doc_id = rng.choice(known)
            value = f"{self.host.name}:{rng.randrange(1 << 30)}"
            self.do("shared", doc_id, "UPDATE docs SET shared = :v WHERE _id = :id", {"v": value, "id": doc_id},
                    field="shared", value=value)
        elif r < 0.85:
            counter, amount = rng.choice(COUNTERS), rng.randint(1, 5)
            self.do("increment", counter,
                    "UPDATE COLLECTION counters (n PN_COUNTER) APPLY n PN_INCREMENT BY :k WHERE _id = :id",
                    {"k": amount, "id": counter}, amount=amount)
        elif r < 0.95 and own:
            doc_id = rng.choice(own)
            self.deleted.add(doc_id)  # whatever the outcome, the owner writes it no more
            self.do("delete", doc_id, "DELETE FROM docs WHERE _id = :id", {"id": doc_id})
        else:
            doc_id = rng.choice(known)
            self.do("evict", doc_id, "EVICT FROM docs WHERE _id = :id", {"id": doc_id})

    def do(self, op, doc_id, statement, args, **extra):
        started = time.time()
        outcome, mutated = attempt(self.client, statement, args)
        self.history.record(host=self.host.index, op=op, id=doc_id, outcome=outcome, mutated=doc_id in mutated,
                            start=started, end=time.time(), **extra)



def read_state(host):
    """What one host holds: {"docs": {id: doc}, "counters": {id: doc}, "duplicates": [ids]} (in its namespace)."""
    client = HostClient(host, timeout=10.0)
    state = {"duplicates": []}
    for collection in ("docs", "counters"):
        items = client.execute(f"SELECT * FROM {collection}")["items"]
        by_id = {}
        for item in items:
            if item["_id"] in by_id:
                state["duplicates"].append(item["_id"])
            by_id[item["_id"]] = item
        state[collection] = by_id
    return state


def create_counters(host):
    client = HostClient(host, timeout=10.0)
    for c in COUNTERS:
        client.execute("INSERT INTO counters DOCUMENTS (:doc) ON ID CONFLICT DO NOTHING", {"doc": {"_id": c}})
