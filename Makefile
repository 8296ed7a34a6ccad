# fencecert -- one non-recursive Makefile.
#
#   make            build build/fencecert (and build/libfencecert.a)
#   make check      the layer rule, unit tests (cmocka), integration tests, fuzz smoke run
#   make fuzz       every libFuzzer target of tests/fuzz/ for FUZZ_SECONDS (60) each
#   make certify    certify the bundled routes (scenarios/default.yaml)
#   make bench      benchmarks, each against a baseline in the same run
#   make install    PREFIX=/usr/local DESTDIR=
#
# Knobs: SANITIZE=address,undefined  WERROR=1  CC=clang  STATIC=0  PIE=1
# When pkg-config cannot find a library, `make` runs ci/install-deps if you
# are root and otherwise prints the apt-get line to run.

VERSION := 0.1.0
PREFIX ?= /usr/local
DESTDIR ?=
BUILD ?= build
CC ?= cc

# Linked statically when the archive is installed (fast exec: every route
# attempt a certification runs is a fresh fencecert process) ...
STATIC_PKGS := sqlite3 jansson yaml-0.1 libseccomp libcrypto
# ... and opened with dlopen() on first use (common/dl_pq.c, dl_curl.c):
# they pull in some thirty shared objects a route on SQLite never needs.
DLOPEN_PKGS := libpq libcurl
PKGS := $(STATIC_PKGS) $(DLOPEN_PKGS)
TEST_PKGS := cmocka
# pkg-config name -> Debian package (used for the apt-get hint)
deb_sqlite3 := libsqlite3-dev
deb_jansson := libjansson-dev
deb_libcurl := libcurl4-openssl-dev
deb_libcrypto := libssl-dev
deb_libpq := libpq-dev
deb_yaml-0.1 := libyaml-dev
deb_libseccomp := libseccomp-dev
deb_cmocka := libcmocka-dev

ifeq ($(filter clean,$(MAKECMDGOALS)),)
missing = $(shell command -v pkg-config >/dev/null || echo pkg-config; \
	for p in $(PKGS) $(TEST_PKGS); do pkg-config --exists $$p 2>/dev/null || echo $$p; done)
MISSING := $(missing)
ifneq ($(MISSING),)
ifeq ($(shell id -u),0)
$(info fencecert: missing $(MISSING); running ci/install-deps)
INSTALL_RC := $(shell ci/install-deps >&2; echo $$?)
MISSING := $(missing)
endif
endif
ifneq ($(MISSING),)
$(error missing libraries: $(MISSING); run as root: apt-get install -y pkg-config $(foreach p,$(MISSING),$(deb_$(p))))
endif
endif

GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

WARN := -Wall -Wextra -Wshadow -Wno-unused-parameter -Wstrict-prototypes
CFLAGS ?= -O2 -g
ALL_CFLAGS := -std=gnu11 $(WARN) $(CFLAGS) -I. -D_GNU_SOURCE \
	-DFENCECERT_VERSION='"$(VERSION)"' \
	$(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# A library whose archive the compiler finds is linked from it, the others
# from their shared objects; their private dependencies (-lm -lz ...) come
# from `pkg-config --static` and stay shared.  STATIC=0 links all shared.
STATIC ?= 1
static_ok = $(filter-out $(notdir $(1)),$(shell $(CC) -print-file-name=$(notdir $(1))))
PKG_LIBS := $(shell pkg-config --libs $(STATIC_PKGS) 2>/dev/null)
ifeq ($(STATIC),1)
STATIC_LIBS := $(foreach l,$(PKG_LIBS),$(if $(call static_ok,lib$(l:-l%=%).a),$(l)))
endif
SHARED_LIBS := $(filter-out $(STATIC_LIBS),$(PKG_LIBS))
PRIVATE_LIBS := $(filter-out $(PKG_LIBS),$(shell pkg-config --static --libs $(STATIC_PKGS) 2>/dev/null))
LIBS := $(SHARED_LIBS) $(sort $(PRIVATE_LIBS)) -ldl -lpthread
ifneq ($(STATIC_LIBS),)
LIBS := -Wl,-Bstatic $(STATIC_LIBS) -Wl,-Bdynamic $(LIBS)
endif
TEST_LIBS := $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)
# A position-independent executable is relocated at every exec (~19000
# relocations, ~100 page faults with a static libcrypto); a fixed-address one
# is not.  PIE=1 gives the hardened layout back.
ifneq ($(PIE),1)
LDFLAGS += -no-pie
endif
ifeq ($(WERROR),1)
ALL_CFLAGS += -Werror
endif
ifneq ($(SANITIZE),)
# every finding ends the process, so a sanitized test that meets one fails
# instead of printing it and passing
ALL_CFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
LDFLAGS += -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif

LIB_SRCS := $(sort $(filter-out cli/main.c,$(wildcard common/*.c journal/*.c fences/*.c routes/*.c recover/*.c harness/*/*.c reports/*.c cli/*.c)))
LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/%.o)
TEST_SRCS := $(sort $(wildcard tests/test_*.c))
TEST_SUPPORT := $(sort $(filter-out $(TEST_SRCS),$(wildcard tests/*.c)))
TEST_BINS := $(TEST_SRCS:tests/%.c=$(BUILD)/tests/%)
BENCH_SRCS := $(sort $(wildcard bench/bench_*.c))
BENCH_SUPPORT := $(sort $(filter-out $(BENCH_SRCS),$(wildcard bench/*.c)))
BENCH_BINS := $(BENCH_SRCS:bench/%.c=$(BUILD)/bench/%)

# Rebuild everything when the compiler flags change (e.g. SANITIZE on/off).
FLAGS_STAMP := $(BUILD)/.flags
$(shell mkdir -p $(BUILD); echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' | cmp -s - $(FLAGS_STAMP) || echo '$(CC) $(ALL_CFLAGS) $(LDFLAGS)' > $(FLAGS_STAMP))

.PHONY: all check unit integration certify certify-exhaustive bench clean install fuzz
all: $(BUILD)/fencecert

$(BUILD)/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

# Only common/cli.o carries the git revision, so a commit does not rebuild the tree.
GITREV_STAMP := $(BUILD)/.gitrev
$(shell echo '$(GIT_REV)' | cmp -s - $(GITREV_STAMP) || echo '$(GIT_REV)' > $(GITREV_STAMP))
$(BUILD)/common/cli.o: $(GITREV_STAMP)
$(BUILD)/common/cli.o: ALL_CFLAGS += -DFENCECERT_GIT_REV='"$(GIT_REV)"'

$(BUILD)/libfencecert.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/fencecert: $(BUILD)/cli/main.o $(BUILD)/libfencecert.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/%.o $(TEST_SUPPORT:%.c=$(BUILD)/%.o) $(BUILD)/libfencecert.a
	$(CC) $(LDFLAGS) -o $@ $^ $(TEST_LIBS) $(LIBS)

$(BUILD)/bench/%: $(BUILD)/bench/%.o $(BENCH_SUPPORT:%.c=$(BUILD)/%.o) $(BUILD)/libfencecert.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

# Stand-alone tools the integration tests run (tests/tools/*.c, one file
# each, linked with libseccomp only).
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tests/tools/%,$(wildcard tests/tools/*.c))
$(BUILD)/tests/tools/%: tests/tools/%.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -o $@ $< $(shell pkg-config --libs libseccomp)
check: $(TOOL_BINS)

# The dependency rule (docs/architecture.md) first: a tree that breaks it
# fails before any test runs.
check: $(BUILD)/fencecert $(TEST_BINS)
	ci/check-layers
	ci/check-cycles $(BUILD)
	@BUILD=$(BUILD) tests/run-all $(TEST_BINS)

certify: $(BUILD)/fencecert
	@if [ -f scenarios/default.yaml ]; then \
		$(BUILD)/fencecert certify scenarios/default.yaml --out $(BUILD)/certify --force; \
	else echo "fencecert: no routes yet (scenarios/default.yaml lands with the harness)"; fi

# Every failpoint x {kill, pause, fail}, every interleaving (minutes, not seconds).
certify-exhaustive: $(BUILD)/fencecert
	$(BUILD)/fencecert certify scenarios/exhaustive.yaml --out $(BUILD)/certify-exhaustive --force

bench: $(BUILD)/fencecert $(BENCH_BINS)
	@BUILD=$(BUILD) bench/run $(BENCH_BINS)

# The libFuzzer targets of tests/fuzz/ (needs clang), FUZZ_SECONDS each;
# `make check` runs them for 5 s.  Findings: $(BUILD)/fuzz/artifacts/.
FUZZ_SECONDS ?= 60
fuzz:
	@BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) sh tests/integration/fuzz_smoke.sh

install: $(BUILD)/fencecert
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/fencecert/scenarios
	install -m 0755 $(BUILD)/fencecert $(DESTDIR)$(PREFIX)/bin/fencecert
	install -m 0644 scenarios/*.yaml $(DESTDIR)$(PREFIX)/share/fencecert/scenarios/
	install -d $(DESTDIR)$(PREFIX)/share/fencecert/ci
	install -m 0755 ci/etcd-up ci/etcd-down ci/etcd-member ci/pg-up ci/pg-down $(DESTDIR)$(PREFIX)/share/fencecert/ci/

clean:
	rm -rf $(BUILD) build-*

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
