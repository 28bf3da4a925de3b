"""The checker, in the manner of Jepsen: given the history of what every host's API answered and
what every host holds after the heal, list every violation. Pure functions, no I/O, so that its
own tests (test_checker.py) can feed it histories with known faults.

The rules (the workload keeps each field with one writer so they can be exact):
  converged      every host holds the same docs and counters
  duplicates     no host lists one _id twice
  lost           an acknowledged insert of a document never deleted is there with its fields; for
                 each acknowledged `w<N>` write on such a document, the value held is that write's
                 or a later one by the same host (values grow) whose outcome is ok or unknown
  resurrected    a document whose delete was acknowledged holds none of what its owner wrote
                 before the delete (owner, created, a w<owner> value written before it); fields
                 written concurrently or after the delete may be there (add-wins:
                 Sources/ArcusCRDT/README.md, "Removal")
  shared         `shared` holds a value some host tried to write to that document
  counters       acknowledged increments <= value <= acknowledged + unknown ones
"""

from collections import defaultdict


def check(history, states):
    """Returns (violations, stats): violations is a list of (rule, message)."""
    violations = []
    hosts = sorted(states)
    reference = states[hosts[0]]

    for h in hosts:
        for d in states[h].get("duplicates", []):
            violations.append(("duplicates", f"host {h} lists {d} twice"))
        if h != hosts[0]:
            for collection in ("docs", "counters"):
                if states[h][collection] != reference[collection]:
                    diff = _difference(reference[collection], states[h][collection])
                    violations.append(("converged", f"host {h} {collection} differs from host {hosts[0]}: {diff}"))

    deleted, maybe_deleted = {}, set()
    for e in history:
        # A delete whose WHERE matched nothing here (not synced yet, or evicted) deleted nothing.
        if e["op"] == "delete" and e["outcome"] == "ok" and e["mutated"]:
            deleted[e["id"]] = e
        if e["op"] == "delete" and (e["outcome"] == "unknown" or e["mutated"]):
            maybe_deleted.add(e["id"])

    # EVICT drops the local copy: an owner that evicts its new document before any peer has it
    # drops the only copy (Docs/Sync.md, "Evictions"). Gone everywhere, that is no loss; held
    # anywhere, convergence requires it everywhere.
    evicted_by_owner = {e["id"] for e in history if e["op"] == "evict" and e["mutated"] and e["id"].startswith(f"h{e['host']}-")}
    held_anywhere = set().union(*(states[h]["docs"].keys() for h in hosts))
    dropped_by_owner = evicted_by_owner - held_anywhere - maybe_deleted

    # Field writes: one writer per field, values increasing in the writer's order.
    writes = defaultdict(list)
    for e in history:
        if e["op"] == "set" and e["outcome"] in ("ok", "unknown"):
            writes[(e["id"], e["field"])].append(e)
    # The same for a field write its writer then evicted with the document, before any peer had
    # the write: gone with the only copy. Gone everywhere, that is no loss; held anywhere, it must
    # be held everywhere.
    evicted_at = defaultdict(list)
    for e in history:
        if e["op"] == "evict" and e["outcome"] == "ok" and e["mutated"]:
            evicted_at[(e["host"], e["id"])].append(e["start"])
    dropped_writes = set()
    for (doc_id, field), es in writes.items():
        acked = [e for e in es if e["outcome"] == "ok" and e["mutated"]]
        if not acked:
            continue
        last = max(acked, key=lambda e: e["value"])
        allowed = {last["value"]} | {e["value"] for e in es if e["value"] > last["value"]}
        if any(t > last["end"] for t in evicted_at[(last["host"], doc_id)]) and \
                not any(states[h]["docs"].get(doc_id, {}).get(field) in allowed for h in hosts):
            dropped_writes.add((doc_id, field))

    for h in hosts:
        docs = states[h]["docs"]
        for e in history:
            if e["op"] == "insert" and e["outcome"] == "ok" and e["id"] not in maybe_deleted | dropped_by_owner:
                doc = docs.get(e["id"])
                if doc is None:
                    violations.append(("lost", f"host {h}: acknowledged insert of {e['id']} missing"))
                elif doc.get("owner") != e["host"] or "created" not in doc:
                    violations.append(("lost", f"host {h}: {e['id']} lost its inserted fields: {doc}"))

        for (doc_id, field), es in writes.items():
            if doc_id in maybe_deleted or doc_id in dropped_by_owner or (doc_id, field) in dropped_writes:
                continue
            acked = [e for e in es if e["outcome"] == "ok" and e["mutated"]]
            if not acked:
                continue
            last = max(e["value"] for e in acked)
            allowed = {last} | {e["value"] for e in es if e["value"] > last}
            held = docs.get(doc_id, {}).get(field)
            if held not in allowed:
                violations.append(("lost", f"host {h}: {doc_id}.{field} = {held!r}, but host {acked[0]['host']} "
                                           f"acknowledged {last} (allowed {sorted(allowed)})"))

        for doc_id, removal in deleted.items():
            doc = docs.get(doc_id)
            if doc is None:
                continue
            owner = int(doc_id.split("-")[0][1:])
            back = [f for f in ("owner", "created") if f in doc]
            # The owner's own field may be written again after the delete (once another host's
            # concurrent write made the document visible again); a value from before it may not.
            field = f"w{owner}"
            before = {e["value"] for e in history if e["op"] == "set" and e["host"] == owner
                      and e["id"] == doc_id and e["start"] < removal["start"]}
            if doc.get(field) in before:
                back.append(field)
            if back:
                violations.append(("resurrected", f"host {h}: deleted {doc_id} holds {back} again: {doc}"))

        tried = defaultdict(set)
        for e in history:
            if e["op"] == "shared" and e["outcome"] in ("ok", "unknown"):
                tried[e["id"]].add(e["value"])
        for doc_id, doc in docs.items():
            if "shared" in doc and doc["shared"] not in tried[doc_id]:
                violations.append(("shared", f"host {h}: {doc_id}.shared = {doc['shared']!r}, never written"))

        acked, unknown = defaultdict(int), defaultdict(int)
        for e in history:
            if e["op"] == "increment":
                if e["outcome"] == "ok" and e["mutated"]:
                    acked[e["id"]] += e["amount"]
                elif e["outcome"] == "unknown":
                    unknown[e["id"]] += e["amount"]
        for counter in set(acked) | set(unknown):
            value = states[h]["counters"].get(counter, {}).get("n", 0)
            if not acked[counter] <= value <= acked[counter] + unknown[counter]:
                violations.append(("counters", f"host {h}: {counter} = {value}, acknowledged {acked[counter]}"
                                               f" (+{unknown[counter]} unknown)"))

    stats = {
        "writes_attempted": len(history),
        "writes_acknowledged": sum(1 for e in history if e["outcome"] == "ok"),
        "writes_unknown": sum(1 for e in history if e["outcome"] == "unknown"),
        "writes_failed": sum(1 for e in history if e["outcome"] == "fail"),
        "deleted": len(deleted),
        "dropped_by_owner_eviction": len(dropped_by_owner) + len(dropped_writes),
        "documents": len(reference["docs"]),
    }
    for rule in RULES:
        stats[rule] = sum(1 for r, _ in violations if r == rule)
    return violations, stats


RULES = ("converged", "duplicates", "lost", "resurrected", "shared", "counters")


def _difference(a, b):
    only_a = sorted(set(a) - set(b))[:5]
    only_b = sorted(set(b) - set(a))[:5]
    changed = sorted(k for k in set(a) & set(b) if a[k] != b[k])[:3]
    return {"only_first": only_a, "only_this": only_b, "changed": {k: [a[k], b[k]] for k in changed}}
