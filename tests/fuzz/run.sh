#!/usr/bin/env bash
# run.sh FUZZER SECONDS [LIBFUZZER-OPTION...]: a bounded libFuzzer run of
# fuzz_hak that starts from the checked-in seeds, with a fixed random seed.
# Prints "fuzz-execs: N" for tests/run.sh.  Crashing inputs are saved in
# build/tests/fuzz/ (see tests/README.md to replay one).
set -u
fuzzer=$1 seconds=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
out=$(dirname "$fuzzer")
corpus=$out/corpus
mkdir -p "$corpus"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
# -rss_limit_mb: hakmem's memory is mmap'd, outside libFuzzer's malloc
# accounting, and up to 256 MiB of blocks are live at once.
"$fuzzer" -seed=1 -max_total_time="$seconds" -timeout=60 -rss_limit_mb=4096 \
	-max_len=4096 -print_final_stats=1 -artifact_prefix="$out/" "$@" \
	"$corpus" "$here/seeds" >"$log" 2>&1 || rc=$?
grep -vE '^#[0-9]+.*(NEW|REDUCE|pulse)' "$log" | tail -n 40
execs=$(awk '/stat::number_of_executed_units:/ { print $2 }' "$log")
echo "fuzz-execs: ${execs:-0}"
if ((rc != 0)); then
	echo "FAIL: the fuzzer stopped with status $rc"
	exit 1
fi
echo "checks: 1"
