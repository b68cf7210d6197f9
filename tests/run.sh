#!/usr/bin/env bash
# run.sh: run the hakmem test suite (what `make test` calls after building).
#
#   tests/run.sh [--glibc] [--list] [PATTERN...]
#
# Runs every test whose name contains one of the PATTERNs (all without
# one), prints PASS/FAIL/XFAIL per test with its count of checks, keeps each
# test's output in build/tests/logs/, and ends with the totals and the line
# "N passed, N failed, N skipped".  Exits non-zero when any test failed.
#
# --glibc runs the C and C++ test programs against plain glibc instead (no
# hakmem at all): a check of the tests themselves.  Expect failures there
# only where hakmem's contract is stricter than glibc 2.36 (tests/README.md).
#
# Tests run TEST_JOBS at a time (default: one more than the CPUs, since
# many of them sleep or wait for the purger), each reported as it ends;
# a test that changes the whole machine runs alone (run_alone).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
B=$ROOT/build/tests
LIB=$ROOT/build/libhakmem.so
LOGS=$B/logs
TIMEOUT=${TEST_TIMEOUT:-900}
JOBS=${TEST_JOBS:-$(($(nproc) + 1))}

glibc=0 list=0
patterns=()
for arg in "$@"; do
	case $arg in
	--glibc) glibc=1 ;;
	--list) list=1 ;;
	*) patterns+=("$arg") ;;
	esac
done

if ((!list)); then
	rm -rf "$LOGS"
	mkdir -p "$LOGS"
fi
passed=0 failed=0 skipped=0 checks=0 programs=0 fuzz_execs=0
cpu_by_test=()
failed_names=()
suite_start=$SECONDS

selected() {
	((${#patterns[@]} == 0)) && return 0
	local p
	for p in "${patterns[@]}"; do
		[[ $1 == *"$p"* ]] && return 0
	done
	return 1
}

# Sum of the numbers on lines "KEY: N" of a log.
sum_of() {
	awk -v key="$1:" '$1 == key && $2 ~ /^[0-9]+$/ { s += $2 } END { print s + 0 }' "$2"
}

# run NAME [--xfail] COMMAND...: one test, passed when COMMAND exits 0,
# started in the background once fewer than JOBS are running.
# An --xfail test documents a known gap: its failure is reported as XFAIL
# and counted as skipped; if it passes it is reported as XPASS.
declare -A job_name=() job_xfail=() job_log=()
run() {
	local name=$1 xfail=0
	shift
	if [[ ${1:-} == --xfail ]]; then
		xfail=1
		shift
	fi
	selected "$name" || return 0
	if ((list)); then
		echo "$name"
		return 0
	fi
	while ((${#job_name[@]} >= JOBS)); do
		reap_one
	done
	local log=$LOGS/${name//[^A-Za-z0-9_.-]/_}.log
	# In a subshell: a test killed by a signal is reported here, not by
	# bash.  The subshell leaves "STATUS SECONDS CPU-SECONDS" beside the
	# log (CPU: its children's user and system time, from `times`).
	(
		start=$SECONDS rc=0
		(timeout -k 10 "$TIMEOUT" "$@") >"$log" 2>&1 </dev/null || rc=$?
		times >"$log.times" # the builtin, in this shell: a pipe would fork
		echo "$rc $((SECONDS - start)) $(awk 'NR == 2 { printf "%.1f\n", cpu_seconds($1) + cpu_seconds($2) }
			function cpu_seconds(t) { split(t, a, /[ms]/); return a[1] * 60 + a[2] }' "$log.times")" >"$log.rc"
		rm -f "$log.times"
	) &
	job_name[$!]=$name
	job_xfail[$!]=$xfail
	job_log[$!]=$log
}

# run_alone NAME COMMAND...: a test that changes the whole machine (a
# sysctl), run once every other test has ended and before any other starts.
run_alone() {
	selected "$1" || return 0
	((list)) || wait_all
	run "$@"
	((list)) || wait_all
}

wait_all() {
	while ((${#job_name[@]} > 0)); do
		reap_one
	done
}

# Wait for one running test to end and report it.
reap_one() {
	local pid
	wait -n -p pid "${!job_name[@]}"
	local name=${job_name[$pid]} xfail=${job_xfail[$pid]} log=${job_log[$pid]}
	unset "job_name[$pid]" "job_xfail[$pid]" "job_log[$pid]"
	local rc=125 secs=0 cpu=0
	[[ -f $log.rc ]] && read -r rc secs cpu <"$log.rc"
	rm -f "$log.rc"
	cpu_by_test+=("$cpu $name")
	local n_checks n_skips
	n_checks=$(sum_of checks "$log")
	n_skips=$(grep -c '^skip:' "$log")
	checks=$((checks + n_checks))
	programs=$((programs + $(sum_of programs "$log")))
	fuzz_execs=$((fuzz_execs + $(sum_of fuzz-execs "$log")))
	local info="$n_checks checks, ${secs}s, ${cpu}s CPU"
	((n_skips)) && info+=", $n_skips parts skipped"
	if ((rc == 0 && xfail)); then
		echo "XPASS $name ($info): a known gap is fixed; drop --xfail"
		passed=$((passed + 1))
	elif ((rc == 0)); then
		echo "PASS  $name ($info)"
		passed=$((passed + 1))
	elif ((xfail)); then
		echo "XFAIL $name ($info): expected, see the test's comment"
		skipped=$((skipped + 1))
	else
		((rc == 124 || rc == 137)) && info+=", TIMED OUT after ${TIMEOUT}s"
		echo "FAIL  $name (exit $rc, $info); last lines of $log:"
		tail -n 25 "$log" | sed 's/^/    | /'
		failed=$((failed + 1))
		failed_names+=("$name")
	fi
}

# Tools the suite cannot do without; install-test-deps.sh provides them.
require() {
	local tool
	for tool in "$@"; do
		if ! command -v "$tool" >/dev/null; then
			echo "FAIL  setup: '$tool' is not installed (run scripts/install-test-deps.sh)"
			failed=$((failed + 1))
			failed_names+=("setup: $tool")
		fi
	done
}

C_PROGS=$(cd "$ROOT/tests" && ls api/*.c bad/*.c threads/*.c cxx/*.cc | sed 's/\.cc\?$//')

if ((glibc)); then
	# The tests themselves, against glibc: TEST_ALLOCATOR=glibc skips the
	# check that hakmem is in use.
	for p in $C_PROGS; do
		run "$p [glibc]" env TEST_ALLOCATOR=glibc "$B/plain/$p"
	done
else
	((list)) || require clang valgrind python3 perl git gcc g++ sqlite3 redis-server redis-cli sort tar gzip xz
	[[ -f $LIB ]] || { echo "FAIL  setup: $LIB is missing (make lib)"; exit 1; }
	export TEST_ALLOCATOR=hakmem

	# The runs of a program after its first exercise their paths, not the
	# volume: the thread tests do a quarter of their work there, address_limit
	# its three smaller limits and out_of_memory exhausts 256 MiB, not 1 GiB
	# (the preloaded run does it all).
	rerun=(env TEST_SCALE="${TEST_RERUN_SCALE:-25}")

	# 1. Every C and C++ test program, three ways of getting hakmem.
	for p in $C_PROGS; do
		xfail=()
		[[ $p == bad/hardened_xfail ]] && xfail=(--xfail)
		run "$p [preload]" "${xfail[@]}" env LD_PRELOAD="$LIB" "$B/plain/$p"
		run "$p [linked]" "${xfail[@]}" "${rerun[@]}" "$B/linked/$p"
		run "$p [static]" "${xfail[@]}" "${rerun[@]}" "$B/static/$p"
	done

	# 1b. The same programs on the debug build (make debug): hakmem checks
	# its own invariants (HK_ASSERT, the page checker) as they run.
	if [[ -f $ROOT/build/debug/libhakmem.so ]]; then
		for p in $C_PROGS; do
			[[ $p == bad/hardened_xfail ]] && continue
			run "debug/$p" "${rerun[@]}" LD_PRELOAD="$ROOT/build/debug/libhakmem.so" "$B/plain/$p"
		done
		for p in "$B"/debug-tests/*; do
			run "debug/$(basename "$p")" "${rerun[@]}" LD_PRELOAD="$ROOT/build/debug/libhakmem.so" "$p"
		done
	elif ((!list)); then
		echo "FAIL  setup: build/debug/libhakmem.so is missing (make debug)"
		failed=$((failed + 1))
		failed_names+=("setup: debug build")
	fi

	# 1c. The hardened build (make secure): the same programs on it (but the
	# two that expect the default build's report line), bad/hardened_xfail
	# as a test it passes, and the heap-misuse suite (tests/hardened/),
	# which expects its reports there and records what the default catches.
	SECURE_LIB=$ROOT/build/libhakmem-secure.so
	if [[ -f $SECURE_LIB ]]; then
		for p in $C_PROGS; do
			[[ $p == bad/invalid_pointer || $p == bad/medium_large_free ||
			   $p == bad/foreign_free ]] && continue
			run "secure/$p" "${rerun[@]}" HAKMEM_TEST_HARDENED=1 LD_PRELOAD="$SECURE_LIB" "$B/plain/$p"
		done
		hardened=(env HAKMEM_TEST_HARDENED=1)
		run "hardened/misuse [secure preload]" "${hardened[@]}" LD_PRELOAD="$SECURE_LIB" \
			"$B/plain/hardened/misuse"
		run "hardened/misuse [secure static]" "${hardened[@]}" "$B/secure-static/hardened/misuse"
		run "hardened/misuse [default: recorded]" env LD_PRELOAD="$LIB" "$B/plain/hardened/misuse"
		run "secure/api/dlopen" python3 tests/api/dlopen.py "$SECURE_LIB"
	elif ((!list)); then
		echo "FAIL  setup: build/libhakmem-secure.so is missing (make secure)"
		failed=$((failed + 1))
		failed_names+=("setup: hardened build")
	fi

	# Loaded by dlopen into a running program (python3's ctypes): within
	# glibc's static TLS surplus, and serving threads made before it.
	run "api/dlopen" python3 tests/api/dlopen.py "$LIB"

	# Strict overcommit accounting, where this machine lets it be set.
	run_alone "api/strict_overcommit" tests/overcommit.sh "$B" "$LIB"

	# 2. The allocation-heavy programs under the other configurations:
	# each profile, and purging at once (purge paths race with allocation).
	for cfg in HAKMEM_PROFILE=lean HAKMEM_PROFILE=speed \
		"HAKMEM_PURGE_DELAY_MS=0 HAKMEM_HUGE_CACHE=0"; do
		for p in api/calloc api/realloc api/trim api/free_errno api/huge_blocks \
			threads/stress threads/churn threads/thread_exit threads/fork \
			threads/process_end threads/single_threaded; do
			run "config/$p [$cfg]" "${rerun[@]}" $cfg LD_PRELOAD="$LIB" "$B/plain/$p"
		done
	done
	# Idle release under the other profile that promises it.
	run "config/api/idle_release [HAKMEM_PROFILE=lean]" \
		env HAKMEM_PROFILE=lean LD_PRELOAD="$LIB" "$B/plain/api/idle_release"
	# Huge pages where they are off: lean, and HAKMEM_THP=0.
	for cfg in HAKMEM_PROFILE=lean HAKMEM_THP=0; do
		run "config/api/thp [$cfg]" env $cfg LD_PRELOAD="$LIB" "$B/plain/api/thp"
	done


	# 3. The allocator's own code under sanitizers (hak_* names only).
	asan=(env TEST_ALLOCATOR=hak_names TEST_SCALE=50 TEST_NO_RSS=1
		ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
		UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1)
	tsan=(env TEST_ALLOCATOR=hak_names TEST_SCALE=25 TEST_NO_RSS=1
		TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1)
	for p in threads/stress threads/churn threads/thread_exit threads/remote_messages; do
		run "sanitize/asan+ubsan $p" "${asan[@]}" "$B/asan/$p"
		run "sanitize/tsan $p" "${tsan[@]}" TEST_NO_RACY_STATS=1 "$B/tsan/$p"
	done
	run "sanitize/tsan threads/stress [purge at once]" "${tsan[@]}" \
		HAKMEM_PURGE_DELAY_MS=0 HAKMEM_HUGE_CACHE=0 "$B/tsan/threads/stress"

	# 4. libFuzzer: a bounded run (tests/README.md has the long one).
	run "fuzz/hak_ops" tests/fuzz/run.sh "$B/fuzz/fuzz_hak" "${FUZZ_SECONDS:-60}"

	# 5. valgrind memcheck of programs linked with -lhakmem.
	for p in threads/stress threads/churn api/realloc api/calloc api/usable_size \
		api/memalign cxx/operators; do
		run "valgrind $p" env TEST_SCALE=5 TEST_NO_RSS=1 tests/valgrind.sh "$B/linked/$p"
	done

	# 6. Real programs under LD_PRELOAD, output compared with glibc runs.
	for s in tests/programs/*.sh; do
		[[ $s == */lib.sh ]] && continue
		run "programs/$(basename "$s" .sh)" env HAKMEM_LIB="$LIB" "$s"
	done

	# 7. The heap profiler (tests/heap/heap.sh), and programs that must do
	# the same with it on, sampling every 4 KiB so that its paths run all the
	# time (their dumps go to build/tests/heap/profile/).
	for t in sites static small killed interleaved handoff exchange exchange-bulk busy python off grow waves trim slots span; do
		run "heap/$t" tests/heap/heap.sh "$t"
	done
	if ((!list)); then
		rm -rf "$B/heap/profile"
		mkdir -p "$B/heap/profile"
	fi
	heap_on=("${rerun[@]}" HAKMEM_HEAP_PROFILE="$B/heap/profile/p" HAKMEM_HEAP_SAMPLE=4K)
	for p in api/realloc api/calloc api/memalign api/usable_size api/huge_blocks \
		api/early_malloc api/free_sized threads/stress threads/fork threads/churn \
		threads/tls_destructors cxx/operators; do
		run "heap/on $p [preload]" "${heap_on[@]}" LD_PRELOAD="$LIB" "$B/plain/$p"
		run "heap/on $p [static]" "${heap_on[@]}" "$B/static/$p"
	done
	for s in sort tar perl sqlite; do
		run "heap/on programs/$s" "${heap_on[@]}" HAKMEM_LIB="$LIB" "tests/programs/$s.sh"
	done

	# 8. Guard sampling (tests/guard/guarded.c): every block guarded, one in
	# 1000, and off (also on the debug and hardened builds); then test programs that must do the same with one block
	# in 100 guarded.
	for n in 1 1000 0; do
		run "guard/guarded N=$n [preload]" env HAKMEM_GUARD_SAMPLE=$n LD_PRELOAD="$LIB" \
			"$B/guard/guarded"
		run "guard/guarded N=$n [static]" env HAKMEM_GUARD_SAMPLE=$n "$B/guard/guarded-static"
		run "guard/guarded N=$n [debug]" env HAKMEM_GUARD_SAMPLE=$n \
			LD_PRELOAD="$ROOT/build/debug/libhakmem.so" "$B/guard/guarded"
		run "guard/guarded N=$n [secure]" env HAKMEM_GUARD_SAMPLE=$n \
			LD_PRELOAD="$ROOT/build/libhakmem-secure.so" "$B/guard/guarded"
	done
	for p in api/realloc api/calloc api/memalign api/usable_size api/huge_blocks \
		api/free_sized threads/stress threads/fork cxx/operators; do
		run "guard/on $p [preload]" "${rerun[@]}" HAKMEM_GUARD_SAMPLE=100 LD_PRELOAD="$LIB" "$B/plain/$p"
		run "guard/on $p [static]" "${rerun[@]}" HAKMEM_GUARD_SAMPLE=100 "$B/static/$p"
		run "guard/on $p [secure]" "${rerun[@]}" HAKMEM_GUARD_SAMPLE=100 \
			LD_PRELOAD="$ROOT/build/libhakmem-secure.so" "$B/plain/$p"
	done

	# 9. The Debian packages (make deb), checked by lintian and used from a
	# temporary root; skipped where the Debian tools cannot be had.
	run "packaging/deb" packaging/test-deb.sh
fi

((list)) && exit 0
wait_all
total=$((passed + failed + skipped))
echo
echo "tests: $total  checks: $checks  programs compared: $programs  fuzz executions: $fuzz_execs  time: $((SECONDS - suite_start))s"
# Where the machine's time goes (CI's limit is the suite's CPU time over
# its cores): the five tests that took the most.
((${#cpu_by_test[@]})) && printf '%s\n' "${cpu_by_test[@]}" | sort -rn | head -n 5 |
	awk '{ cpu = $1; $1 = ""; printf "%s%s %.1fs", (NR == 1 ? "most CPU:" : ","), $0, cpu } END { print "" }'
for n in "${failed_names[@]}"; do
	echo "FAILED: $n"
done
echo "$passed passed, $failed failed, $skipped skipped"
((failed == 0 && total > 0))
