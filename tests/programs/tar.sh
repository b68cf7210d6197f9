#!/usr/bin/env bash
# tar.sh: tar, gzip and xz (two threads) with hakmem preloaded create the
# same archives as with glibc and extract them to the same tree.
. "$(dirname "$0")/lib.sh"
programs tar gzip xz

mkdir -p "$WORK/tree"
for i in $(seq 1 280); do
	mkdir -p "$WORK/tree/d$((i % 23))/e$((i % 5))"
	seq 1 $((i * 5)) | sed "s/$/ some text for file $i/" >"$WORK/tree/d$((i % 23))/e$((i % 5))/f$i"
done
opts="--sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner"

compare "tar: create, compress, list, extract" bash -e -c "
tar $opts -C '$WORK' -cf plain.tar tree
md5sum plain.tar | cut -d' ' -f1
gzip -9 -n -c plain.tar | md5sum
xz -T2 -6 -c plain.tar >plain.tar.xz
md5sum plain.tar.xz | cut -d' ' -f1
tar -tvJf plain.tar.xz | md5sum
mkdir out && tar -C out -xJf plain.tar.xz
diff -r '$WORK/tree' out/tree && echo same tree
"

finish
