#!/usr/bin/env bash
# python.sh: python3 programs and modules of python's own test suite, with
# hakmem preloaded, must behave exactly as with glibc.
. "$(dirname "$0")/lib.sh"

# Debian's python3 with its test package (libpython3.11-testsuite) first;
# any python3 on PATH that has the test package will do.
PY=
for candidate in /usr/bin/python3 "$(command -v python3)"; do
	if [[ -x $candidate ]] && "$candidate" -c 'import test.support, test.test_dict' 2>/dev/null; then
		PY=$candidate
		break
	fi
done
if [[ -z $PY ]]; then
	echo "FAIL: no python3 with its test package (install libpython3.11-testsuite)"
	exit 1
fi
programs python3
echo "using $PY ($("$PY" --version))"
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1

compare "python: dicts, lists and strings" "$PY" -c '
import hashlib
d = {}
for i in range(300000):
    d["k%d" % (i * 7919 % 300000)] = [i, str(i) * (i % 7), (i, i + 1)]
for i in range(0, 300000, 3):
    del d["k%d" % i]
keys = sorted(d)
s = "".join(keys[::50])
print(len(d), len(keys), hashlib.sha256(s.encode()).hexdigest())
words = ("alpha beta gamma delta " * 50000).split()
print(len(words), sum(map(len, words)), " ".join(sorted(set(words))))
'

compare "python: json round trip" "$PY" -c '
import json, hashlib
data = [{"id": i, "name": "item%d" % i, "tags": ["t%d" % j for j in range(i % 13)],
         "nested": {"x": i / 3, "y": [None, True, False, "s" * (i % 100)]}} for i in range(60000)]
text = json.dumps(data, sort_keys=True)
back = json.loads(text)
print(len(text), back == data, hashlib.md5(text.encode()).hexdigest())
'

compare "python: threads passing objects" "$PY" -c '
import threading, queue
q = queue.Queue(maxsize=1000)
out = []
def producer(k):
    for i in range(30000):
        q.put([k, i, "x" * (i % 300), bytes(i % 1000)])
def consumer():
    total = 0
    while True:
        item = q.get()
        if item is None:
            break
        total += item[1] + len(item[2]) + len(item[3])
    out.append(total)
ps = [threading.Thread(target=producer, args=(k,)) for k in range(4)]
cs = [threading.Thread(target=consumer) for _ in range(3)]
for t in ps + cs: t.start()
for t in ps: t.join()
for _ in cs: q.put(None)
for t in cs: t.join()
print(sum(out))
'

compare "python: garbage cycles and big integers" "$PY" -c '
import gc, sys
sys.set_int_max_str_digits(0)
class Node:
    def __init__(self, v): self.v, self.peer = v, None
for r in range(20):
    nodes = [Node(i) for i in range(20000)]
    for a, b in zip(nodes, nodes[1:] + nodes[:1]): a.peer = b
    del nodes
    gc.collect()
x = 3 ** 200000
print(len(str(x)), str(x)[:30], str(x)[-30:])
'

compare "python: zlib, re and multiprocessing (fork)" "$PY" -c '
import zlib, re, multiprocessing as mp
blob = b"".join(b"line %d of some compressible text\n" % i for i in range(400000))
z = zlib.compress(blob, 6)
print(len(blob), zlib.decompress(z) == blob)
text = blob.decode()
print(len(re.findall(r"line (\d+)7 of", text)), re.sub(r"\d+", "#", text[:200]))
def work(n): return sum(i * i for i in range(n))
if __name__ == "__main__":
    with mp.get_context("fork").Pool(2) as pool:
        print(pool.map(work, range(0, 200000, 20000)))
'

# Python's own tests: the verdict and the number of tests run must match.
modules="test_dict test_list test_set test_json test_re test_bytes
	test_collections test_gc test_weakref test_thread test_unicode"
summary() {
	"$@" 2>&1 | grep -E 'tests? OK|tests? failed|Tests result|^Result' |
		sed -E 's/ in [0-9.]+ (sec|min).*//'
}
compare "python: its own test suite ($(echo $modules))" \
	bash -c "$(declare -f summary); summary \"\$@\"" summary "$PY" -m test -j1 $modules

# test_threading forks from threads, ends processes with pthread_exit and
# waits for children that must end by themselves: about 11 s under glibc.
# A process kept alive by an allocator's thread shows as a timeout here.
compare "python: test_threading (fork from a thread, process end)" \
	timeout -k 5 120 bash -c "$(declare -f summary); summary \"\$@\"" summary \
	"$PY" -m test -j1 test_threading

finish
