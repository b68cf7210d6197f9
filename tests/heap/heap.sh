#!/usr/bin/env bash
# heap.sh TEST: the heap profiler's tests (tests/README.md), on the programs
# tests.mk builds in build/tests/heap/.  Each check prints ok or FAIL; the
# counts go to tests/run.sh.
set -u
cd "$(dirname "$0")/../.."
ROOT=$PWD
B=$ROOT/build/tests/heap
LIB=$ROOT/build/libhakmem.so
HAKMEM=$ROOT/bin/hakmem
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-heap.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
checks=0 failed=0

# check WHAT COMMAND...: one check, passed when COMMAND succeeds.
check() {
	local what=$1
	shift
	checks=$((checks + 1))
	if "$@"; then
		echo "ok   $what"
	else
		echo "FAIL $what"
		failed=$((failed + 1))
	fi
}

# The live MiB of function FN in the first table of summary FILE (0: none).
live_mib() {
	awk -v fn="$2" '$0 == "" { exit }
		($2 == "MiB" || $2 == "KiB") && $5 == "blocks" && $6 == fn {
			print ($2 == "KiB" ? $1 / 1024 : $1); found = 1; exit }
		END { if (!found) print 0 }' "$1"
}

# within FILE FN MIB: FN's live bytes in FILE are MIB within 10%.
within() {
	local got
	got=$(live_mib "$1" "$2")
	echo "     $2: $got MiB live, expected $3 MiB"
	awk -v got="$got" -v want="$3" 'BEGIN { d = got - want; exit !(d <= want / 10 && -d <= want / 10) }'
}

absent() {
	[[ $(live_mib "$1" "$2") == 0 ]]
}

# same_output NAME CMD...: CMD prints the same under glibc, hakmem, and
# hakmem with the profiler on (its dumps in $WORK/same).
same_output() {
	local name=$1
	shift
	"$@" >"$WORK/$name.glibc" 2>&1
	LD_PRELOAD=$LIB "$@" >"$WORK/$name.off" 2>&1
	HAKMEM_HEAP_PROFILE=$WORK/same LD_PRELOAD=$LIB "$@" >"$WORK/$name.on" 2>&1
	cmp -s "$WORK/$name.glibc" "$WORK/$name.off" && cmp -s "$WORK/$name.off" "$WORK/$name.on"
}

# misuse_checks MODE WHAT: every allocation a sample, the program's MODE
# then frees a block twice, or inside it: SIGABRT, one line.
misuse_checks() {
	local misuse err rc
	for misuse in double inside; do
		err=$(HAKMEM_HEAP_PROFILE=$WORK/m HAKMEM_HEAP_SAMPLE=1 LD_PRELOAD=$LIB \
			"$B/profiled" "$1" $misuse 2>&1 >/dev/null)
		rc=$?
		check "$2 freed $misuse: SIGABRT, one line" \
			test $rc = 134 -a "$(grep -c 'hakmem: free(): invalid pointer' <<<"$err")" = 1
	done
}

# The three sites: live bytes at the peak within 10% at the default rate,
# only the leak at exit.  $1: how the dumps were made (preload, static).
sites_checks() {
	local peak=$1 exit=$2
	check "site_medium: 1 GiB at the peak" within "$peak" site_medium 1024
	check "site_large: 1 GiB at the peak" within "$peak" site_large 1024
	check "leak_huge: 128 MiB at the peak" within "$peak" leak_huge 128
	check "leak_huge: 128 MiB at exit" within "$exit" leak_huge 128
	check "site_medium and site_large: freed before exit" \
		eval "absent '$exit' site_medium && absent '$exit' site_large"
}

case ${1:-} in
sites)
	check "output: glibc = hakmem = hakmem profiling" same_output sites "$B/profiled" sites
	(cd "$WORK" && "$HAKMEM" heap -o "$WORK/p" -- "$B/profiled" sites) >"$WORK/launcher.out" 2>&1
	cat "$WORK/launcher.out"
	peak=$(echo "$WORK"/p.*.peak.txt)
	exit_=$(echo "$WORK"/p.*.exit.txt)
	check "hakmem heap: summaries of the peak and of the exit" test -f "$peak" -a -f "$exit_"
	sites_checks "$peak" "$exit_"
	check "the launcher printed the leak at exit" \
		grep -q 'still live at exit' "$WORK/launcher.out"
	svg=${peak%.txt}.svg
	check "flame graph: an SVG with the sites and their share on hover" \
		grep -q '<title>site_medium: [0-9.]* MiB, [0-9.]*%</title>' "$svg"
	check "flame graph of the exit: the leak" grep -q '<title>leak_huge' "${exit_%.txt}.svg"
	check "folded stacks: frames from the root, live bytes" \
		grep -q '^_start;.*;main;sites;leak_huge [0-9]*$' "${exit_%.txt}.folded"
	if command -v google-pprof >/dev/null; then
		google-pprof --text "$B/profiled" "${peak%.txt}.heap" >"$WORK/pprof.txt" 2>&1
		cat "$WORK/pprof.txt"
		check "google-pprof --text reads the dump" grep -q 'site_medium' "$WORK/pprof.txt"
	else
		echo "skip: google-pprof is not installed (Debian: google-perftools)"
	fi
	;;
static)
	# Linked in: hakmem's own frames stay in the stacks; the report drops them.
	(cd "$WORK" && HAKMEM_HEAP_PROFILE=$WORK/s "$B/profiled-static" sites)
	"$HAKMEM" heap --report "$WORK"/s.*.peak.heap "$WORK"/s.*.exit.heap
	sites_checks "$(echo "$WORK"/s.*.peak.txt)" "$(echo "$WORK"/s.*.exit.txt)"
	;;
small)
	# The refill path: small blocks, sampled every 32 KiB for precision.
	"$HAKMEM" heap -o "$WORK/p" --sample 32K -- "$B/profiled" small
	check "site_small: 64 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_small 64
	;;
killed)
	# Killed as it peaks (SIGKILL: no exit dump), the program leaves the
	# peak dumps made on the way, held to one a second unless live bytes
	# doubled: the last holds at least half of its 64 MiB.
	HAKMEM_HEAP_PROFILE=$WORK/k HAKMEM_HEAP_SAMPLE=32K LD_PRELOAD=$LIB "$B/profiled" killed >/dev/null
	rc=$?
	check "killed by SIGKILL, no exit dump" test $rc = 137 -a ! -e "$(echo "$WORK"/k.*.exit.heap)"
	"$HAKMEM" heap --report "$WORK"/k.*.peak.heap >/dev/null 2>&1
	got=$(live_mib "$(echo "$WORK"/k.*.peak.txt)" site_small)
	echo "     site_small: $got MiB live in the last peak dump"
	check "site_small: at least 32 MiB in the last peak dump" awk -v got="$got" 'BEGIN { exit !(got >= 32) }'
	;;
interleaved)
	# Small blocks between medium ones, which pass the profiler only at its
	# points: each kind's bytes count toward the same next point.
	"$HAKMEM" heap -o "$WORK/p" --sample 32K -- "$B/profiled" interleaved
	check "site_small: 64 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_small 64
	;;
handoff)
	# Blocks freed by another thread are reused there (remote.c) and
	# counted as they enter its lists, as refills are.
	"$HAKMEM" heap -o "$WORK/p" --sample 32K -- "$B/profiled" handoff
	check "site_reused: 64 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_reused 64
	check "site_handed: none at exit" absent "$(echo "$WORK"/p.*.exit.txt)" site_handed
	;;
exchange)
	# Threads that free each other's blocks as often as their own send
	# every small block to their lists (thread_lists.c), where each is
	# counted as it enters.
	"$HAKMEM" heap -o "$WORK/p" --sample 32K -- "$B/profiled" exchange
	check "site_left: 32 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_left 32
	check "site_right: 32 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_right 32
	;;
exchange-bulk)
	# The same, with each thread freeing what it replaces before it
	# allocates: its lists overflow, and what they give back is uncounted
	# after the counts since the last point are folded in.
	"$HAKMEM" heap -o "$WORK/p" --sample 32K -- "$B/profiled" exchange-bulk
	check "site_left: 32 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_left 32
	check "site_right: 32 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_right 32
	;;
grow)
	# A buffer grown by realloc past the huge size: the kernel moves its
	# pages with the profiler on too (the program counts its page faults),
	# and the profile holds it whole at exit.
	check "output: glibc = hakmem = hakmem profiling" same_output grow "$B/profiled" grow
	"$HAKMEM" heap -o "$WORK/p" -- "$B/profiled" grow >/dev/null
	check "site_grow: 128 MiB at exit" within "$(echo "$WORK"/p.*.exit.txt)" site_grow 128
	;;
waves)
	# Waves of threads whose every block is a sample of 128 KiB, a sample
	# slot (sample_slot.c): each wave's freed blocks serve the next one's,
	# not the first wave's only.
	check "output: glibc = hakmem = hakmem profiling" same_output waves "$B/profiled" waves
	HAKMEM_HEAP_PROFILE=$WORK/w HAKMEM_HEAP_SAMPLE=1 LD_PRELOAD=$LIB "$B/profiled" waves faults
	check "every block a sample: later waves reuse the first's memory" test $? = 0
	;;
trim)
	# The free sample slots' memory goes back with the rest on malloc_trim,
	# and the memory the process held comes back under glibc and hakmem off
	# alike.
	check "output: glibc = hakmem = hakmem profiling" same_output trim "$B/profiled" trim
	HAKMEM_HEAP_PROFILE=$WORK/t LD_PRELOAD=$LIB "$B/profiled" trim
	check "profiling: malloc_trim gives back the free slots" test $? = 0
	;;
slots)
	# Every allocation a sample: the blocks that stand in for them
	# (sample_slot.c) behave as the class's own, from any thread, and a
	# double free or a free inside one is caught.
	check "output: glibc = hakmem = hakmem profiling" same_output slots "$B/profiled" slots
	HAKMEM_HEAP_PROFILE=$WORK/s HAKMEM_HEAP_SAMPLE=1 LD_PRELOAD=$LIB "$B/profiled" slots
	check "every allocation sampled: as unprofiled" test $? = 0
	# Under an address-space limit there are no slots: huge blocks instead.
	(ulimit -v 4194304 && HAKMEM_HEAP_PROFILE=$WORK/s HAKMEM_HEAP_SAMPLE=1 LD_PRELOAD=$LIB \
		"$B/profiled" slots)
	check "every allocation sampled, under ulimit -v 4 GiB: as unprofiled" test $? = 0
	misuse_checks slots "a sampled block"
	;;
span)
	# Every allocation a sample: blocks of 64-512 KiB, a few at a time, stay
	# in their span pages as their own samples (span_page.c): memory as
	# unprofiled, the blocks behave so, a free inside one or a second free
	# is caught, and the profile holds the kept ones only.
	check "output: glibc = hakmem = hakmem profiling" same_output span "$B/profiled" span
	HAKMEM_HEAP_PROFILE=$WORK/s HAKMEM_HEAP_SAMPLE=1 LD_PRELOAD=$LIB "$B/profiled" span
	check "every allocation sampled: as unprofiled" test $? = 0
	"$HAKMEM" heap --report "$WORK"/s.*.exit.heap >/dev/null 2>&1
	exit_=$(echo "$WORK"/s.*.exit.txt)
	check "site_span_kept: six runs of 311,296 bytes at exit" within "$exit_" site_span_kept 1.781
	check "site_span_handed (freed by another thread) and site_span_churn: none at exit" \
		eval "absent '$exit_' site_span_handed && absent '$exit_' site_span_churn"
	misuse_checks span "a sampled span block"
	;;
busy)
	# Early calls, threads, frees by other threads, fork, SIGUSR2, a call;
	# a sample every 4 KiB, so that the profiler's paths run all the time.
	for how in preload static; do
		bin=$B/profiled
		[[ $how == static ]] && bin=$B/profiled-static
		rm -f "$WORK"/b.*
		if [[ $how == preload ]]; then
			HAKMEM_HEAP_PROFILE=$WORK/b HAKMEM_HEAP_SAMPLE=4K LD_PRELOAD=$LIB "$bin" busy \
				>"$WORK/busy.out"
		else
			HAKMEM_HEAP_PROFILE=$WORK/b HAKMEM_HEAP_SAMPLE=4K "$bin" busy >"$WORK/busy.out"
		fi
		check "[$how] exit 0, the child too, the call's dump written" \
			grep -qx 'busy: child exit 0, dump written' "$WORK/busy.out"
		ls "$WORK"/b.*
		check "[$how] dumps: on SIGUSR2, on the call, at the peak and exit" \
			test "$(ls "$WORK"/b.*.1.heap "$WORK"/b.*.2.heap | wc -l)" = 2
		check "[$how] the forked child wrote its own exit dump" \
			test "$(ls "$WORK"/b.*.exit.heap | wc -l)" = 2
		parent=$(ls "$WORK"/b.*.1.heap)
		parent=${parent%.1.heap}
		"$HAKMEM" heap --report "$parent.peak.heap" >/dev/null 2>&1
		check "[$how] allocations before main are sampled" \
			grep -q ' before_main ' "$parent.peak.txt"
		check "[$how] allocations in threads are sampled" grep -q ' worker ' "$parent.peak.txt"
	done
	;;
python)
	# python3 builds a large structure from a named function (a C function
	# through ctypes: python's own frames are not in C stacks).
	cat >"$WORK/build.py" <<PY
import ctypes
lib = ctypes.CDLL("$B/libbuild_table.so")
lib.build_table.restype = ctypes.c_void_p
table = lib.build_table(65536)
print("built")
PY
	"$HAKMEM" heap -o "$WORK/p" -- python3 "$WORK/build.py"
	exit_=$(echo "$WORK"/p.*.exit.txt)
	check "build_table tops the live bytes at exit" \
		test "$(awk 'NR == 2 { print $6 }' "$exit_")" = build_table
	check "build_table: 64 MiB" within "$exit_" build_table 64
	;;
off)
	check "off: no SIGUSR2 handler [preload]" \
		test "$(LD_PRELOAD=$LIB "$B/profiled" signal)" = "SIGUSR2: default"
	check "off: no SIGUSR2 handler [static]" \
		test "$("$B/profiled-static" signal)" = "SIGUSR2: default"
	check "on: a SIGUSR2 handler" test "$(HAKMEM_HEAP_PROFILE=$WORK/o LD_PRELOAD=$LIB \
		"$B/profiled" signal)" = "SIGUSR2: handled"
	# hakmem heap ends as its program did: an exit status, or its signal.
	check "hakmem heap: the program's exit status" test "$(python3 -c '
import subprocess, sys
print(subprocess.run(sys.argv[1:], capture_output=True).returncode)' \
		"$HAKMEM" heap -o "$WORK/s" -- sh -c 'exit 3')" = 3
	check "hakmem heap: the signal that killed the program" test "$(python3 -c '
import subprocess, sys
print(subprocess.run(sys.argv[1:], capture_output=True).returncode)' \
		"$HAKMEM" heap -o "$WORK/s" -- sh -c 'kill -TERM $$')" = -15
	;;
*)
	echo "usage: tests/heap/heap.sh sites|static|small|interleaved|handoff|exchange|exchange-bulk|busy|python|off|trim|slots|span" >&2
	exit 2
	;;
esac
echo "checks: $checks"
echo "failed: $failed"
((failed == 0))
