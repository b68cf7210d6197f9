#!/usr/bin/env bash
# install-test-deps.sh: install, from Debian's packages, whatever `make test`
# needs and this machine lacks.  Quiet, and quick when all is there.
# Needs root (or sudo) only when something is missing.
set -eu

# Debian package -> a path (glob allowed) that exists once it is installed.
declare -A need=(
	[clang]=/usr/bin/clang
	[libclang-rt-14-dev]='/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a'
	[valgrind]=/usr/bin/valgrind
	[gcc]=/usr/bin/gcc
	[g++]=/usr/bin/g++
	[make]=/usr/bin/make
	[binutils]=/usr/bin/ld
	[python3]=/usr/bin/python3
	[libpython3.11-testsuite]=/usr/lib/python3.11/test/test_dict.py
	[perl]=/usr/bin/perl
	[git]=/usr/bin/git
	[sqlite3]=/usr/bin/sqlite3
	[redis-server]=/usr/bin/redis-server
	[redis-tools]=/usr/bin/redis-cli
	[coreutils]=/usr/bin/sort
	[tar]=/bin/tar
	[gzip]=/bin/gzip
	[xz-utils]=/usr/bin/xz
)

# Wanted, not needed: a test that uses one says `skip:` without it.
declare -A want=(
	[google-perftools]=/usr/bin/google-pprof
)

missing=() optional=()
for pkg in "${!need[@]}"; do
	compgen -G "${need[$pkg]}" >/dev/null || missing+=("$pkg")
done
for pkg in "${!want[@]}"; do
	compgen -G "${want[$pkg]}" >/dev/null || optional+=("$pkg")
done
((${#missing[@]} + ${#optional[@]} == 0)) && exit 0

echo "install-test-deps: installing ${missing[*]} ${optional[*]}"
sudo=
if ((EUID != 0)); then
	if command -v sudo >/dev/null; then
		sudo=sudo
	else
		echo "install-test-deps: not root and no sudo; please install: ${missing[*]} ${optional[*]}" >&2
		((${#missing[@]} == 0)) || exit 1
		exit 0
	fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq >/dev/null || ((${#missing[@]} == 0))
if ((${#missing[@]} > 0)); then
	$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ((${#optional[@]} > 0)); then
	$sudo apt-get install -y -qq --no-install-recommends "${optional[@]}" >/dev/null ||
		echo "install-test-deps: could not install ${optional[*]}; the tests that use it skip"
fi
