#!/bin/sh
# make deb: build hakmem's Debian packages (debian/) with dpkg-buildpackage,
# in a copy of the tree under build/deb-src/ so that the tree itself stays
# clean, and put them (with the .buildinfo and .changes) in build/deb/.
set -eu

cd "$(dirname "$0")/.."
packaging/install-deps.sh deb

# The package's upstream version is the header's.
version=$(sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$/\1/p' include/hakmem.h)
debversion=$(dpkg-parsechangelog -S Version)
if [ "${debversion%-*}" != "$version" ]; then
    echo "make deb: debian/changelog is at $debversion but include/hakmem.h at $version:" \
        "add an entry (dch -v $version-1)" >&2
    exit 1
fi

stage=build/deb-src
out=build/deb
rm -rf "$stage" "$out"
mkdir -p "$stage/hakmem-$version" "$out"
# The working tree as git sees it, uncommitted changes included: without
# .git, build/ and what .gitignore names.
tar --exclude-vcs --exclude-vcs-ignores --exclude=./build -cf - . |
    tar -xf - -C "$stage/hakmem-$version"

# Make's variables from a `make deb` command line must not reach the
# package's own make runs.
(cd "$stage/hakmem-$version" &&
    env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL dpkg-buildpackage -b -us -uc -J)
mv "$stage"/*.deb "$stage"/*.buildinfo "$stage"/*.changes "$out"/
rm -rf "$stage"
ls "$out"
