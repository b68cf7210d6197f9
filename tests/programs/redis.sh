#!/usr/bin/env bash
# redis.sh: redis-server with hakmem preloaded holds the same data as with
# its own allocator (Debian's build links jemalloc, whose malloc and free
# hakmem replaces), through the paths that move blocks between threads and
# processes: I/O threads, deletes and flushes freed on redis's background
# thread (lazyfree), an RDB written by a forked child and loaded back.
. "$(dirname "$0")/lib.sh"
programs redis-server redis-cli

# A fixed stream of commands (RESP): strings, lists, sets, hashes and sorted
# sets of 16 B to 256 KiB values, appended to, trimmed, overwritten and
# deleted at random; the aggregates grow past redis's lazyfree threshold
# (64 elements), so that deleting them frees on its background thread.
python3 - >"$WORK/commands.resp" <<'EOF'
import random, sys
r = random.Random(42)
out = sys.stdout.buffer
def cmd(*args):
    args = [a if isinstance(a, bytes) else str(a).encode() for a in args]
    out.write(b"*%d\r\n" % len(args) + b"".join(b"$%d\r\n%s\r\n" % (len(a), a) for a in args))
def value():
    u = r.random()
    n = r.randint(16, 100) if u < 0.7 else r.randint(101, 8192) if u < 0.98 else r.randint(8193, 262144)
    return bytes([97 + r.randrange(26)]) * n
for i in range(60000):
    k, op = r.randrange(4000), r.random()
    if op < 0.20: cmd("SET", "s%d" % k, value())
    elif op < 0.27: cmd("APPEND", "s%d" % k, value())
    elif op < 0.32: cmd("SETRANGE", "s%d" % k, r.randrange(300), value()[:200])
    elif op < 0.44: cmd("RPUSH", "l%d" % (k % 300), value())
    elif op < 0.47: cmd("LTRIM", "l%d" % (k % 300), r.randrange(20), -1)
    elif op < 0.57: cmd("SADD", "t%d" % (k % 300), r.randrange(50000))
    elif op < 0.67: cmd("HSET", "h%d" % (k % 300), "f%d" % r.randrange(400), value())
    elif op < 0.77: cmd("ZADD", "z%d" % (k % 300), r.randrange(10000), "m%d" % r.randrange(3000))
    elif op < 0.85: cmd("DEL", "s%d" % k)
    elif op < 0.90: cmd("SREM", "t%d" % (k % 300), r.randrange(50000))
    elif op < 0.95: cmd("HDEL", "h%d" % (k % 300), "f%d" % r.randrange(400))
    elif op < 0.98: cmd("UNLINK", "l%d" % (k % 300))
    else: cmd("DEL", "h%d" % (k % 300), "z%d" % (k % 300))
EOF

# The server listens on a socket in the run's directory only (no port: tests
# run side by side), and is shut down by the script; a server left behind
# by a failed step is killed on the way out.
compare "redis: commands, digests, RDB through a fork, lazy frees" bash -e -c '
cli() { redis-cli -s "$PWD/redis.sock" "$@"; }
redis-server --port 0 --unixsocket "$PWD/redis.sock" --dir "$PWD" --save "" \
	--appendonly no --enable-debug-command yes --io-threads 2 --io-threads-do-reads yes \
	--lazyfree-lazy-user-del yes --lazyfree-lazy-user-flush yes \
	--daemonize yes --pidfile "$PWD/redis.pid" --logfile "$PWD/redis.log"
trap "kill \$(cat redis.pid 2>/dev/null) 2>/dev/null || true" EXIT
for i in $(seq 100); do cli ping >/dev/null 2>&1 && break; sleep 0.1; done
cli --pipe <"$1" | tail -n 1
echo "keys: $(cli dbsize)"
echo "digest: $(cli debug digest)"
cli debug populate 100000 pop 64 >/dev/null
echo "keys: $(cli dbsize)"
before=$(cli debug digest)
cli bgsave >/dev/null
for i in $(seq 300); do
	[[ $(cli info persistence | tr -d "\r" | grep -c "^rdb_bgsave_in_progress:0") == 1 ]] && break
	sleep 0.1
done
echo "bgsave: $(cli info persistence | tr -d "\r" | grep "^rdb_last_bgsave_status:")"
cli flushall async >/dev/null
echo "keys after flush: $(cli dbsize)"
cli debug reload nosave >/dev/null
echo "keys from the RDB the child wrote: $(cli dbsize)"
echo "same digest: $([[ $(cli debug digest) == "$before" ]] && echo yes || echo no)"
cli debug reload >/dev/null
echo "same digest after a reload in place: $([[ $(cli debug digest) == "$before" ]] && echo yes || echo no)"
cli shutdown nosave >/dev/null 2>&1 || true
for i in $(seq 100); do [[ -e redis.pid ]] || break; kill -0 $(cat redis.pid) 2>/dev/null || break; sleep 0.1; done
! grep -iE "crash|assert|panic|corrupt" redis.log
' sh "$WORK/commands.resp"

finish
