# Installation.  `make install` (PREFIX=/usr/local, DESTDIR for staging)
# installs the libraries, the header, the launcher, pkg-config files (hakmem,
# hakmem-secure), a CMake package and the man pages; `make uninstall` removes them; `make
# test-install` installs into a temporary prefix and builds, links and runs
# programs against it.  `make deb` builds the Debian packages (debian/).
#
# The layout is $PREFIX/bin, include and share/man, and LIBDIR (default
# $PREFIX/lib; a Debian package uses $PREFIX/lib/<multiarch triplet>).  When
# LIBDIR is under PREFIX, the launcher and the CMake package find the rest of
# the tree from where they are, so an installed tree can be moved.

PKG_VERSION := $(shell sed -n 's/.*HAKMEM_VERSION_STRING "\(.*\)"$$/\1/p' include/hakmem.h)
PKG_MAJOR   := $(word 1,$(subst ., ,$(PKG_VERSION)))
PKG_MINOR   := $(word 2,$(subst ., ,$(PKG_VERSION)))
PKG_OUT     := $(BUILD)/packaging
LIBDIR      ?= $(PREFIX)/lib
MANDIR      ?= $(PREFIX)/share/man
PKG_ROOT     = $(DESTDIR)$(PREFIX)
PKG_LIB      = $(DESTDIR)$(LIBDIR)
PKG_MAN      = $(DESTDIR)$(MANDIR)
PKG_CMAKEDIR = cmake/hakmem
INSTALL     ?= install

# LIBDIR relative to PREFIX ("lib", "lib/x86_64-linux-gnu"), or LIBDIR itself
# when it is elsewhere: then the installed files name it absolutely.
PKG_LIBREL   = $(patsubst $(PREFIX)/%,%,$(LIBDIR))
pkg_rel_or_abs = $(if $(filter /%,$(PKG_LIBREL)),$(2),$(1))
# What the launcher ($PREFIX/bin), hakmem.pc and hakmemConfig.cmake (in
# LIBDIR/cmake/hakmem, which reaches LIBDIR as ${_hakmem_libdir}) write.
PKG_LIBDIR_FROM_BINDIR = $(call pkg_rel_or_abs,../$(PKG_LIBREL),$(LIBDIR))
PKG_PC_LIBDIR = $(call pkg_rel_or_abs,$${prefix}/$(PKG_LIBREL),$(LIBDIR))
PKG_CMAKE_PREFIX = $(call pkg_rel_or_abs,$${_hakmem_libdir}/$(subst $() ,/,$(patsubst \
	%,..,$(subst /, ,$(PKG_LIBREL)))),$(PREFIX))

# Fills the templates' @NAME@ placeholders.  PREFIX goes in only as text:
# DESTDIR is where files go, not where they will be used.
PKG_SUBST = sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(PKG_VERSION)|g' \
	-e 's|@VERSION_MAJOR@|$(PKG_MAJOR)|g' -e 's|@VERSION_MINOR@|$(PKG_MINOR)|g' \
	-e "s|@SIZEOF_VOID_P@|$$(echo __SIZEOF_POINTER__ | $(CC) -E -P -)|g" \
	-e 's|@HAKMEM_VERSION@|$(PKG_VERSION)|g' -e 's|@SONAME@|$(SONAME)|g' \
	-e 's|@SECURE_SONAME@|$(SECURE_SONAME)|g' \
	-e 's|@LIBDIR_FROM_BINDIR@|$(PKG_LIBDIR_FROM_BINDIR)|g' \
	-e 's|@PC_LIBDIR@|$(PKG_PC_LIBDIR)|g' -e 's|@CMAKE_PREFIX@|$(PKG_CMAKE_PREFIX)|g'

# Everything installed, for uninstall (the versioned shared library and its
# links are found by pattern).
PKG_FILES = $(PKG_ROOT)/bin/hakmem $(PKG_ROOT)/include/hakmem.h \
	$(PKG_LIB)/libhakmem.a $(PKG_LIB)/libhakmem-api.a $(PKG_LIB)/libhakmem-secure.a \
	$(PKG_LIB)/pkgconfig/hakmem.pc $(PKG_LIB)/pkgconfig/hakmem-secure.pc \
	$(PKG_LIB)/$(PKG_CMAKEDIR)/hakmemConfig.cmake \
	$(PKG_LIB)/$(PKG_CMAKEDIR)/hakmemConfigVersion.cmake \
	$(PKG_MAN)/man1/hakmem.1 $(PKG_MAN)/man3/hakmem.3

.PHONY: install uninstall test-install deb test-deb

# The filled templates depend on PREFIX and LIBDIR: made anew on every install.
install: lib secure
	@mkdir -p $(PKG_OUT)
	@$(PKG_SUBST) bin/hakmem >$(PKG_OUT)/hakmem
	@$(PKG_SUBST) packaging/hakmem.pc.in >$(PKG_OUT)/hakmem.pc
	@$(PKG_SUBST) packaging/hakmem-secure.pc.in >$(PKG_OUT)/hakmem-secure.pc
	@$(PKG_SUBST) packaging/hakmemConfig.cmake.in >$(PKG_OUT)/hakmemConfig.cmake
	@$(PKG_SUBST) packaging/hakmemConfigVersion.cmake.in >$(PKG_OUT)/hakmemConfigVersion.cmake
	@$(PKG_SUBST) docs/man/hakmem.1 >$(PKG_OUT)/hakmem.1
	@$(PKG_SUBST) docs/man/hakmem.3 >$(PKG_OUT)/hakmem.3
	$(INSTALL) -d $(PKG_ROOT)/bin $(PKG_ROOT)/include $(PKG_LIB)/pkgconfig \
		$(PKG_LIB)/$(PKG_CMAKEDIR) $(PKG_MAN)/man1 $(PKG_MAN)/man3
	$(INSTALL) -m 755 $(PKG_OUT)/hakmem $(PKG_ROOT)/bin/
	$(INSTALL) -m 644 include/hakmem.h $(PKG_ROOT)/include/
	$(INSTALL) -m 644 $(A) $(API_A) $(SECURE_A) $(PKG_LIB)/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmem.pc $(PKG_OUT)/hakmem-secure.pc $(PKG_LIB)/pkgconfig/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmemConfig.cmake $(PKG_OUT)/hakmemConfigVersion.cmake \
		$(PKG_LIB)/$(PKG_CMAKEDIR)/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmem.1 $(PKG_MAN)/man1/
	$(INSTALL) -m 644 $(PKG_OUT)/hakmem.3 $(PKG_MAN)/man3/
	@# The shared library as libhakmem.so.VERSION, linked from the name the
	@# linker looks for (libhakmem.so) and from its soname (what programs
	@# and the launcher load).  Not executable, as Debian policy has it.
	$(INSTALL) -m 644 $(SO) $(PKG_LIB)/libhakmem.so.$(PKG_VERSION)
	ln -sf libhakmem.so.$(PKG_VERSION) $(PKG_LIB)/libhakmem.so
	ln -sf libhakmem.so.$(PKG_VERSION) $(PKG_LIB)/$(SONAME)
	@# The hardened library beside it, the same way (hakmem run --secure).
	$(INSTALL) -m 644 $(SECURE_SO) $(PKG_LIB)/libhakmem-secure.so.$(PKG_VERSION)
	ln -sf libhakmem-secure.so.$(PKG_VERSION) $(PKG_LIB)/libhakmem-secure.so
	ln -sf libhakmem-secure.so.$(PKG_VERSION) $(PKG_LIB)/$(SECURE_SONAME)

uninstall:
	rm -f $(PKG_FILES) $(PKG_LIB)/libhakmem.so $(PKG_LIB)/libhakmem.so.* \
		$(PKG_LIB)/libhakmem-secure.so $(PKG_LIB)/libhakmem-secure.so.*
	@# Only the directories that are hakmem's alone, and only when empty.
	@rmdir $(PKG_LIB)/$(PKG_CMAKEDIR) $(PKG_LIB)/cmake $(PKG_LIB)/pkgconfig \
		2>/dev/null || true

test-install: lib
	MAKE="$(MAKE)" packaging/test-install.sh

# The Debian packages, into build/deb/ (packaging/build-deb.sh).
deb:
	packaging/build-deb.sh

# make deb, then lintian and the packages used from a temporary root.
test-deb:
	MAKE="$(MAKE)" packaging/test-deb.sh
