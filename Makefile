# hakmem build.  `make` builds the libraries, `make test` runs every test,
# `make bench` compares hakmem with the peer allocators.

CC      ?= cc
AR      ?= ar
PREFIX  ?= /usr/local
BUILD   := build

WARN    := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
# -fno-builtin-*: our own malloc family must not be rewritten into calls to itself.
# -fno-semantic-interposition lets calls inside the library bind directly.
# CPPFLAGS and CFLAGS come last, so a packager's flags win; Debian's hardening
# flags (-fstack-protector-strong, _FORTIFY_SOURCE) leave malloc's and free's
# fast paths as they are (debian/rules says how that was checked).
LIB_CFLAGS := -std=gnu11 -O2 -g -fPIC -fvisibility=hidden \
	-fno-semantic-interposition -fno-plt -ftls-model=initial-exec \
	-fno-stack-protector -fcf-protection=none -fno-exceptions \
	-fno-builtin-malloc -fno-builtin-free -fno-builtin-calloc -fno-builtin-realloc \
	-Iinclude -Isrc $(WARN) $(CPPFLAGS) $(CFLAGS)
LIB_LDFLAGS := -shared -Wl,-z,now -Wl,-z,relro -Wl,--no-undefined $(LDFLAGS)
LIB_LIBS := -lpthread

SRCS    := $(sort $(wildcard src/*.c))
HDRS    := $(wildcard src/*.h include/*.h)
OBJS    := $(SRCS:src/%.c=$(BUILD)/obj/%.o)
API_OBJS := $(SRCS:src/%.c=$(BUILD)/api-obj/%.o)

SO      := $(BUILD)/libhakmem.so
A       := $(BUILD)/libhakmem.a
# The same allocator under its hak_* names only (malloc is not replaced):
# what the sanitizer builds and the fuzzer link against.
API_A   := $(BUILD)/libhakmem-api.a
# The soname carries the ABI version (struct hak_stats is part of the ABI).
SONAME  := libhakmem.so.0

.PHONY: all lib clean
all: lib
lib: $(SO) $(A) $(API_A)

$(BUILD)/obj/%.o: src/%.c $(HDRS) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/api-obj/%.o: src/%.c $(HDRS) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -DHAKMEM_NO_OVERRIDE -c $< -o $@

# The debug build: the same library with its invariant checks (HK_DEBUG:
# HK_ASSERT, the page checker of src/check.c), at -O1 for debuggers.
DEBUG_OBJS := $(SRCS:src/%.c=$(BUILD)/debug-obj/%.o)
DEBUG_SO   := $(BUILD)/debug/libhakmem.so
DEBUG_A    := $(BUILD)/debug/libhakmem.a

$(BUILD)/debug-obj/%.o: src/%.c $(HDRS) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -O1 -DHK_DEBUG -c $< -o $@

.PHONY: debug
debug: $(DEBUG_SO) $(DEBUG_A)

$(DEBUG_SO): $(DEBUG_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_LDFLAGS) -Wl,-soname,$(SONAME) -o $@ $(DEBUG_OBJS) $(LIB_LIBS)

$(DEBUG_A): $(DEBUG_OBJS)
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $(DEBUG_OBJS)

# The hardened build: the same library with its heap-misuse checks
# (HK_SECURE: src/secure.c, src/secure.h), a library of its own to preload
# or link in place of the default one.
SECURE_OBJS := $(SRCS:src/%.c=$(BUILD)/secure-obj/%.o)
SECURE_SO   := $(BUILD)/libhakmem-secure.so
SECURE_A    := $(BUILD)/libhakmem-secure.a
SECURE_SONAME := libhakmem-secure.so.0

$(BUILD)/secure-obj/%.o: src/%.c $(HDRS) Makefile
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -DHK_SECURE -c $< -o $@

.PHONY: secure
secure: $(SECURE_SO) $(SECURE_A)

$(SECURE_SO): $(SECURE_OBJS)
	$(CC) $(LIB_LDFLAGS) -Wl,-soname,$(SECURE_SONAME) -o $@ $(SECURE_OBJS) $(LIB_LIBS)
	ln -sf libhakmem-secure.so $(BUILD)/$(SECURE_SONAME)

$(SECURE_A): $(SECURE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(SECURE_OBJS)

# The link under the soname lets programs linked in the tree run from it.
$(SO): $(OBJS)
	$(CC) $(LIB_LDFLAGS) -Wl,-soname,$(SONAME) -o $@ $(OBJS) $(LIB_LIBS)
	ln -sf libhakmem.so $(BUILD)/$(SONAME)

$(A): $(OBJS)
	@rm -f $@
	$(AR) rcs $@ $(OBJS)

$(API_A): $(API_OBJS)
	@rm -f $@
	$(AR) rcs $@ $(API_OBJS)

clean:
	rm -rf $(BUILD)

# Test and benchmark suites keep their rules next to their code.
-include tests/tests.mk
-include bench/bench.mk
-include packaging/packaging.mk
