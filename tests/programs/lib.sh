# lib.sh: sourced by the real-program tests.  compare runs a command once
# under glibc and once with hakmem preloaded, each in a fresh directory, and
# requires the same stdout, stderr and exit status.  The scripts end with
# `finish`, which prints the counts that tests/run.sh adds up.
set -u
: "${HAKMEM_LIB:?HAKMEM_LIB must name libhakmem.so}"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-programs.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
n_checks=0 n_failed=0
declare -A seen_programs=()

# Fixed settings that programs read, so that both runs see the same world.
export LC_ALL=C TZ=UTC HOME=$WORK/home
mkdir -p "$HOME"

# programs NAME...: record which real programs this script exercises.
programs() {
	local p
	for p in "$@"; do seen_programs[$p]=1; done
}

# run_one ALLOCATOR DIR CMD...: run CMD in DIR, outputs into DIR.out/err/rc.
run_one() {
	local alloc=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	local rc=0
	if [[ $alloc == hakmem ]]; then
		# The shell checks that hakmem really got loaded, then becomes CMD
		# with LD_PRELOAD still set for it and everything it starts.
		(cd "$dir" && LD_PRELOAD=$HAKMEM_LIB exec sh -c \
			'grep -q libhakmem /proc/$$/maps || exit 97; exec "$@"' sh "$@") \
			>"$dir.out" 2>"$dir.err" || rc=$?
	else
		(cd "$dir" && exec "$@") >"$dir.out" 2>"$dir.err" || rc=$?
	fi
	echo "$rc" >"$dir.rc"
	# Paths of the run directory differ between the two runs.
	sed -i "s|$dir|<dir>|g" "$dir.out" "$dir.err"
}

# compare NAME CMD...: one check, CMD's behaviour under hakmem == glibc.
compare() {
	local name=$1
	shift
	n_checks=$((n_checks + 1))
	local base=$WORK/run$n_checks
	run_one glibc "$base-glibc" "$@"
	run_one hakmem "$base-hakmem" "$@"
	local what ok=1
	if [[ $(cat "$base-glibc.rc") != 0 ]]; then
		ok=0
		echo "FAIL $name: the reference run under glibc failed (a broken test):"
		head -n 15 "$base-glibc.err" | sed 's/^/    /'
	fi
	for what in rc out err; do
		if ! cmp -s "$base-glibc.$what" "$base-hakmem.$what"; then
			ok=0
			echo "FAIL $name: $what differs (glibc vs hakmem):"
			diff "$base-glibc.$what" "$base-hakmem.$what" | head -n 15 | sed 's/^/    /'
		fi
	done
	if ((ok)); then
		echo "ok   $name (exit $(cat "$base-glibc.rc"), $(wc -c <"$base-glibc.out") bytes of output)"
	else
		n_failed=$((n_failed + 1))
	fi
}

finish() {
	echo "programs: ${#seen_programs[@]} (${!seen_programs[*]})"
	echo "checks: $n_checks"
	echo "failed: $n_failed"
	((n_failed == 0))
	exit
}
