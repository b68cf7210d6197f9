#!/bin/sh
# make test-install: install hakmem into a temporary prefix and use it there
# as a user would: build a program with pkg-config and with CMake, run both,
# run a program through the installed launcher; the same with a multiarch
# LIBDIR; also stage an install with DESTDIR and uninstall it.  Stops at the
# first failure, with status 1.
set -eu

cd "$(dirname "$0")/.."
repo=$(pwd)
packaging/install-deps.sh

make=${MAKE:-make}
version=$(sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$/\1/p' include/hakmem.h)
work=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-test-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
name=test-install
. packaging/test-lib.sh

# --- The default layout: PREFIX/lib ----------------------------------------
prefix=$work/prefix
run "make install" 0 "$make" -s install DESTDIR= PREFIX="$prefix"
for f in bin/hakmem include/hakmem.h lib/libhakmem.so lib/libhakmem.so.0 \
    lib/libhakmem.so."$version" lib/libhakmem.a lib/libhakmem-api.a lib/pkgconfig/hakmem.pc \
    lib/pkgconfig/hakmem-secure.pc \
    lib/libhakmem-secure.so lib/libhakmem-secure.so.0 lib/libhakmem-secure.so."$version" \
    lib/libhakmem-secure.a \
    lib/cmake/hakmem/hakmemConfig.cmake lib/cmake/hakmem/hakmemConfigVersion.cmake \
    share/man/man1/hakmem.1 share/man/man3/hakmem.3; do
    [ -e "$prefix/$f" ] || fail "make install: $f missing"
done
ok "make install PREFIX=... installs every file"
run "hakmem --library --secure" 0 "$prefix/bin/hakmem" --library --secure
has "$out" "$prefix/lib/libhakmem-secure.so.0" ||
    fail "hakmem --library --secure: does not name the installed hardened library"
ok "the launcher finds the installed hardened library"

PKG_CONFIG_PATH="$prefix/lib/pkgconfig" check_pkgconfig prefix "$prefix/lib"
check_cmake prefix "$prefix/lib" -DCMAKE_PREFIX_PATH="$prefix"
check_launcher prefix "$prefix/bin/hakmem" "$prefix/lib/libhakmem.so.0"

run "bin/hakmem in the source tree" 0 bin/hakmem run -- "$work/probe"
has "$out" "LD_PRELOAD=$repo/build/libhakmem.so" ||
    fail "bin/hakmem in the source tree: does not preload build/libhakmem.so"
ok "the launcher works from the source tree"

# --- A multiarch LIBDIR, as a Debian package has it --------------------------
multi=$work/multi
triplet=$(cc -print-multiarch 2>/dev/null || true)
sub=lib/${triplet:-multiarch}
run "make install LIBDIR" 0 "$make" -s install DESTDIR= PREFIX="$multi" LIBDIR="$multi/$sub"
has "$multi/$sub/pkgconfig/hakmem.pc" "libdir=\${prefix}/$sub" ||
    fail "make install LIBDIR: hakmem.pc does not name LIBDIR under the prefix"
PKG_CONFIG_PATH="$multi/$sub/pkgconfig" check_pkgconfig multiarch "$multi/$sub"
# The launcher and the CMake package work where the tree is moved to.
mv "$multi" "$multi-moved"
multi=$multi-moved
check_cmake multiarch "$multi/$sub" -Dhakmem_DIR="$multi/$sub/cmake/hakmem"
check_launcher multiarch "$multi/bin/hakmem" "$multi/$sub/libhakmem.so.0"

# --- DESTDIR and uninstall -------------------------------------------------
stage=$work/stage
for layout in "/opt/hakmem /opt/hakmem/lib" "/usr /usr/$sub"; do
    # shellcheck disable=SC2086 # two words: PREFIX and LIBDIR
    set -- $layout
    run "make install DESTDIR" 0 "$make" -s install DESTDIR="$stage" PREFIX="$1" LIBDIR="$2"
    has "$stage$2/pkgconfig/hakmem.pc" "prefix=$1" ||
        fail "make install DESTDIR: hakmem.pc does not name the final prefix"
    run "make uninstall DESTDIR" 0 "$make" -s uninstall DESTDIR="$stage" PREFIX="$1" LIBDIR="$2"
    left=$(find "$stage" ! -type d)
    [ -z "$left" ] || { echo "$left" >"$out"; fail "make uninstall: files left"; }
    ok "make install DESTDIR=... PREFIX=$1 LIBDIR=$2 stages; make uninstall removes all"
done

echo "test-install: all $passed checks passed"
