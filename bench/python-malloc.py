"""The python-malloc benchmark workload: an in-memory document store.

    PYTHONMALLOC=malloc python3 python-malloc.py [DOCS [ROUNDS]]

What a Python service that holds a data set in memory does: it ingests
DOCS documents from a feed through JSON text into objects of its own
classes, then serves ROUNDS rounds of queries (filter, sort, format,
aggregate) while a tenth of the store expires and is replaced each round.
With PYTHONMALLOC=malloc, as one runs a Python program to find its object
leaks with a native tracker, every object goes through malloc: at the
bench's size (2900 documents, 3 rounds) about 6.7 million malloc calls and
a ~250 MiB peak RSS, most of it live until the end.

The call stacks are as deep as a real program's: jobs go through a
middleware layer (a callable object) to the dispatcher; documents are
generated through map(), built by json.loads's object_hook calling class
constructors that build their section trees through map() in turn; queries
sort with key functions that recurse through map().  Every call from C
back into Python adds several interpreter frames: a malloc is 30-60
native frames below main (median ~47, a tenth deeper than 62).

Deterministic for a given size: prints "python-malloc docs=N rounds=R
checksum=HEX live=L chars=C jobs=J", which must be the same under any
tracker.  The bench sets PYTHONHASHSEED=0 so that dict and set layouts,
and with them the allocations, are the same from run to run too.
"""

import json
import operator
import random
import sys
import zlib

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo "
         "lima mike november oscar papa quebec romeo sierra tango uniform "
         "victor whiskey xray yankee zulu").split()


class Para:
    __slots__ = ("text", "head", "weight", "refs")

    def __init__(self, d):
        self.text = d["w"]
        self.head = tuple(self.text[:40].split())
        self.weight = d["n"] * 1.5
        self.refs = tuple(d["r"])


class Section:
    def __init__(self, d):
        self.title = d["t"].title()
        self.paras = list(map(Para, d["p"]))
        self.children = list(map(Section, d["c"]))
        self.meta = {k: str(v) for k, v in d["m"].items()}

    def chars(self):
        n = sum(len(p.text) for p in self.paras)
        return n + sum(map(Section.chars, self.children))


class Document:
    def __init__(self, d):
        self.id = d["id"]
        self.tags = sorted(set(d["tags"]), key=str.lower)
        self.root = Section(d["root"])
        self.scores = [float(s) for s in d["scores"]]
        self.owner = d["owner"].upper()

    def summary(self):
        return "%06d %-12s %5d %s" % (self.id, self.owner[:12], self.root.chars(),
                                      ",".join(self.tags[:3]))


SENTENCES = []


def sentences():
    """Some hundreds of made-up sentences paragraphs are cut from."""
    rng = random.Random(7)
    for _ in range(400):
        SENTENCES.append(" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 16))) + ".")


class Generator:
    """Makes the raw documents, as a feed would deliver them."""

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def section(self, depth):
        rng = self.rng
        return {
            "t": " ".join(rng.choices(WORDS, k=rng.randint(1, 4))),
            "p": list(map(self.para, range(rng.randint(1, 3)))),
            "c": list(map(self.section, [depth - 1] * rng.randint(1, 2))) if depth else [],
            "m": {rng.choice(WORDS): rng.randint(0, 999) for _ in range(rng.randint(0, 3))},
        }

    def para(self, _):
        rng = self.rng
        return {"w": " ".join(rng.choices(SENTENCES, k=rng.randint(40, 120))),
                "n": rng.randint(0, 99), "r": rng.choices(range(10000), k=rng.randint(0, 3))}

    def __call__(self, i):
        rng = self.rng
        return {
            "id": i,
            "tags": [rng.choice(WORDS) for _ in range(rng.randint(1, 6))],
            "owner": rng.choice(WORDS) + str(rng.randint(0, 99)),
            "scores": [rng.random() for _ in range(rng.randint(2, 8))],
            "root": self.section(rng.randint(1, 3)),
        }


def hook(d):
    return Document(d) if "root" in d else d


class Store:
    """The service: jobs come through a dispatcher (handle), as requests
    come through a framework's layers, each a call from C into Python."""

    def __init__(self, ndocs):
        self.ndocs = ndocs
        self.docs = {}
        self.feed = Generator(4242)
        self.rng = random.Random(99)
        self.next_id = 0
        self.checksum = 0

    def handle(self, job):
        return getattr(self, "job_" + job[0])(*job[1:])

    def job_ingest(self, count):
        """A batch from the feed, through JSON text, into Documents: the
        decoder calls back into Python for every object."""
        raw = list(map(self.feed, range(self.next_id, self.next_id + count)))
        self.next_id += count
        docs = json.loads(json.dumps(raw), object_hook=hook)
        self.docs.update(zip(map(operator.attrgetter("id"), docs), docs))
        return len(docs)

    def job_query(self):
        """Filter, sort, format and aggregate over the whole store."""
        tag = self.rng.choice(WORDS)
        hits = sorted(filter(lambda d: tag in d.tags, self.docs.values()),
                      key=lambda d: (-d.root.chars(), d.id))
        lines = list(map(Document.summary, hits[:2000]))
        by_owner = {}
        for d in self.docs.values():
            by_owner.setdefault(d.owner[:1], []).append(sum(d.scores))
        agg = sorted((k, round(sum(v), 3), len(v)) for k, v in by_owner.items())
        crc = zlib.crc32(("\n".join(lines) + repr(agg)).encode())
        self.checksum = (self.checksum * 1000003 + crc) & 0xFFFFFFFF
        return len(hits)

    def job_expire(self, count):
        """Drop the oldest documents: their objects are freed."""
        for k in sorted(self.docs)[:count]:
            del self.docs[k]
        return count


class Layer:
    """A middleware layer around the dispatcher (accounting, error
    handling): each is a callable object, so each call goes from C
    (slot_tp_call) into the interpreter again, as in a web framework."""

    def __init__(self, name, inner):
        self.name = name
        self.inner = inner
        self.calls = 0

    def __call__(self, job):
        self.calls += 1
        try:
            return self.inner(job)
        except KeyError as e:
            raise RuntimeError("%s: %s" % (self.name, e)) from e


def main():
    ndocs = int(sys.argv[1]) if len(sys.argv) > 1 else 2900
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    sentences()
    store = Store(ndocs)
    batch = 500
    jobs = [("ingest", min(batch, ndocs - i)) for i in range(0, ndocs, batch)]
    for _ in range(rounds):
        jobs += [("query",), ("expire", ndocs // 10), ("ingest", ndocs // 10)]
    app = Layer("errors", store.handle)
    done = sum(map(app, jobs))
    chars = sum(map(lambda d: d.root.chars(), store.docs.values()))
    print("python-malloc docs=%d rounds=%d checksum=%08x live=%d chars=%d jobs=%d"
          % (ndocs, rounds, store.checksum, len(store.docs), chars, done))


if __name__ == "__main__":
    main()
