# fuzz.mk -- builds the libFuzzer targets of tests/fuzz/ into $(BUILD)/fuzz
# with clang's libFuzzer plus ASan/UBSan.  Driven by
# tests/integration/fuzz_smoke.sh (which `make check` and `make fuzz` run);
# a make of its own so a second run rebuilds only what changed.
#
#   make -f tests/fuzz/fuzz.mk BUILD=build [TARGETS="channel etcd"]
#
# Each target is tests/fuzz/fuzz_NAME.c plus the code under test below,
# compiled here with the fuzzer's instrumentation (never the Makefile's
# objects).
BUILD ?= build
CLANG ?= clang
OUT := $(BUILD)/fuzz
TARGETS ?= scenario schedule channel evidence pgwire etcd report

PKGS := yaml-0.1 sqlite3 jansson openssl libseccomp
FUZZ_CFLAGS := -std=gnu11 -gline-tables-only -O1 -D_GNU_SOURCE -I. -fno-sanitize-recover=undefined \
	$(shell pkg-config --cflags $(PKGS) libpq libcurl)
FUZZ_LIBS := $(shell pkg-config --libs $(PKGS)) -ldl -lpthread

model := harness/model/scenario.c harness/model/scenario_yaml.c \
	harness/model/scenario_faults.c harness/model/scenario_template.c \
	harness/model/scenario_sql.c harness/model/suite.c \
	harness/model/fault.c harness/model/schedule.c \
	harness/inject/inject_seccomp.c journal/identity.c common/error.c \
	common/sqlite_setup.c
journal := common/array.c common/clock.c common/dl.c common/dl_curl.c common/host_pid.c \
	common/dl_pq.c common/etcd_client.c common/fsutil.c common/error.c \
	common/pg_session.c common/sqlite_reader.c common/url_query.c \
	journal/journal.c journal/journal_adapter.c journal/journal_etcd.c \
	journal/journal_etcd_codec.c journal/journal_etcd_read.c \
	journal/journal_etcd_write.c journal/journal_pg.c \
	journal/journal_sqlite.c journal/journal_sqlite_scan.c \
	journal/journal_sqlite_schema.c journal/journal_sqlite_stmt.c \
	journal/states.c

srcs_scenario := $(model)
srcs_schedule := $(model)
srcs_channel := harness/proc/channel.c
srcs_evidence := harness/run/collect.c harness/model/record.c harness/model/obs_store.c \
	journal/identity.c $(journal)
srcs_pgwire := harness/inject/tcp_proxy_pg.c
srcs_etcd := common/etcd_client.c common/clock.c common/dl.c \
	common/dl_curl.c common/error.c
srcs_report := reports/gate.c reports/merge.c reports/rview.c \
	reports/sign.c harness/check/verdict.c harness/check/report_summary.c \
	harness/check/check_window.c harness/model/record.c harness/model/obs_store.c \
	journal/identity.c common/array.c

.PHONY: all
all: $(TARGETS:%=$(OUT)/fuzz_%)

$(OUT)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link,address,undefined \
		-MMD -MP -c $< -o $@

define fuzz_target
$(OUT)/fuzz_$(1): tests/fuzz/fuzz_$(1).c $(sort $(srcs_$(1):%.c=$(OUT)/obj/%.o))
	$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer,address,undefined -MMD -MP \
		$$(filter %.c %.o,$$^) -o $$@ $(FUZZ_LIBS)
endef
$(foreach t,$(TARGETS),$(eval $(call fuzz_target,$(t))))

-include $(shell find $(OUT) -name '*.d' 2>/dev/null)
