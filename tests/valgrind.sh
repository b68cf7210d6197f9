#!/usr/bin/env bash
# valgrind.sh PROGRAM [ARG...]: run a test program linked with -lhakmem
# under valgrind memcheck, with hakmem's own malloc running: memcheck then
# watches every load and store that hakmem's code makes.  Passes when the
# program passes and memcheck reports no error at all (invalid read/write,
# use of uninitialised values, ...).  Leaks are not errors here: memcheck
# cannot see hakmem's blocks as allocations.
set -u
log=$(mktemp)
trap 'rm -f "$log"' EXIT
rc=0
# By default valgrind also replaces malloc and operator new in a library
# like libhakmem.so; a synonym that matches no library keeps hakmem's.
valgrind --tool=memcheck --error-exitcode=99 --leak-check=no \
	--soname-synonyms=somalloc=no-such-library.so \
	--num-callers=30 --log-file="$log" "$@" || rc=$?
cat "$log"
invalid=$(grep -cE 'Invalid (read|write|free)' "$log")
summary=$(grep -oE 'ERROR SUMMARY: [0-9]+' "$log" | tail -n 1)
echo "checks: 4"
fail=0
if ! grep -q 'total heap usage: 0 allocs' "$log"; then
	echo "FAIL: valgrind's malloc served the program, not hakmem's"
	fail=1
fi
if ((rc != 0)); then
	echo "FAIL: exit status $rc under valgrind"
	fail=1
fi
if ((invalid != 0)); then
	echo "FAIL: $invalid invalid reads/writes/frees"
	fail=1
fi
if [[ $summary != "ERROR SUMMARY: 0" ]]; then
	echo "FAIL: memcheck: ${summary:-no error summary}"
	fail=1
fi
echo "failed: $fail"
exit $fail
