#!/bin/sh
# Installs what `make bench` needs and the machine lacks: the peer allocators
# (mimalloc, jemalloc, tcmalloc), matplotlib for the charts, valgrind for
# instruction counts and strace for system-call counts; with the argument
# `programs`, also the real programs `make bench-programs` runs.  Debian
# packages only; does nothing when all are present.  Needs root to install;
# without it, says what is missing and lets the suite run with what there is.
set -u

PACKAGES="libmimalloc-dev libjemalloc-dev libgoogle-perftools-dev
python3-matplotlib valgrind strace"
if [ "${1:-}" = programs ]; then
    PACKAGES="$PACKAGES python3 sqlite3 lua5.4 perl z3 ghostscript"
fi

missing=""
for pkg in $PACKAGES; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)
    [ "$status" = "install ok installed" ] || missing="$missing $pkg"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "bench: missing packages:$missing (run as root to install them);" \
         "continuing with what is installed" >&2
    exit 0
fi

echo "bench: installing$missing"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq >/dev/null ||
   ! apt-get install -y -qq --no-install-recommends $missing >/dev/null; then
    echo "bench: could not install$missing; continuing without" >&2
fi
exit 0
