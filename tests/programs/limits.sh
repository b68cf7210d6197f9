#!/usr/bin/env bash
# limits.sh: real programs under an address-space limit (ulimit -v, as batch
# schedulers and CI sandboxes set it) behave with hakmem preloaded exactly as
# with glibc: they start, use threads, run out of memory with the same
# MemoryError and go on afterwards without hanging.
. "$(dirname "$0")/lib.sh"
programs ls python3 xz

# "${limited[@]}" KiB COMMAND...: COMMAND under `ulimit -v KiB`, bounded in
# time so that a hang shows as a difference instead of stopping the suite.
limited=(timeout -k 5 120 bash -c 'ulimit -v "$0" && exec "$@"')

PY=/usr/bin/python3
export PYTHONHASHSEED=0 PYTHONDONTWRITEBYTECODE=1

# Not `ls -la /`: /proc's link count is the number of processes, which the
# tests running beside this one change between the two runs.
compare "ls under 16 MiB" "${limited[@]}" 16384 ls -la /usr/bin/xz /etc/hostname /usr/share/doc/xz-utils

compare "python3 starts under 64 MiB" "${limited[@]}" 65536 "$PY" -c '
import json, re
print(len(json.dumps({str(i): list(range(i % 50)) for i in range(3000)})))
print(re.sub(r"\d+", "#", "a1b22c333"))
'

# 16 threads that allocate (each starts with a malloc of its own); with a
# fixed reservation per thread a thread failed in its start-up, before
# Thread.start() was told it had started, and start() waited forever.  (Under
# 256 MiB glibc itself hangs so: 16 default stacks and its arenas.)
pool_script='
import concurrent.futures, threading
barrier = threading.Barrier(16)
def work(n):
    barrier.wait()
    data = [bytes(100000) for _ in range(100)]
    return sum(len(d) for d in data) + n
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    print(sum(ex.map(work, range(16))))
'
compare "python3 ThreadPoolExecutor(16) under 2 GB" "${limited[@]}" 2000000 "$PY" -c "$pool_script"

# Out of memory for real: a request beyond the limit, then memory filled
# until MemoryError; freed, the program goes on, threads included.
compare "python3 MemoryError under 256 MiB, then goes on" "${limited[@]}" 262144 "$PY" -c '
import concurrent.futures
try:
    bytearray(1 << 30)
except MemoryError:
    print("1 GiB: MemoryError")
hoard = []
try:
    while True:
        hoard.append(bytearray(1 << 20))
except MemoryError:
    print("filled: MemoryError")
hoard.clear()
hoard = [bytes(300) for _ in range(100000)]
print(len(hoard))
with concurrent.futures.ThreadPoolExecutor(4) as ex:
    print(sum(ex.map(lambda n: len(bytes(n * 1000)), range(64))))
'

# xz with 8 threads: 4 MB of text, eight blocks compressed side by side.
awk 'BEGIN { srand(2); for (i = 0; i < 150000; i++)
	printf "%d line %s %.6f\n", i, (rand() < 0.5 ? "alpha" : "beta"), rand() }' >"$WORK/input.txt"
compare "xz -T8 -3 under 1 GB" "${limited[@]}" 1000000 bash -e -c "
xz -T8 -3 --block-size=512KiB -c '$WORK/input.txt' >out.xz
md5sum <out.xz
xz -d -T8 -c out.xz | md5sum
"

finish
