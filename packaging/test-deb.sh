#!/bin/sh
# make test-deb (and tests/run.sh, as packaging/deb): build the Debian
# packages with `make deb`, check them with lintian, then use them from a
# temporary root, as installed, without installing anything on this machine:
# each .deb is unpacked there (dpkg -x), a program is built against that
# root with pkg-config and with CMake and run, and the packaged launcher runs
# a program on the packaged library.  Stops at the first failure, with
# status 1.  Prints "skip:" and passes where the Debian tools are missing
# and cannot be installed (no root, or not Debian).
set -eu

cd "$(dirname "$0")/.."
if ! packaging/install-deps.sh deb; then
    echo "skip: no dpkg-buildpackage, debhelper or lintian here, and they cannot be installed"
    exit 0
fi

make=${MAKE:-make}
version=$(sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$/\1/p' include/hakmem.h)
debversion=$(dpkg-parsechangelog -S Version)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)
triplet=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
work=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-test-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
name=test-deb
. packaging/test-lib.sh

# --- Build and lintian -------------------------------------------------------
run "make deb" 0 "$make" -s deb
deb() { # the file of package $1
    echo "build/deb/$1_${debversion}_$arch.deb"
}
for p in libhakmem0 libhakmem-dev hakmem; do
    [ -f "$(deb $p)" ] || fail "make deb: $(deb $p) missing"
done
ok "make deb: libhakmem0, libhakmem-dev and hakmem $debversion in build/deb/"

# Errors and warnings fail (the few overrides are justified in debian/);
# informational and pedantic tags are shown, in the log.
run "lintian" 0 lintian --fail-on error,warning --info --pedantic build/deb/*.deb
sed 's/^/    lintian: /' "$out"
ok "lintian build/deb/*.deb: no error, no warning"

# --- What the packages hold and need -----------------------------------------
lib=usr/lib/$triplet
contents() { # package, then the paths it must hold
    p=$1
    shift
    dpkg-deb -c "$(deb "$p")" >"$work/contents"
    for f in "$@"; do
        grep -q " \./$f\( \|$\)" "$work/contents" || fail "$p: no $f"
    done
}
contents libhakmem0 "$lib/libhakmem.so.$version" "$lib/libhakmem.so.0"
contents libhakmem-dev usr/include/hakmem.h "$lib/libhakmem.so" "$lib/libhakmem.a" \
    "$lib/libhakmem-api.a" "$lib/pkgconfig/hakmem.pc" "$lib/pkgconfig/hakmem-secure.pc" \
    "$lib/libhakmem-secure.so" "$lib/libhakmem-secure.a" "$lib/cmake/hakmem/hakmemConfig.cmake" \
    "$lib/cmake/hakmem/hakmemConfigVersion.cmake" usr/share/man/man3/hakmem.3.gz
contents hakmem usr/bin/hakmem usr/share/man/man1/hakmem.1.gz
ok "each package holds its files, the library in /$lib"

run "libhakmem0 symbols" 0 dpkg-deb -I "$(deb libhakmem0)" symbols
has "$out" "libhakmem.so.0 libhakmem0 #MINVER#" || fail "libhakmem0: no symbols file"
has "$out" " malloc@Base $version" || fail "libhakmem0: symbols file lacks malloc"
for p in libhakmem-dev hakmem; do
    run "$p Depends" 0 dpkg-deb -f "$(deb $p)" Depends
    has "$out" "libhakmem0 (= $debversion)" || fail "$p: does not depend on libhakmem0 (= $debversion)"
done
ok "libhakmem0 has a symbols file; libhakmem-dev and hakmem depend on it"

# --- Used from a root where they are unpacked --------------------------------
root=$work/root
for p in libhakmem0 libhakmem-dev hakmem; do
    dpkg -x "$(deb $p)" "$root"
done
PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root/$lib/pkgconfig \
    check_pkgconfig deb "$root/$lib"
check_cmake deb "$root/$lib" -DCMAKE_PREFIX_PATH="$root/usr"
check_launcher deb "$root/usr/bin/hakmem" "$root/$lib/libhakmem.so.0"

# The launcher needs the runtime package only.
runtime=$work/runtime
for p in libhakmem0 hakmem; do
    dpkg -x "$(deb $p)" "$runtime"
done
run "hakmem run, without libhakmem-dev" 0 "$runtime/usr/bin/hakmem" run -- "$work/probe"
has "$out" "malloc served by hakmem" ||
    fail "hakmem run, without libhakmem-dev: not served by hakmem"
has "$out" "LD_PRELOAD=$runtime/$lib/libhakmem.so.0" ||
    fail "hakmem run, without libhakmem-dev: does not preload the packaged library"
ok "hakmem run works with libhakmem0 and hakmem alone"
run "hakmem run --secure, without libhakmem-dev" 0 "$runtime/usr/bin/hakmem" run --secure -- "$work/probe"
has "$out" "malloc served by hakmem" ||
    fail "hakmem run --secure: not served by hakmem"
has "$out" "LD_PRELOAD=$runtime/$lib/libhakmem-secure.so.0" ||
    fail "hakmem run --secure: does not preload the packaged hardened library"
ok "hakmem run --secure preloads the packaged hardened library"

echo "test-deb: all $passed checks passed"
echo "checks: $passed"
