"""A python3 program that keeps millions of small objects alive.

    PYTHONMALLOC=malloc python3 python-hold.py [ENTRIES]

Builds a dict of ENTRIES (default 200000) entries, each a list holding a
str and a dict of three fields, dumps it as JSON text and loads it back,
keeping both the original and the reloaded copy (about 250 MiB natively
at the default size, some 5 million live malloc blocks with
PYTHONMALLOC=malloc).  Prints "python-hold entries=N checksum=HEX
chars=C", the same under any tracker (the bench sets PYTHONHASHSEED=0).
"""

import hashlib
import json
import sys


def build(n):
    store = {}
    for i in range(n):
        key = "k%07d" % i
        store[key] = ["name-%d-%s" % (i, "x" * (i % 23)),
                      {"id": i, "score": (i * 7919) % 1000 / 10.0,
                       "tags": "t%d" % (i % 97)}]
    return store


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200000
    store = build(n)
    text = json.dumps(store, sort_keys=True)
    again = json.loads(text)
    h = hashlib.sha256(text.encode())
    h.update(str(sum(v[1]["id"] for v in again.values())).encode())
    print("python-hold entries=%d checksum=%s chars=%d" %
          (len(again), h.hexdigest()[:16], len(text)))
    sys.stdout.flush()
    del store, again, text


if __name__ == "__main__":
    main()
