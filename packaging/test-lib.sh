# shellcheck shell=sh disable=SC2154 # $name, $version, $work: set by the sourcing script
# Sourced by test-install.sh and test-deb.sh: the way they report, and the
# checks both make of an installed hakmem (pkg-config, CMake, the launcher).
# The sourcing script sets $name (its name in messages), $version (hakmem's)
# and $work (an empty temporary directory it removes at exit), and runs from
# the source tree.  The functions' own variables start with c_; they leave
# $work/probe, a program that knows nothing of hakmem, for later checks.

out=$work/out
err=$work/err
passed=0

ok() {
    passed=$((passed + 1))
    echo "$name: ok   $1"
}

fail() {
    echo "$name: FAIL $1" >&2
    for f in "$out" "$err"; do
        if [ -s "$f" ]; then sed 's/^/    | /' "$f" >&2; fi
    done
    exit 1
}

# run WHAT STATUS COMMAND...: COMMAND must exit with STATUS; its output goes
# to $out and $err for the checks that follow.
run() {
    what=$1 want=$2
    shift 2
    status=0
    "$@" >"$out" 2>"$err" || status=$?
    [ "$status" -eq "$want" ] || fail "$what (exit status $status, not $want)"
}

# has FILE TEXT: FILE holds TEXT (a fixed string).
has() {
    grep -qF -- "$2" "$1"
}

# check_pkgconfig TAG LIBDIR: with pkg-config set up by the caller
# (PKG_CONFIG_PATH or PKG_CONFIG_LIBDIR, and PKG_CONFIG_SYSROOT_DIR),
# packaging/test/consumer.c builds and runs on the libhakmem of LIBDIR.
check_pkgconfig() {
    run "$1: pkg-config" 0 pkg-config --modversion hakmem
    has "$out" "$version" || fail "$1: pkg-config --modversion hakmem: not $version"
    run "$1: pkg-config --static" 0 pkg-config --static --libs hakmem
    has "$out" "-lpthread" || fail "$1: pkg-config --static --libs hakmem: no -lpthread"
    # Word splitting of pkg-config's output is wanted here.
    # shellcheck disable=SC2046
    run "$1: cc with pkg-config" 0 cc packaging/test/consumer.c \
        $(pkg-config --cflags --libs hakmem) -ldl -o "$work/consumer-$1"
    run "$1: pkg-config program" 0 env LD_LIBRARY_PATH="$2" "$work/consumer-$1"
    has "$out" "malloc from $2/libhakmem.so" ||
        fail "$1: pkg-config program: malloc not from $2/libhakmem.so*"
    ok "$1: pkg-config --cflags --libs hakmem: program builds, runs on hakmem"
    run "$1: pkg-config hakmem-secure" 0 pkg-config --modversion hakmem-secure
    has "$out" "$version" || fail "$1: pkg-config --modversion hakmem-secure: not $version"
    # shellcheck disable=SC2046
    run "$1: cc with pkg-config hakmem-secure" 0 cc packaging/test/consumer.c \
        $(pkg-config --cflags --libs hakmem-secure) -ldl -o "$work/consumer-secure-$1"
    run "$1: pkg-config hakmem-secure program" 0 env LD_LIBRARY_PATH="$2" \
        "$work/consumer-secure-$1"
    has "$out" "malloc from $2/libhakmem-secure.so" ||
        fail "$1: pkg-config hakmem-secure program: malloc not from $2/libhakmem-secure.so*"
    ok "$1: pkg-config --cflags --libs hakmem-secure: program builds, runs on the hardened build"
}

# check_cmake TAG LIBDIR CMAKE-ARGUMENT...: packaging/test/ configured with
# the arguments (which find hakmem), built, and its two programs run on the
# libhakmem of LIBDIR and on the archive linked in.
check_cmake() {
    c_tag=$1 c_libdir=$2
    shift 2
    run "$c_tag: cmake configure" 0 cmake -S packaging/test -B "$work/cmake-$c_tag" \
        -DCMAKE_BUILD_TYPE=Release "$@"
    run "$c_tag: cmake build" 0 cmake --build "$work/cmake-$c_tag"
    run "$c_tag: CMake program, hakmem::hakmem" 0 "$work/cmake-$c_tag/consumer-shared"
    has "$out" "malloc from $c_libdir/libhakmem.so" ||
        fail "$c_tag: CMake program, hakmem::hakmem: malloc not from $c_libdir/libhakmem.so*"
    run "$c_tag: CMake program, hakmem::static" 0 "$work/cmake-$c_tag/consumer-static"
    has "$out" "malloc from $work/cmake-$c_tag/consumer-static" ||
        fail "$c_tag: CMake program, hakmem::static: malloc not linked in"
    ok "$c_tag: find_package(hakmem): hakmem::hakmem and hakmem::static programs run on hakmem"
    run "$c_tag: CMake program, hakmem::secure" 0 "$work/cmake-$c_tag/consumer-secure"
    has "$out" "malloc from $c_libdir/libhakmem-secure.so" ||
        fail "$c_tag: CMake program, hakmem::secure: malloc not from $c_libdir/libhakmem-secure.so*"
    run "$c_tag: CMake program, hakmem::secure_static" 0 "$work/cmake-$c_tag/consumer-secure-static"
    has "$out" "malloc from $work/cmake-$c_tag/consumer-secure-static" ||
        fail "$c_tag: CMake program, hakmem::secure_static: malloc not linked in"
    ok "$c_tag: hakmem::secure and hakmem::secure_static programs run on the hardened build"
}

# check_launcher TAG HAKMEM LIB: the launcher HAKMEM preloads LIB into a
# program that knows nothing of hakmem, and behaves as documented.
check_launcher() {
    c_tag=$1 c_hakmem=$2 c_lib=$3
    probe=$work/probe
    [ -x "$probe" ] || run "cc probe" 0 cc packaging/test/probe.c -ldl -o "$probe"
    run "probe without hakmem" 100 "$probe"

    run "$c_tag: hakmem run" 0 "$c_hakmem" run -- "$probe"
    has "$out" "malloc served by hakmem" || fail "$c_tag: hakmem run: not served by hakmem"
    has "$out" "LD_PRELOAD=$c_lib" || fail "$c_tag: hakmem run: does not preload $c_lib"
    ok "$c_tag: hakmem run -- prog: the program runs on $c_lib"

    run "$c_tag: hakmem run, exit status" 7 "$c_hakmem" run -- "$probe" 7
    run "$c_tag: hakmem run, killed" 143 "$c_hakmem" run -- sh -c 'kill -TERM $$'
    run "$c_tag: hakmem run, no such program" 127 "$c_hakmem" run -- "$work/no-such-program"
    ok "$c_tag: hakmem run: the program's exit status, or its signal, comes back"

    run "$c_tag: hakmem run --profile" 0 "$c_hakmem" run --profile lean -- "$probe"
    has "$out" "HAKMEM_PROFILE=lean" || fail "$c_tag: hakmem run --profile lean: not set"
    run "$c_tag: hakmem run --profile bad" 2 "$c_hakmem" run --profile fastest -- "$probe"
    ok "$c_tag: hakmem run --profile: sets HAKMEM_PROFILE, refuses unknown profiles"

    [ -e "$work/empty.so" ] ||
        run "cc empty.so" 0 cc -shared -fPIC -x c /dev/null -o "$work/empty.so"
    run "$c_tag: hakmem run, LD_PRELOAD" 0 env LD_PRELOAD="$work/empty.so" \
        "$c_hakmem" run -- "$probe"
    has "$out" "LD_PRELOAD=$c_lib:$work/empty.so" ||
        fail "$c_tag: hakmem run: LD_PRELOAD not prepended to"
    ok "$c_tag: hakmem run: prepends to LD_PRELOAD"

    run "$c_tag: hakmem stats" 0 "$c_hakmem" stats -- "$probe"
    has "$out" "malloc served by hakmem" || fail "$c_tag: hakmem stats: not served by hakmem"
    has "$err" "hakmem $version statistics" || fail "$c_tag: hakmem stats: no statistics on stderr"
    run "$c_tag: hakmem stats --json" 0 "$c_hakmem" stats --json -- "$probe"
    if command -v python3 >/dev/null; then
        python3 -c 'import json, sys; json.load(sys.stdin)["heaps"]' <"$err" ||
            fail "$c_tag: hakmem stats --json: stderr is not the statistics in JSON"
    else
        has "$err" '"heaps":' || fail "$c_tag: hakmem stats --json: no JSON statistics"
    fi
    ok "$c_tag: hakmem stats [--json] -- prog: statistics on stderr at exit"

    run "$c_tag: hakmem --version" 0 "$c_hakmem" --version
    [ "$(cat "$out")" = "hakmem $version" ] || fail "$c_tag: hakmem --version: not 'hakmem $version'"
    run "$c_tag: hakmem --help" 0 "$c_hakmem" --help
    has "$out" "usage: hakmem run" || fail "$c_tag: hakmem --help: no usage"
    run "$c_tag: hakmem (no arguments)" 2 "$c_hakmem"
    run "$c_tag: hakmem --library" 0 "$c_hakmem" --library
    [ "$(cat "$out")" = "$c_lib" ] || fail "$c_tag: hakmem --library: not $c_lib"
    ok "$c_tag: hakmem --version, --help, --library"

    ln -sf "$c_hakmem" "$work/hakmem-link"
    run "$c_tag: hakmem through a symlink" 0 "$work/hakmem-link" run -- "$probe"
    has "$out" "LD_PRELOAD=$c_lib" || fail "$c_tag: hakmem through a symlink: wrong library"
    ok "$c_tag: the launcher works through a symlink"
}
