#!/usr/bin/env bash
# gcc.sh: gcc and g++ with hakmem preloaded (so cc1, cc1plus, as, collect2
# and ld all run on it) produce the same objects and programs as with glibc.
. "$(dirname "$0")/lib.sh"
programs gcc g++

# A generated C program with many functions, and a template-heavy C++ one.
awk 'BEGIN {
	print "#include <stdio.h>"
	for (i = 0; i < 600; i++)
		printf "static long f%d(long x) { long s = %d; for (int k = 0; k < (x & 7); k++) s = s * 31 + x + k; return s ^ %d; }\n", i, i, i * 7
	print "int main(void) { long t = 0;"
	for (i = 0; i < 600; i++) printf "t += f%d(t + %d);\n", i, i
	print "printf(\"%ld\\n\", t); return 0; }"
}' >"$WORK/big.c"
cat >"$WORK/tmpl.cc" <<'CC'
#include <iostream>
#include <map>
#include <string>
#include <vector>
#include <algorithm>
template <int N> struct fib { static constexpr long v = fib<N - 1>::v + fib<N - 2>::v; };
template <> struct fib<0> { static constexpr long v = 0; };
template <> struct fib<1> { static constexpr long v = 1; };
int main() {
	std::map<std::string, std::vector<int>> m;
	for (int i = 0; i < 100000; i++) m[std::to_string(i % 997)].push_back(i);
	long s = 0;
	for (auto &kv : m) s += std::count_if(kv.second.begin(), kv.second.end(), [](int x) { return x % 3 == 0; });
	std::cout << s << " " << fib<80>::v << "\n";
}
CC

compare "gcc: compile -O2, object and output" bash -e -c "
gcc -O2 -g -fdebug-prefix-map=\$PWD=/build -c '$WORK/big.c' -o big.o
md5sum big.o | cut -d' ' -f1
gcc big.o -o big && ./big
"
compare "g++: compile templates and the standard library" bash -e -c "
g++ -O1 -frandom-seed=1 -c '$WORK/tmpl.cc' -o tmpl.o
md5sum tmpl.o | cut -d' ' -f1
g++ tmpl.o -o tmpl && ./tmpl
"

finish
