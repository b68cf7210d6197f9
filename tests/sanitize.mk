# Sanitizer and fuzz builds of the allocator under its hak_* names only
# (-DHAKMEM_NO_OVERRIDE: the C library keeps its own malloc), compiled here
# from src/*.c with clang, and the test programs that drive them.
# Included from tests/tests.mk.

# HK_DEBUG: these builds run the allocator's invariant checks too (src/check.c).
SAN_COMMON := -std=gnu11 -O1 -g -fno-omit-frame-pointer -DHAKMEM_NO_OVERRIDE -DHK_DEBUG \
	-Iinclude -Isrc -Itests/lib -pthread -ftls-model=initial-exec -fno-builtin \
	-fno-sanitize-recover=all
SAN_FLAGS_asan := -fsanitize=address,undefined
SAN_FLAGS_tsan := -fsanitize=thread
# The fuzzer's allocator gets coverage instrumentation as well, so that
# libFuzzer steers towards new paths inside hakmem, not only in the driver.
SAN_FLAGS_fuzz := -fsanitize=fuzzer-no-link,address,undefined

# Stress programs that run against the sanitized allocator.
SAN_PROGS := threads/stress threads/churn threads/thread_exit threads/remote_messages
SAN_KINDS := asan tsan
SAN_BINS  := $(foreach k,$(SAN_KINDS),$(SAN_PROGS:%=$(T)/$(k)/%))
FUZZ_BIN  := $(T)/fuzz/fuzz_hak

# Objects of one kind: the allocator, and the check library.
hak_objs = $(SRCS:src/%.c=$(T)/$(1)/hak/%.o)
lib_objs = $(CHECK_LIB_SRCS:tests/lib/%.c=$(T)/$(1)/lib/%.o)

define san_rules
$(T)/$(1)/hak/%.o: src/%.c $(HDRS) tests/sanitize.mk
	@mkdir -p $$(dir $$@)
	$(SAN_CC) $(SAN_COMMON) $(SAN_FLAGS_$(1)) -c $$< -o $$@
$(T)/$(1)/lib/%.o: tests/lib/%.c $(TEST_HDRS) tests/sanitize.mk
	@mkdir -p $$(dir $$@)
	$(SAN_CC) $(SAN_COMMON) $(SAN_FLAGS_$(1)) -D_GNU_SOURCE -c $$< -o $$@
$(T)/$(1)/obj/%.o: tests/%.c $(TEST_HDRS) tests/sanitize.mk
	@mkdir -p $$(dir $$@)
	$(SAN_CC) $(SAN_COMMON) $(SAN_FLAGS_$(1)) -D_GNU_SOURCE -DTEST_HAK_NAMES -c $$< -o $$@
endef
$(foreach k,$(SAN_KINDS) fuzz,$(eval $(call san_rules,$(k))))

define san_prog_rule
$(T)/$(1)/$(2): $(T)/$(1)/obj/$(2).o $(call hak_objs,$(1)) $(call lib_objs,$(1))
	@mkdir -p $$(dir $$@)
	$(SAN_CC) $(SAN_FLAGS_$(1)) -pthread $$^ -o $$@
endef
$(foreach k,$(SAN_KINDS),$(foreach p,$(SAN_PROGS),$(eval $(call san_prog_rule,$(k),$(p)))))

# The driver itself gets no coverage instrumentation: its pattern loops
# would dominate the run time, and hakmem's coverage is what should guide.
$(T)/fuzz/obj/fuzz/fuzz_hak.o: tests/fuzz/fuzz_hak.c $(TEST_HDRS) tests/sanitize.mk
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_COMMON) -fsanitize=address,undefined -D_GNU_SOURCE \
		-DTEST_HAK_NAMES -c $< -o $@

$(FUZZ_BIN): $(T)/fuzz/obj/fuzz/fuzz_hak.o $(call hak_objs,fuzz)
	@mkdir -p $(dir $@)
	$(SAN_CC) -fsanitize=fuzzer,address,undefined -pthread $^ -o $@
