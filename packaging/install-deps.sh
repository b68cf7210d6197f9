#!/bin/sh
# Installs from Debian's archive what `make install` and `make test-install`
# need and this machine lacks; with the argument `deb`, also what `make deb`
# and `make test-deb` need (dpkg-buildpackage, debhelper, lintian).  Silent,
# and instant, when all is there.
set -eu

missing=
need() { # command package
    command -v "$1" >/dev/null 2>&1 || missing="$missing $2"
}
need cc gcc
need make make
need objdump binutils
need pkg-config pkgconf
need cmake cmake
if [ "${1:-}" = deb ]; then
    need dpkg-buildpackage dpkg-dev
    need dh debhelper
    need lintian lintian
    # dpkg-buildpackage checks that this package is installed.
    dpkg-query -W -f '${Status}' build-essential 2>/dev/null | grep -q ' installed$' ||
        missing="$missing build-essential"
fi
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: please install:$missing (needs root)" >&2
    exit 1
fi
echo "install-deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# $missing is a list of names: split it.
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
