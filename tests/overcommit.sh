#!/usr/bin/env bash
# overcommit.sh: under strict overcommit accounting (vm.overcommit_memory=2,
# every writable private byte mapped is charged against a system-wide limit)
# hakmem serves what glibc serves.  With the limit set to 1 GiB above what is
# committed now, the address_limit test's workload (N threads allocating
# 100 B, 30 KB and 700 KB blocks until malloc fails) runs on glibc and on
# hakmem, three times each, the medians compared; then a Python thread pool.
#
# The setting is the machine's, not the process's: it is restored on exit,
# and by a watchdog process should this script be killed.  Where it cannot
# be set (not root, a read-only /proc), the test is skipped.
#
#   tests/overcommit.sh BUILD_TESTS_DIR LIBHAKMEM
set -u
B=$1 LIB=$2
SERVE=$B/plain/api/address_limit
VM=/proc/sys/vm
checks=0 failed=0

finish() {
	echo "checks: $checks"
	echo "failed: $failed"
	((failed == 0))
	exit
}
check() { # check OK MESSAGE
	checks=$((checks + 1))
	if ((!$1)); then
		failed=$((failed + 1))
		echo "FAIL $2"
	fi
}

if ((EUID != 0)) || ! [[ -w $VM/overcommit_memory ]]; then
	echo "skip: vm.overcommit_memory cannot be set here"
	finish
fi
saved_mode=$(cat $VM/overcommit_memory) saved_ratio=$(cat $VM/overcommit_ratio)
saved_kbytes=$(cat $VM/overcommit_kbytes)
# overcommit_kbytes and overcommit_ratio clear each other: the one in use
# is restored last.
restore="echo $saved_mode >$VM/overcommit_memory; echo $saved_kbytes >$VM/overcommit_kbytes"
((saved_kbytes == 0)) && restore+="; echo $saved_ratio >$VM/overcommit_ratio"
setsid bash -c "sleep 300; $restore" </dev/null >/dev/null 2>&1 &
watchdog=$!
trap 'eval "$restore"; kill -- -$watchdog 2>/dev/null' EXIT

committed=$(awk '/^Committed_AS:/ { print $2 }' /proc/meminfo)
echo $((committed + 1048576)) >$VM/overcommit_kbytes
if ! echo 2 >$VM/overcommit_memory; then
	echo "skip: vm.overcommit_memory=2 refused"
	finish
fi
echo "vm.overcommit_memory=2, limit $(awk '/^CommitLimit:/ { print $2 }' /proc/meminfo) kB," \
	"committed $committed kB"

# served ALLOCATOR THREADS: the median MiB served of three runs.
served() {
	local env=(env -u LD_PRELOAD) i
	[[ $1 == hakmem ]] && env=(env LD_PRELOAD="$LIB")
	for i in 1 2 3; do
		timeout -k 5 120 "${env[@]}" "$SERVE" --serve "$2" 0 | awk '{ print $5 }'
	done | sort -n | sed -n 2p
}

for threads in 1 8 64 256; do
	g=$(served glibc $threads) h=$(served hakmem $threads)
	echo "$threads threads: glibc ${g:-none} MiB, hakmem ${h:-none} MiB"
	ok=0
	[[ -n $g && -n $h ]] && awk -v g="$g" -v h="$h" 'BEGIN { exit !(h >= 0.95 * g) }' && ok=1
	check $ok "$threads threads: hakmem served ${h:-nothing}, glibc ${g:-nothing} MiB"
done

script='
import concurrent.futures
with concurrent.futures.ThreadPoolExecutor(16) as ex:
    print(sum(ex.map(lambda n: sum(len(bytes(n * 100)) for _ in range(1000)), range(64))))
'
g=$(timeout -k 5 60 env -u LD_PRELOAD python3 -c "$script" 2>&1)
h=$(timeout -k 5 60 env LD_PRELOAD="$LIB" python3 -c "$script" 2>&1)
check $([[ -n $g && $g == "$h" ]] && echo 1 || echo 0) \
	"python3 thread pool: glibc printed '$g', hakmem '$h'"
finish
