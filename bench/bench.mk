# Benchmark suite: `make bench`, `make bench-programs`, `make bench-ipo`,
# `make bench-remote`, `make ab A=<rev> B=<rev>`, `make soak DURATION=<s>`.
# See bench/README.md.

BENCH_OUT    := $(BUILD)/bench
BENCH_WARN   := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
BENCH_CFLAGS := -std=c11 -O2 -g $(BENCH_WARN) -D_GNU_SOURCE -pthread \
	-Ibench/common $(CFLAGS)
BENCH_LIBS   := -pthread -ldl -lm

# Every program in bench/workloads/ is built; the suite runs those that
# bench/hakbench/workloads.py lists, with their arguments.
BENCH_NAMES  := $(patsubst bench/workloads/%.c,%,$(wildcard bench/workloads/*.c))
BENCH_BINS   := $(BENCH_NAMES:%=$(BENCH_OUT)/%)
BENCH_OBJS   := $(patsubst bench/common/%.c,$(BENCH_OUT)/obj/%.o,\
	$(wildcard bench/common/*.c))
BENCH_COMMON := $(BENCH_OUT)/libharness.a
BENCH_HDRS   := $(wildcard bench/common/*.h)
BENCH_NOOP   := $(BENCH_OUT)/libnoop_malloc.so
BENCH_PCSAMPLE := $(BENCH_OUT)/libpcsample.so

# Driver options, all optional: QUICK=1 RUNS=N WORKLOADS=a,b ALLOCATORS=x,y
# THREADS=N (the multi-threaded workloads with N threads, on machines with
# more cores)
# PEERS=name=path,... (more allocators to compare, by the path of their .so)
# IPO=1 (callgrind instructions/op) SYSCALLS=1 (strace syscalls/op)
# RSS_TRACE=1 (RSS over time) BENCH_ARGS='...' (any other driver flag).
# Each target passes on the ones it understands.
BENCH_SIZE   = $(if $(QUICK),--quick) $(if $(RUNS),--runs $(RUNS))
BENCH_WL     = $(if $(WORKLOADS),--workloads $(WORKLOADS))
BENCH_AL     = $(if $(ALLOCATORS),--allocators $(ALLOCATORS))
BENCH_EXTRA  = $(if $(IPO),--ipo) $(if $(SYSCALLS),--syscalls) \
	$(if $(RSS_TRACE),--rss-trace)
# Debian's python3, where Debian's matplotlib is installed (a python3 earlier
# in PATH, e.g. from pyenv, would not see it).
# The make command line is recorded in the reports.
BENCH_VARS := QUICK RUNS WORKLOADS THREADS ALLOCATORS PEERS IPO SYSCALLS RSS_TRACE \
	BENCH_ARGS A B DURATION
BENCH_PY = HAKBENCH_MAKE_COMMAND='$(strip make $@ $(foreach v,$(BENCH_VARS),$(if \
	$(filter command line,$(origin $(v))),$(v)=$($(v)))))' \
	HAKBENCH_PEERS='$(PEERS)' \
	$(if $(wildcard /usr/bin/python3),/usr/bin/python3,python3) bench/hakbench.py

.PHONY: bench bench-build bench-deps bench-lib bench-ipo bench-remote ab soak \
	bench-programs

bench-build: $(BENCH_BINS) $(BENCH_NOOP) $(BENCH_PCSAMPLE)

$(BENCH_OUT)/obj/%.o: bench/common/%.c $(BENCH_HDRS) bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) -c $< -o $@

$(BENCH_COMMON): $(BENCH_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(BENCH_OBJS)

$(BENCH_OUT)/%: bench/workloads/%.c $(BENCH_COMMON) $(BENCH_HDRS) bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) $(BENCH_CFLAGS) $< $(BENCH_COMMON) -o $@ $(BENCH_LIBS)

# The floor for instructions per operation: a malloc that does no work.
$(BENCH_NOOP): bench/noop_malloc.c bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g $(BENCH_WARN) -D_GNU_SOURCE -fPIC -shared \
		-fno-builtin -o $@ $<

# Where a program's threads spend their CPU time, for machines without perf
# (bench/pcsample.c).
$(BENCH_PCSAMPLE): bench/pcsample.c bench/bench.mk
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -g $(BENCH_WARN) -D_GNU_SOURCE -fPIC -shared -o $@ $<

bench-deps:
	@sh scripts/install-bench-deps.sh

# hakmem may not build yet: the suite then runs the peers and says so.  The
# hardened build (hakmem-secure) is one more allocator of the suite.
bench-lib:
	@$(MAKE) --no-print-directory lib || \
		echo "bench: 'make lib' failed; hakmem will be reported as failed"
	@$(MAKE) --no-print-directory secure || \
		echo "bench: 'make secure' failed; hakmem-secure will not be run"

bench: bench-deps bench-build bench-lib
	@$(BENCH_PY) run $(BENCH_SIZE) $(BENCH_WL) $(if $(THREADS),--threads $(THREADS)) \
		$(BENCH_AL) $(BENCH_EXTRA) $(BENCH_ARGS)

# Real programs (bench/hakbench/programs.py), timed whole, every allocator;
# WORKLOADS=prog-z3,... picks some.
bench-programs: bench-build bench-lib
	@sh scripts/install-bench-deps.sh programs
	@$(BENCH_PY) run $(BENCH_SIZE) --workloads '$(or $(WORKLOADS),prog-*)' $(BENCH_AL) \
		$(BENCH_ARGS)

# Headline 1: callgrind instructions per op above the no-op floor.
bench-ipo: bench-deps bench-build bench-lib
	@$(BENCH_PY) ipo $(BENCH_WL) $(BENCH_AL) $(BENCH_ARGS)

# Headline 2: 50% remote frees, throughput and RSS over time.
bench-remote: bench-deps bench-build bench-lib
	@$(BENCH_PY) run --workloads xthread-50 --rss-trace --scale 5 $(BENCH_SIZE) \
		$(BENCH_AL) $(BENCH_ARGS)

# A/B of two revisions of libhakmem.so; B defaults to the work tree.  The
# top-level Makefile has its own A (the static library), so only an A given
# on the command line is a revision.
AB_A := $(if $(filter command line,$(origin A)),$(A))
AB_B := $(if $(filter command line,$(origin B)),$(B),WORKTREE)
ab: bench-deps bench-build
	@$(BENCH_PY) ab --a "$(AB_A)" --b "$(AB_B)" $(BENCH_SIZE) $(BENCH_WL) $(BENCH_ARGS)

soak: bench-deps bench-build bench-lib
	@$(BENCH_PY) soak $(if $(DURATION),--duration $(DURATION)) $(if $(QUICK),--quick) \
		$(BENCH_AL) $(BENCH_ARGS)
