# A Python program's allocation pattern: dicts of records built and
# dropped, strings joined and split, a JSON round trip, object graphs with
# cycles for the collector, a sort.  Written for hakmem's bench-programs.
import json
import random

rng = random.Random(42)

# Records in a dict, rebuilt in waves: many small objects of mixed sizes.
index = {}
for wave in range(3):
    for i in range(20000):
        key = "user:%d" % rng.randrange(200000)
        index[key] = {"id": i, "name": "n" * rng.randrange(1, 60),
                      "tags": [rng.randrange(1000) for _ in range(rng.randrange(8))],
                      "score": rng.random()}
    for key in list(index)[::3]:
        del index[key]

# Text: build, split, join, count.
words = [("w%d" % rng.randrange(5000)) * rng.randrange(1, 5) for _ in range(80000)]
text = " ".join(words)
counts = {}
for w in text.split():
    counts[w] = counts.get(w, 0) + 1
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]

# JSON round trip of a nested structure.
doc = [{"k": i, "v": [str(j) * (j % 7) for j in range(i % 20)], "m": {"x": i / 7}}
       for i in range(15000)]
back = json.loads(json.dumps(doc))
assert back == doc


# Object graphs with cycles, left to the cycle collector.
class Node:
    __slots__ = ("value", "peers")

    def __init__(self, value):
        self.value = value
        self.peers = []


for r in range(4):
    nodes = [Node(i) for i in range(15000)]
    for n in nodes:
        n.peers = [nodes[rng.randrange(len(nodes))] for _ in range(3)]
    del nodes

print(len(index), top[0], len(back))
