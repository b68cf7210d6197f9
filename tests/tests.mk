# Test suite: `make test` installs what the tests need, builds hakmem and the
# test programs, and runs everything through tests/run.sh.
# `make test TESTS=api/` runs only the tests whose name contains "api/".
# `make tests-build` only builds.  See tests/README.md.

T        := $(BUILD)/tests
TEST_CC  ?= gcc
TEST_CXX ?= g++
SAN_CC   ?= clang

# -fno-builtin: the compiler must not fold malloc(SIZE_MAX) to NULL or drop
# a malloc/free pair; the tests are about what the library really does.
TEST_FLAGS    := -O2 -g -pthread -D_GNU_SOURCE -fno-builtin -Itests/lib -Iinclude \
	-Wall -Wextra -Wno-unused-result
TEST_CFLAGS   := -std=gnu11 $(TEST_FLAGS)
TEST_CXXFLAGS := -std=gnu++17 -fno-allocation-dce -fsized-deallocation $(TEST_FLAGS)

# The three ways a program gets hakmem: nothing at link time (LD_PRELOAD at
# run time), -lhakmem, and the static archive.  -rdynamic and -u let a test
# find hak_malloc with dlsym and see every export of the static archive.
LINK_SHARED := -L$(BUILD) -lhakmem -Wl,-rpath,$(abspath $(BUILD))
LINK_STATIC := -rdynamic -Wl,-u,hak_malloc -Wl,-u,free_sized \
	-Wl,-u,free_aligned_sized -Wl,-u,hak_collect $(A)

CHECK_LIB_SRCS := $(wildcard tests/lib/*.c)
CHECK_LIB      := $(T)/libcheck.a
CHECK_LIB_OBJS := $(CHECK_LIB_SRCS:tests/lib/%.c=$(T)/obj/lib/%.o)
TEST_HDRS      := $(wildcard tests/lib/*.h) include/hakmem.h

# Programs run in all three configurations, named group/program.
C_PROGS   := $(patsubst tests/%.c,%,$(wildcard tests/api/*.c tests/bad/*.c tests/threads/*.c))
CXX_PROGS := $(patsubst tests/%.cc,%,$(wildcard tests/cxx/*.cc))
PROGS     := $(C_PROGS) $(CXX_PROGS)
CONFIGS   := plain linked static
PROG_BINS := $(foreach c,$(CONFIGS),$(PROGS:%=$(T)/$(c)/%))

include tests/sanitize.mk

.PHONY: test tests-build tests-deps
# The builds use every CPU (serial, they were about a twelfth of CI's time);
# `make -jN test` is honoured as given.
BUILD_JOBS := $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
test:
	@scripts/install-test-deps.sh
	@$(MAKE) --no-print-directory $(BUILD_JOBS) lib debug secure
	@$(MAKE) --no-print-directory $(BUILD_JOBS) tests-build
	@$(MAKE) --no-print-directory test-install
	@tests/run.sh $(TESTS)

tests-deps:
	@scripts/install-test-deps.sh

# Tests of the debug build's own checks: they reach into the page header
# (-Isrc) and run with build/debug/libhakmem.so preloaded.
DEBUG_TESTS := $(patsubst tests/debug/%.c,$(T)/debug-tests/%,$(wildcard tests/debug/*.c))

# The heap-misuse suite (tests/hardened/): a plain program, preloaded with
# the default or the hardened library, and one linked with the hardened
# archive (make secure).
HARDENED_PROGS := $(patsubst tests/%.c,%,$(wildcard tests/hardened/*.c))
HARDENED_BINS  := $(HARDENED_PROGS:%=$(T)/plain/%) $(HARDENED_PROGS:%=$(T)/secure-static/%)
.SECONDARY: $(HARDENED_PROGS:%=$(T)/obj/%.o)
LINK_SECURE_STATIC := -rdynamic -Wl,-u,hak_malloc -Wl,-u,free_sized \
	-Wl,-u,free_aligned_sized -Wl,-u,hak_collect -Wl,-u,_ZdlPvm -Wl,-u,_ZdaPvm $(SECURE_A)

$(T)/plain/hardened/%: $(T)/obj/hardened/%.o $(CHECK_LIB)
	@mkdir -p $(dir $@)
	$(TEST_CC) -pthread $< $(CHECK_LIB) -o $@
$(T)/secure-static/hardened/%: $(T)/obj/hardened/%.o $(CHECK_LIB) $(SECURE_A)
	@mkdir -p $(dir $@)
	$(TEST_CC) -pthread $< $(CHECK_LIB) $(LINK_SECURE_STATIC) -o $@

# The heap profiler's tests (tests/heap/heap.sh): their program, plain and
# linked with the static archive, and the library python3 loads with ctypes.
HEAP_BINS := $(T)/heap/profiled $(T)/heap/profiled-static $(T)/heap/libbuild_table.so
$(T)/heap/profiled: tests/heap/profiled.c tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) $< -ldl -o $@
$(T)/heap/profiled-static: tests/heap/profiled.c $(A) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) $< $(LINK_STATIC) -ldl -o $@
$(T)/heap/libbuild_table.so: tests/heap/build_table.c tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@

# Guard sampling's test (tests/guard/guarded.c): preloaded (-rdynamic, so
# that the report's dladdr names its functions) and linked statically.
GUARD_BINS := $(T)/guard/guarded $(T)/guard/guarded-static
$(T)/guard/guarded: tests/guard/guarded.c $(CHECK_LIB) $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -DPRELOADED -rdynamic $< $(CHECK_LIB) -o $@
$(T)/guard/guarded-static: tests/guard/guarded.c $(CHECK_LIB) $(A) $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) $< $(CHECK_LIB) $(LINK_STATIC) -o $@

tests-build: $(PROG_BINS) $(SAN_BINS) $(FUZZ_BIN) $(DEBUG_TESTS) $(HARDENED_BINS) $(HEAP_BINS) \
	$(GUARD_BINS)

$(T)/debug-tests/%: tests/debug/%.c $(CHECK_LIB) $(TEST_HDRS) $(HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -Isrc $< $(CHECK_LIB) -o $@

$(T)/obj/lib/%.o: tests/lib/%.c $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -c $< -o $@

$(CHECK_LIB): $(CHECK_LIB_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(T)/obj/%.o: tests/%.c $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -c $< -o $@

$(T)/obj/%.o: tests/%.cc $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CXX) $(TEST_CXXFLAGS) -c $< -o $@

# C programs link with the C compiler, C++ ones with the C++ driver.
link_cmd = $(if $(filter $(CXX_PROGS),$(1)),$(TEST_CXX),$(TEST_CC))

# api/early_malloc links a library whose constructor calls malloc before
# hakmem's constructor runs (tests/early/).
EARLY_LIB := $(T)/early/libearly_malloc.so
$(EARLY_LIB): tests/early/early_malloc_lib.c $(TEST_HDRS) tests/tests.mk
	@mkdir -p $(dir $@)
	$(TEST_CC) $(TEST_CFLAGS) -fPIC -shared $< -o $@
prog_deps = $(if $(filter api/early_malloc,$(1)),$(EARLY_LIB))
EARLY_LINK := $(EARLY_LIB) -Wl,-rpath,$(abspath $(T)/early)
prog_libs = $(if $(filter api/early_malloc,$(1)),$(EARLY_LINK))

define config_rules
$(T)/plain/$(1): $(T)/obj/$(1).o $(CHECK_LIB) $(call prog_deps,$(1))
	@mkdir -p $$(dir $$@)
	$(call link_cmd,$(1)) -pthread $$< $(CHECK_LIB) $(call prog_libs,$(1)) -o $$@
$(T)/linked/$(1): $(T)/obj/$(1).o $(CHECK_LIB) $(SO) $(call prog_deps,$(1))
	@mkdir -p $$(dir $$@)
	$(call link_cmd,$(1)) -pthread $$< $(CHECK_LIB) $(call prog_libs,$(1)) $(LINK_SHARED) -o $$@
$(T)/static/$(1): $(T)/obj/$(1).o $(CHECK_LIB) $(A) $(call prog_deps,$(1))
	@mkdir -p $$(dir $$@)
	$(call link_cmd,$(1)) -pthread $$< $(CHECK_LIB) $(call prog_libs,$(1)) $(LINK_STATIC) -o $$@
endef
$(foreach p,$(PROGS),$(eval $(call config_rules,$(p))))

