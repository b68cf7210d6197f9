#!/bin/bash
# The threaded workloads on a lent many-core machine, which can install
# nothing and has no perf: interleaved runs against the peers, then where
# hakmem's threads spend their CPU time (bench/pcsample.c), in one call.
#
# Here:       bench/many_cores.sh prepare
#             builds hakmem and the workloads and copies the peers into
#             build/peers (../shared/peers, and Debian's jemalloc and
#             tcmalloc where installed); more libraries by path, as
#             name=path arguments, are copied too (hakmem variants, say).
# There:      OUT=<dir> bench/many_cores.sh run [threads] [runs] [workloads]
#             (defaults 16, 5, the threaded ones; ALLOCATORS=a,b,... to
#             run only those, by the names the report gives them), with build/libhakmem.so,
#             build/bench and build/peers carried along; leaves in $OUT the
#             driver's report (bench-latest.md, .json), its log, the
#             machine's description and, in pcsample.tgz, a profile of
#             hakmem on each workload: read them here with
#             python3 bench/pcsample.py pc-<workload>.*
set -e
cd "$(dirname "$0")/.."
PEERS=build/peers
THREADED=server,server-retire,xstress,xthread-50,xthread-90,working-set-2t,prodcons,churn

prepare() {
    make -s lib bench-build
    rm -rf build/bench/lib # the driver's copies: it makes them again
    mkdir -p $PEERS
    for f in ../shared/peers/*.so /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 \
             /usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4; do
        [ -e "$f" ] && cp -L "$f" $PEERS/
    done
    for spec in "$@"; do
        cp -L "${spec#*=}" "$PEERS/lib${spec%%=*}.so"
    done
    du -sh build/libhakmem.so build/bench $PEERS
}

# name=path for each library in build/peers but Debian's, which the driver
# finds under their own names when they are installed there.
peer_specs() {
    local specs="" f name
    for f in $PEERS/*.so*; do
        name=$(basename "$f")
        case $name in
        libjemalloc.so.2) name=jemalloc-deb ;;
        libtcmalloc_minimal.so.4) name=tcmalloc-deb ;;
        libsnmallocshim-checks.so) continue ;;
        libsnmallocshim.so) name=snmalloc ;;
        lib*.so) name=${name#lib}; name=${name%.so} ;;
        esac
        specs="$specs${specs:+,}$name=$PWD/$f"
    done
    echo "$specs"
}

run() {
    local threads=${1:-16} runs=${2:-5} workloads=${3:-$THREADED}
    : "${OUT:?OUT must name a directory}"
    { nproc; grep -m1 "model name" /proc/cpuinfo; uname -r; ldd --version | head -1
      cat /sys/kernel/mm/transparent_hugepage/enabled; } > "$OUT/machine.txt" 2>&1
    HAKBENCH_PEERS=$(peer_specs) PYTHONUNBUFFERED=1 python3 bench/hakbench.py run \
        --threads "$threads" --runs "$runs" --workloads "$workloads" \
        ${ALLOCATORS:+--allocators "$ALLOCATORS"} > "$OUT/run.log" 2>&1 || true
    cp bench/results/bench-latest.md bench/results/bench-latest.json "$OUT/" 2>/dev/null || true
    # One profiled run of each workload, at four times its work.
    local dir
    dir=$(mktemp -d)
    python3 - "$threads" "$workloads" <<'EOF' | while read -r name cmd; do
import sys
sys.path.insert(0, "bench")
from hakbench import workloads as w
for x in w.with_threads(w.select(sys.argv[2]), int(sys.argv[1])):
    print(x.name, "build/bench/" + x.binary, " ".join(str(a) for a in x.make_args(4)))
EOF
        # shellcheck disable=SC2086
        PCSAMPLE_OUT="$dir/pc-$name" LD_PRELOAD="$PWD/build/libhakmem.so $PWD/build/bench/libpcsample.so" \
            timeout 120 $cmd > /dev/null 2>&1 || echo "pcsample: $name failed" >> "$OUT/run.log"
    done
    tar czf "$OUT/pcsample.tgz" -C "$dir" .
    rm -rf "$dir"
}

case ${1:-} in
prepare) shift; prepare "$@" ;;
run) shift; run "$@" ;;
*) sed -n '2,16p' "$0"; exit 2 ;;
esac
