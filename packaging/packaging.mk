# Installation.  `make install` (PREFIX=/usr/local, DESTDIR for staging)
# installs the libraries, the header, the launcher, a pkg-config file and a
# CMake package; `make uninstall` removes them; `make test-install` installs
# into a temporary prefix and builds, links and runs programs against it.
# The layout is fixed ($PREFIX/bin, lib, include): the launcher and the CMake
# package find the rest of the tree from where they are.

PKG_VERSION := $(shell sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$$/\1/p' include/hakmem.h)
PKG_MAJOR   := $(word 1,$(subst ., ,$(PKG_VERSION)))
PKG_MINOR   := $(word 2,$(subst ., ,$(PKG_VERSION)))
PKG_OUT     := $(BUILD)/packaging
PKG_ROOT     = $(DESTDIR)$(PREFIX)
PKG_CMAKEDIR = lib/cmake/hakmem
INSTALL     ?= install

# Fills the templates' @NAME@ placeholders.  PREFIX goes in only as text in
# hakmem.pc: DESTDIR is where files go, not where they will be used.
PKG_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(PKG_VERSION)|g' \
	-e 's|@VERSION_MAJOR@|$(PKG_MAJOR)|g' -e 's|@VERSION_MINOR@|$(PKG_MINOR)|g' \
	-e "s|@SIZEOF_VOID_P@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P -)|g" \
	-e 's|@HAKMEM_VERSION@|$(PKG_VERSION)|g'

# Everything installed, relative to PREFIX, for uninstall (the versioned
# shared library and its soname link are found by pattern).
PKG_FILES = bin/hakmem include/hakmem.h lib/libhakmem.so lib/libhakmem.a \
	lib/libhakmem-api.a lib/pkgconfig/hakmem.pc \
	$(PKG_CMAKEDIR)/hakmemConfig.cmake $(PKG_CMAKEDIR)/hakmemConfigVersion.cmake

.PHONY: install uninstall test-install

install: lib
	@mkdir -p $(PKG_OUT)
	@$(PKG_SUBST) bin/hakmem >$(PKG_OUT)/hakmem
	@$(PKG_SUBST) packaging/hakmem.pc.in >$(PKG_OUT)/hakmem.pc
	@$(PKG_SUBST) packaging/hakmemConfig.cmake.in >$(PKG_OUT)/hakmemConfig.cmake
	@$(PKG_SUBST) packaging/hakmemConfigVersion.cmake.in >$(PKG_OUT)/hakmemConfigVersion.cmake
	$(INSTALL) -d $(PKG_ROOT)/bin $(PKG_ROOT)/include $(PKG_ROOT)/lib/pkgconfig \
		$(PKG_ROOT)/$(PKG_CMAKEDIR)
	$(INSTALL) -m 755 $(PKG_OUT)/hakmem $(PKG_ROOT)/bin/
	$(INSTALL) -m 644 include/hakmem.h $(PKG_ROOT)/include/
	$(INSTALL) -m 644 $(A) $(API_A) $(PKG_ROOT)/lib/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmem.pc $(PKG_ROOT)/lib/pkgconfig/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmemConfig.cmake $(PKG_OUT)/hakmemConfigVersion.cmake \
		$(PKG_ROOT)/$(PKG_CMAKEDIR)/
	@# The shared library as libhakmem.so.VERSION, linked from the name the
	@# linker looks for (libhakmem.so) and from its soname if that differs.
	$(INSTALL) -m 755 $(SO) $(PKG_ROOT)/lib/libhakmem.so.$(PKG_VERSION)
	ln -sf libhakmem.so.$(PKG_VERSION) $(PKG_ROOT)/lib/libhakmem.so
	@soname=$$(objdump -p $(SO) | sed -n 's/^ *SONAME *//p'); \
	if [ -n "$$soname" ] && [ "$$soname" != libhakmem.so ]; then \
		echo "ln -sf libhakmem.so.$(PKG_VERSION) $(PKG_ROOT)/lib/$$soname"; \
		ln -sf libhakmem.so.$(PKG_VERSION) $(PKG_ROOT)/lib/$$soname; \
	fi

uninstall:
	rm -f $(addprefix $(PKG_ROOT)/,$(PKG_FILES)) $(PKG_ROOT)/lib/libhakmem.so.*
	@# Only the directories that are hakmem's alone, and only when empty.
	@rmdir $(PKG_ROOT)/$(PKG_CMAKEDIR) $(PKG_ROOT)/lib/cmake $(PKG_ROOT)/lib/pkgconfig \
		2>/dev/null || true

test-install: lib
	MAKE="$(MAKE)" packaging/test-install.sh
