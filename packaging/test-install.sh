#!/bin/sh
# make test-install: install hakmem into a temporary prefix and use it there
# as a user would: build a program with pkg-config and with CMake, run both,
# run a program through the installed launcher; also stage an install with
# DESTDIR and uninstall it.  Stops at the first failure, with status 1.
set -eu

cd "$(dirname "$0")/.."
repo=$(pwd)
packaging/install-deps.sh

make=${MAKE:-make}
version=$(sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$/\1/p' include/hakmem.h)
work=$(mktemp -d "${TMPDIR:-/tmp}/hakmem-test-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
out=$work/out
err=$work/err
passed=0

ok() {
    passed=$((passed + 1))
    echo "test-install: ok   $1"
}

fail() {
    echo "test-install: FAIL $1" >&2
    for f in "$out" "$err"; do
        if [ -s "$f" ]; then sed 's/^/    | /' "$f" >&2; fi
    done
    exit 1
}

# run NAME STATUS COMMAND...: COMMAND must exit with STATUS; its output goes
# to $out and $err for the checks that follow.
run() {
    name=$1 want=$2
    shift 2
    status=0
    "$@" >"$out" 2>"$err" || status=$?
    [ "$status" -eq "$want" ] || fail "$name (exit status $status, not $want)"
}

# has FILE TEXT: FILE holds TEXT (a fixed string).
has() {
    grep -qF -- "$2" "$1"
}

# --- Install ---------------------------------------------------------------
run "make install" 0 "$make" -s install DESTDIR= PREFIX="$prefix"
for f in bin/hakmem include/hakmem.h lib/libhakmem.so lib/libhakmem.so."$version" \
    lib/libhakmem.a lib/libhakmem-api.a lib/pkgconfig/hakmem.pc \
    lib/cmake/hakmem/hakmemConfig.cmake lib/cmake/hakmem/hakmemConfigVersion.cmake; do
    [ -e "$prefix/$f" ] || fail "make install: $f missing"
done
ok "make install PREFIX=... installs every file"

# --- pkg-config ------------------------------------------------------------
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
run "pkg-config" 0 pkg-config --modversion hakmem
has "$out" "$version" || fail "pkg-config --modversion hakmem: not $version"
run "pkg-config --static" 0 pkg-config --static --libs hakmem
has "$out" "-lpthread" || fail "pkg-config --static --libs hakmem: no -lpthread"
# Word splitting of pkg-config's output is wanted here.
# shellcheck disable=SC2046
run "cc with pkg-config" 0 cc packaging/test/consumer.c \
    $(pkg-config --cflags --libs hakmem) -ldl -o "$work/consumer-pc"
run "pkg-config program" 0 env LD_LIBRARY_PATH="$prefix/lib" "$work/consumer-pc"
has "$out" "malloc from $prefix/lib/libhakmem.so" ||
    fail "pkg-config program: malloc not from the installed library"
ok "pkg-config --cflags --libs hakmem: program builds, runs on hakmem"

# --- CMake -----------------------------------------------------------------
run "cmake configure" 0 cmake -S packaging/test -B "$work/cmake" \
    -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
run "cmake build" 0 cmake --build "$work/cmake"
run "CMake program, hakmem::hakmem" 0 "$work/cmake/consumer-shared"
has "$out" "malloc from $prefix/lib/libhakmem.so" ||
    fail "CMake program, hakmem::hakmem: malloc not from the installed library"
ok "find_package(hakmem): hakmem::hakmem program builds, runs on hakmem"
run "CMake program, hakmem::static" 0 "$work/cmake/consumer-static"
has "$out" "malloc from $work/cmake/consumer-static" ||
    fail "CMake program, hakmem::static: malloc not linked in"
ok "find_package(hakmem): hakmem::static program builds, runs on hakmem"

# --- The launcher ----------------------------------------------------------
# probe knows nothing of hakmem: only a preload gives it hakmem's malloc.
hakmem=$prefix/bin/hakmem
lib=$prefix/lib/libhakmem.so
run "cc probe" 0 cc packaging/test/probe.c -ldl -o "$work/probe"
run "probe without hakmem" 100 "$work/probe"

run "hakmem run" 0 "$hakmem" run -- "$work/probe"
has "$out" "malloc served by hakmem" || fail "hakmem run: not served by hakmem"
has "$out" "LD_PRELOAD=$lib" || fail "hakmem run: preloads another library"
ok "hakmem run -- prog: the program runs on the installed hakmem"

run "hakmem run, exit status" 7 "$hakmem" run -- "$work/probe" 7
run "hakmem run, killed" 143 "$hakmem" run -- sh -c 'kill -TERM $$'
run "hakmem run, no such program" 127 "$hakmem" run -- "$work/no-such-program"
ok "hakmem run: the program's exit status, or its signal, comes back"

run "hakmem run --profile" 0 "$hakmem" run --profile lean -- "$work/probe"
has "$out" "HAKMEM_PROFILE=lean" || fail "hakmem run --profile lean: not set"
run "hakmem run --profile bad" 2 "$hakmem" run --profile fastest -- "$work/probe"
ok "hakmem run --profile: sets HAKMEM_PROFILE, refuses unknown profiles"

run "cc empty.so" 0 cc -shared -fPIC -x c /dev/null -o "$work/empty.so"
run "hakmem run, LD_PRELOAD" 0 env LD_PRELOAD="$work/empty.so" "$hakmem" run -- "$work/probe"
has "$out" "LD_PRELOAD=$lib:$work/empty.so" || fail "hakmem run: LD_PRELOAD not prepended to"
ok "hakmem run: prepends to LD_PRELOAD"

run "hakmem stats" 0 "$hakmem" stats -- "$work/probe"
has "$out" "malloc served by hakmem" || fail "hakmem stats: not served by hakmem"
has "$err" "hakmem $version statistics" || fail "hakmem stats: no statistics on stderr"
run "hakmem stats --json" 0 "$hakmem" stats --json -- "$work/probe"
if command -v python3 >/dev/null; then
    python3 -c 'import json, sys; json.load(sys.stdin)["heaps"]' <"$err" ||
        fail "hakmem stats --json: stderr is not the statistics in JSON"
else
    has "$err" '"heaps":' || fail "hakmem stats --json: no JSON statistics"
fi
ok "hakmem stats [--json] -- prog: statistics on stderr at exit"

run "hakmem --version" 0 "$hakmem" --version
[ "$(cat "$out")" = "hakmem $version" ] || fail "hakmem --version: not 'hakmem $version'"
run "hakmem --help" 0 "$hakmem" --help
has "$out" "usage: hakmem run" || fail "hakmem --help: no usage"
run "hakmem (no arguments)" 2 "$hakmem"
run "hakmem --library" 0 "$hakmem" --library
[ "$(cat "$out")" = "$lib" ] || fail "hakmem --library: not $lib"
ok "hakmem --version, --help, --library"

ln -s "$hakmem" "$work/hakmem-link"
run "hakmem through a symlink" 0 "$work/hakmem-link" run -- "$work/probe"
has "$out" "LD_PRELOAD=$lib" || fail "hakmem through a symlink: wrong library"
run "bin/hakmem in the source tree" 0 bin/hakmem run -- "$work/probe"
has "$out" "LD_PRELOAD=$repo/build/libhakmem.so" ||
    fail "bin/hakmem in the source tree: does not preload build/libhakmem.so"
ok "the launcher works through a symlink and from the source tree"

# --- DESTDIR and uninstall -------------------------------------------------
stage=$work/stage
run "make install DESTDIR" 0 "$make" -s install DESTDIR="$stage" PREFIX=/opt/hakmem
has "$stage/opt/hakmem/lib/pkgconfig/hakmem.pc" "prefix=/opt/hakmem" ||
    fail "make install DESTDIR: hakmem.pc does not name the final prefix"
run "make uninstall DESTDIR" 0 "$make" -s uninstall DESTDIR="$stage" PREFIX=/opt/hakmem
left=$(find "$stage" ! -type d)
[ -z "$left" ] || { echo "$left" >"$out"; fail "make uninstall: files left"; }
ok "make install DESTDIR=... PREFIX=/opt/hakmem stages; make uninstall removes all"

echo "test-install: all $passed checks passed"
