#!/usr/bin/env bash
# sort.sh: sort with hakmem preloaded, on a large file and with a small
# buffer (temporary files, merge passes, two threads), gives the same
# output as with glibc.
. "$(dirname "$0")/lib.sh"
programs sort

# About 40 MB of lines with repeated keys, generated once for both runs.
awk 'BEGIN { srand(1); for (i = 0; i < 1000000; i++)
	printf "%d %s-%d %.4f\n", int(rand() * 100000), (rand() < 0.5 ? "alpha" : "beta"), i % 9973, rand() }' \
	>"$WORK/input.txt"

compare "sort: default keys, 8 MiB buffer, 2 threads" bash -e -c "
sort -S 8M --parallel=2 -T . '$WORK/input.txt' | md5sum
sort -S 8M --parallel=2 -T . -n -k1,1 -k3,3r -s '$WORK/input.txt' | md5sum
sort -u -t' ' -k2,2 '$WORK/input.txt' | md5sum
sort -S 64M -k4,4g '$WORK/input.txt' | tail -n 3
"

finish
