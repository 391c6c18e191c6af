# Sluice - one Makefile for the broker, the client library, the tools and the tests.
#
#   make            build everything into bin/ (and build/)
#   make run        install missing Debian packages, build, start sluiced with defaults
#   make test       install, build, run every test (plain and ASan+UBSan builds)
#   make check-unit the unit tests alone (tests/unit/), in seconds; make check-e2e: the rest
#   make bench      run the benchmark and print its table
#   make fuzz       fuzz the wire decoder for FUZZ_SECONDS (300); make fuzz-ci: 20 s
#   make SAN=address,undefined   build the sanitized variant into build/san/
#   make install PREFIX=/usr/local [DESTDIR=...]   programs, headers, libsluice.a and
#                libsluice.so.1, sluice.pc, man pages, the systemd unit, an example sluice.conf,
#                the Grafana dashboard

# The one place the version is written: every program's --version, the man pages and sluice.pc.
VERSION  := 1.0.0
PREFIX   ?= /usr/local
# /etc for a system install (PREFIX=/usr), else PREFIX/etc
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
MANDIR   ?= $(PREFIX)/share/man
DATADIR  ?= $(PREFIX)/share
UNITDIR  ?= $(PREFIX)/lib/systemd/system
CC       ?= cc
CFLAGS   ?= -O2 -g
PKGS     := libzmq lmdb msgpack inih hiredis
TEST_PKGS := cmocka

# Warnings are forced: they cannot be dropped from the command line by accident.
override CFLAGS += -std=c11 -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes \
                   -Wshadow -Wvla -D_GNU_SOURCE -DSLUICE_VERSION='"$(VERSION)"'

ifdef SAN
BUILD    := build/san
BIN      := build/san/bin
override CFLAGS  += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all -O1
override LDFLAGS += -fsanitize=$(SAN)
else
BUILD    := build/rel
BIN      := bin
endif

PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm
TEST_LIBS  = $(shell pkg-config --libs $(TEST_PKGS) 2>/dev/null)
SINK_PKGS  := libmicrohttpd
SINK_LIBS  = $(shell pkg-config --libs $(SINK_PKGS) 2>/dev/null)
CURL_PKGS  := libcurl
CURL_LIBS  = $(shell pkg-config --libs $(CURL_PKGS) 2>/dev/null)

# `make` alone builds all (the rules below that come before all's would otherwise be the default).
.DEFAULT_GOAL := all

# ---- include paths: each folder sees only what it may use, so a wrong include fails to compile ----
# The tools see the public headers only, as installed: $(BUILD)/include holds copies of
# client/sluice.h, client/sluice_pace.h, client/sluice_admin.h and proto/sluice_errors.h (the set
# `make install` installs),
# never proto.h.
PUBLIC_HDRS := $(BUILD)/include/sluice.h $(BUILD)/include/sluice_pace.h $(BUILD)/include/sluice_admin.h \
               $(BUILD)/include/sluice_errors.h
INC_proto        := -Iproto
INC_client       := -Iclient -Iproto
INC_tools/common := -Itools/common -I$(BUILD)/include
INC_tools/cli    := -Itools/cli -Itools/common -I$(BUILD)/include
INC_tools/bench  := -Itools/bench -Itools/common -I$(BUILD)/include
INC_tools/sink   := -Itools/sink -Itools/common -I$(BUILD)/include
INC_client/python := -Itools/bench -Itools/common -I$(BUILD)/include
INC_tests/fuzz   := -Iproto

# The broker: a folder per subsystem (broker/README.md), each compiled with the include paths
# of the folders it may use and no others, so an include that breaks the layering fails to
# compile. USE_x lists x's folder first, then what it may use; each list is made of the lists
# below it, and `make layering` checks that no two folders may use each other.
BROKER_DIRS := util meter store net coord ha service sched queue http core path admin auth
USE_util    := util
USE_meter   := meter $(USE_util)
USE_store   := store $(USE_util)
USE_net     := net $(USE_util)
USE_coord   := coord $(USE_util)
USE_ha      := ha $(sort $(USE_store) $(USE_net))
USE_sched   := sched $(USE_meter)
USE_service := service $(USE_sched)
USE_queue   := queue store $(USE_sched)
USE_http    := http $(sort $(USE_service) $(USE_net))
USE_core    := core $(sort $(USE_queue) $(USE_store) $(USE_net) $(USE_coord) $(USE_service) $(USE_http))
USE_path    := path $(USE_core)
USE_admin   := admin $(USE_path)
USE_auth    := auth $(USE_path)
$(foreach d,$(BROKER_DIRS),$(eval INC_broker/$(d) := $(patsubst %,-Ibroker/%,$(USE_$(d))) -Iproto))
INC_broker       := -Ibroker $(patsubst %,-Ibroker/%,$(BROKER_DIRS)) -Iproto
# The tests: tests/unit/ never start a program of ours, tests/e2e/ drive the real ones,
# tests/campaign/ holds the reliability campaigns, tests/lib/ what they share; all four see the
# same headers, the broker's among them (a unit test drives a module in place).
TEST_INC := -Itests/lib -Itests/campaign -Iproto -Iclient $(INC_broker) -Itools/common -Itools/sink
$(foreach d,unit e2e campaign lib,$(eval INC_tests/$(d) := $(TEST_INC)))
inc = $(INC_$(patsubst %/,%,$(dir $(1))))
# coord.c embeds the lease script, kept readable in broker/coord/coord.lua, as a C string.
$(BUILD)/broker/coord/coord.o: EXTRA_INC := -I$(BUILD)/gen
$(BUILD)/broker/coord/coord.o: $(BUILD)/gen/coord.lua.inc
$(BUILD)/gen/coord.lua.inc: broker/coord/coord.lua
	@mkdir -p $(dir $@)
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
# ha_lease.c embeds the leadership script, broker/coord/ha.lua, the same way.
$(BUILD)/broker/coord/ha_lease.o: EXTRA_INC := -I$(BUILD)/gen
$(BUILD)/broker/coord/ha_lease.o: $(BUILD)/gen/ha.lua.inc
$(BUILD)/gen/ha.lua.inc: broker/coord/ha.lua
	@mkdir -p $(dir $@)
	$(Q)sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/"/' -e 's/$$/\\n"/' $< > $@
# assets.c embeds the console (broker/http/console/*) as byte arrays: no build step of its own.
CONSOLE_FILES := $(wildcard broker/http/console/*)
$(BUILD)/broker/http/assets.o: EXTRA_INC := -I$(BUILD)/gen
$(BUILD)/broker/http/assets.o: $(CONSOLE_FILES:broker/http/%=$(BUILD)/gen/%.inc)
$(BUILD)/gen/console/%.inc: broker/http/console/%
	@mkdir -p $(dir $@)
	$(Q)od -An -v -tx1 $< | sed -e 's/\([0-9a-f][0-9a-f]\)/0x\1,/g' > $@
# The pick benchmark measures the broker's pure pick rule (broker/sched/disp.c) in place.
$(BUILD)/tools/bench/bench_pick.o: EXTRA_INC := -Ibroker/sched -Ibroker/util
# The bare poster answers a 429 with the broker's own AIMD (broker/meter/aimd.c); the bare
# dispatcher releases by the broker's own bucket (broker/meter/rl.c).
$(BUILD)/tools/bench/bench_bare.o $(BUILD)/tools/bench/bench_bare_zmq.o: EXTRA_INC := -Ibroker/meter -Ibroker/util

PROTO_SRC  := $(wildcard proto/*.c)
CLIENT_SRC := $(wildcard client/*.c)
BROKER_SRC := $(filter-out broker/main.c,$(wildcard broker/*.c $(BROKER_DIRS:%=broker/%/*.c)))
UNIT_SRC   := $(wildcard tests/unit/test_*.c)
E2E_SRC    := $(wildcard tests/e2e/test_*.c)
TEST_LIB_SRC := tests/lib/harness.c tools/common/proc.c

obj = $(patsubst %.c,$(BUILD)/%.o,$(1))

LIBSLUICE  := $(BUILD)/libsluice.a
LIBBROKER  := $(BUILD)/libbroker.a
UNIT_TESTS := $(patsubst tests/%.c,$(BUILD)/tests/%,$(UNIT_SRC))
E2E_TESTS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(E2E_SRC))
# The console's browser tests (tests/browser/, node --test driving Debian's chromium through
# playwright-core): one program for tests/run.sh, a wrapper of tests/browser/run.sh.
BROWSER_TEST := $(BUILD)/tests/e2e/test_browser
TESTS      := $(UNIT_TESTS) $(E2E_TESTS) $(BROWSER_TEST)
PROGRAMS   := $(BIN)/sluiced $(BIN)/sluice $(BIN)/sluice-bench $(BIN)/sluice-sink

.PHONY: all deps run test test-run bench clean install layering tests tests-unit tests-e2e check-unit check-e2e browser-deps
.SECONDARY:
# The client library also as a shared library (soname libsluice.so.1, exporting sl_* only),
# from position-independent objects of its own; and the man pages, generated from the settings
# table and from --help. -z nodelete: dlclose leaves it loaded, since threads that decoded hold
# a zone whose destructor (proto_dec.c) runs in the library when they exit.
LIBSLUICE_SO := $(BUILD)/libsluice.so.1
MANPAGES   := $(BUILD)/man/sluiced.8 $(BUILD)/man/sluice.conf.5 $(BUILD)/man/sluice.1 \
              $(BUILD)/man/sluice-bench.1 $(BUILD)/man/sluice-sink.1
all: layering $(PROGRAMS) $(LIBSLUICE) $(LIBSLUICE_SO) $(MANPAGES)

# ---- Debian packages: installed only when pkg-config cannot find them ----
# (python3-pytest, which runs the Python client's tests, when /usr/bin/python3 cannot import it)
# (gnuplot, which draws the charts of `sluice-bench --scenario`, when command -v cannot)
# (prometheus, whose promtool checks /metrics in tests/e2e/test_metrics.c, and groff-base, which
#  checks the man pages in tests/e2e/test_install.c, when command -v cannot)
# (beanstalkd, the peer `make bench` measures Sluice beside (tools/bench/bench_peer.c), when command -v cannot)
# (openssl, which makes test_http_api's certificate; chromium, nodejs and npm, for the console's
#  browser tests in tests/browser/, when command -v cannot)
DEB_libzmq := libzmq3-dev
DEB_lmdb   := liblmdb-dev
DEB_msgpack := libmsgpack-dev
DEB_inih   := libinih-dev
DEB_hiredis := libhiredis-dev
DEB_cmocka := libcmocka-dev
DEB_libmicrohttpd := libmicrohttpd-dev
DEB_libcurl := libcurl4-openssl-dev
deps:
	@missing=""; \
	command -v pkg-config >/dev/null 2>&1 || missing="pkg-config"; \
	command -v gnuplot >/dev/null 2>&1 || missing="$$missing gnuplot-nox"; \
	command -v strace >/dev/null 2>&1 || missing="$$missing strace"; \
	command -v ss >/dev/null 2>&1 || missing="$$missing iproute2"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	command -v groff >/dev/null 2>&1 || missing="$$missing groff-base"; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v beanstalkd >/dev/null 2>&1 || missing="$$missing beanstalkd"; \
	/usr/bin/python3 -c 'import pytest' >/dev/null 2>&1 || missing="$$missing python3-pytest"; \
	command -v openssl >/dev/null 2>&1 || missing="$$missing openssl"; \
	[ -x /usr/bin/chromium ] || missing="$$missing chromium"; \
	command -v node >/dev/null 2>&1 || missing="$$missing nodejs"; \
	command -v npm >/dev/null 2>&1 || missing="$$missing npm"; \
	for p in $(PKGS) $(TEST_PKGS) $(SINK_PKGS) $(CURL_PKGS); do \
	  pkg-config --exists $$p 2>/dev/null || case $$p in \
	    libzmq) missing="$$missing $(DEB_libzmq)";; lmdb) missing="$$missing $(DEB_lmdb)";; \
	    msgpack) missing="$$missing $(DEB_msgpack)";; inih) missing="$$missing $(DEB_inih)";; \
	    hiredis) missing="$$missing $(DEB_hiredis)";; \
	    cmocka) missing="$$missing $(DEB_cmocka)";; \
	    libmicrohttpd) missing="$$missing $(DEB_libmicrohttpd)";; \
	    libcurl) missing="$$missing $(DEB_libcurl)";; esac; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends $$missing; \
	fi

# ---- objects ----
# V=1 shows whole command lines
Q := $(if $(V),,@)

$(BUILD)/%.o: %.c | $(PUBLIC_HDRS)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) $(call inc,$<) $(EXTRA_INC) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/include/sluice.h: client/sluice.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
$(BUILD)/include/sluice_pace.h: client/sluice_pace.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
$(BUILD)/include/sluice_admin.h: client/sluice_admin.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@
$(BUILD)/include/sluice_errors.h: proto/sluice_errors.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

-include $(shell find build -name '*.d' 2>/dev/null)

$(LIBSLUICE): $(call obj,$(PROTO_SRC) $(CLIENT_SRC))
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BUILD)/pic/%.o: %.c | $(PUBLIC_HDRS)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(CFLAGS) -fPIC $(call inc,$<) $(PKG_CFLAGS) -MMD -MP -c $< -o $@

$(LIBSLUICE_SO): $(patsubst %.c,$(BUILD)/pic/%.o,$(PROTO_SRC) $(CLIENT_SRC)) tools/dist/libsluice.map
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libsluice.so.1 -Wl,-z,nodelete -Wl,--version-script=tools/dist/libsluice.map \
	  -o $@ $(filter %.o,$^) $(shell pkg-config --libs libzmq msgpack 2>/dev/null) -lpthread

# The man pages: sluiced(8) and sluice.conf(5) from the settings table (sluiced --man and
# --man=sluice.conf), the tools' pages from their --help and --version (tools/dist/help2man.sh),
# each with its NAME line below.
$(BUILD)/man/sluiced.8: $(BIN)/sluiced
	@mkdir -p $(dir $@)
	$(Q)$(BIN)/sluiced --man > $@.tmp && mv $@.tmp $@

$(BUILD)/man/sluice.conf.5: $(BIN)/sluiced
	@mkdir -p $(dir $@)
	$(Q)$(BIN)/sluiced --man=sluice.conf > $@.tmp && mv $@.tmp $@

MAN_WHAT_sluice       := publish to, consume from, inspect and administer a Sluice broker
MAN_WHAT_sluice-bench := measure a Sluice broker against its performance targets
MAN_WHAT_sluice-sink  := a rate-limited HTTP service to point Sluice consumers at
# sluice --help is an overview; its page holds every command's help
MAN_HELP_sluice       := help --all
$(BUILD)/man/%.1: $(BIN)/% tools/dist/help2man.sh
	@mkdir -p $(dir $@)
	$(Q)sh tools/dist/help2man.sh $(BIN)/$* 1 '$(MAN_WHAT_$*)' '$(or $(MAN_HELP_$*),--help)' > $@.tmp && mv $@.tmp $@

$(LIBBROKER): $(call obj,$(PROTO_SRC) $(BROKER_SRC))
	$(Q)rm -f $@ && $(AR) rcs $@ $^

$(BIN)/sluiced: $(call obj,broker/main.c) $(LIBBROKER)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(SINK_LIBS) -lpthread

$(BIN)/sluice: $(call obj,$(wildcard tools/cli/*.c) tools/common/httpc.c) $(LIBSLUICE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(CURL_LIBS) -lpthread

$(BIN)/sluice-bench: $(call obj,$(wildcard tools/bench/*.c) tools/common/proc.c tools/common/httpc.c broker/meter/aimd.c broker/meter/rl.c broker/sched/disp.c broker/sched/drr.c broker/util/grow.c) $(LIBSLUICE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) $(CURL_LIBS) -lpthread

$(BIN)/sluice-sink: $(call obj,$(wildcard tools/sink/*.c))
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(SINK_LIBS) -lpthread

# test_sink_limit links the sink's limiters and its per-key table (pure; no libmicrohttpd).
$(BUILD)/tests/unit/test_sink_limit: $(call obj,tools/sink/sink_limit.c tools/sink/sink_keys.c)

# test_cli_text links the command line's text functions (pure: no broker, no client).
$(BUILD)/tests/unit/test_cli_text: $(call obj,tools/cli/cli_text.c)
$(BUILD)/tests/unit/test_cli_text.o: EXTRA_INC := -Itools/cli

# The client library's own tests also link the scripted fake broker.
$(BUILD)/tests/unit/test_client_local $(BUILD)/tests/unit/test_client_admin: $(call obj,tests/lib/th_fake.c)

# test_slowdisk preloads the slow-disk shim into the broker (order-only: not linked in).
$(BUILD)/tests/e2e/test_slowdisk: | $(BUILD)/slowdisk.so
# test_notify too, for a commit stuck in its flush.
$(BUILD)/tests/e2e/test_notify: | $(BUILD)/slowdisk.so
# test_nospace and test_runs preload the full-disk shim likewise.
$(BUILD)/tests/e2e/test_nospace $(BUILD)/tests/e2e/test_runs: | $(BUILD)/tests/lib/nospace_shim.so
# The HTTP tests also link their HTTP client (libcurl) and socket helpers.
HTTP_TESTS := $(patsubst %,$(BUILD)/tests/e2e/test_http_%,flood api)
$(HTTP_TESTS): $(call obj,tests/lib/th_http.c)
$(HTTP_TESTS): EXTRA_LIBS := $(CURL_LIBS)
# The shared-sink tests also link their own redis-server's helper.
$(BUILD)/tests/unit/test_share $(BUILD)/tests/e2e/test_coord $(BUILD)/tests/e2e/test_ha $(BUILD)/tests/e2e/test_ha_follow $(BUILD)/tests/e2e/test_ha_snap $(BUILD)/tests/e2e/test_ha_auth $(BUILD)/tests/e2e/test_ha_metrics: $(call obj,tests/lib/th_redis.c)
$(BUILD)/tests/campaign/campaign_ha: $(call obj,tests/lib/th_redis.c tests/lib/th_proxy.c tests/campaign/campaign_ha_load.c tests/campaign/campaign_ha_cases.c)
# The high-availability tests share their set-up (a directory, two replication endpoints, Redis).
$(BUILD)/tests/e2e/test_ha $(BUILD)/tests/e2e/test_ha_follow $(BUILD)/tests/e2e/test_ha_snap $(BUILD)/tests/e2e/test_ha_auth $(BUILD)/tests/e2e/test_ha_metrics: $(call obj,tests/lib/th_ha.c)
$(BUILD)/tests/e2e/test_ha $(BUILD)/tests/e2e/test_ha_metrics: $(call obj,tests/lib/th_http.c)
$(BUILD)/tests/e2e/test_ha $(BUILD)/tests/e2e/test_ha_metrics: EXTRA_LIBS := $(CURL_LIBS)

# test_history also links the campaigns' record that it checks.
$(BUILD)/tests/unit/test_history: $(call obj,tests/campaign/history.c)
# The store's, the log's and the queue's tests without a broker share a store of their own per
# test (objects before the libraries when linked: extra prerequisites come after them in $^);
# test_tenants opens a stopped broker's store with it; test_headers turns one into the format before
# headers.
$(BUILD)/tests/unit/test_store $(BUILD)/tests/unit/test_store_layout $(BUILD)/tests/unit/test_wal \
  $(BUILD)/tests/unit/test_store_damage $(BUILD)/tests/unit/test_salvage \
  $(BUILD)/tests/unit/test_fair_queue $(BUILD)/tests/e2e/test_tenants $(BUILD)/tests/e2e/test_headers: \
  $(call obj,tests/lib/store_fixture.c)

# The reliability campaigns (tests/campaign/campaign_*.c) and the power-loss shim.
CAMPAIGN_SRC := tests/campaign/campaign.c tests/campaign/history.c $(TEST_LIB_SRC)
$(BUILD)/tests/campaign/campaign_%: $(call obj,tests/campaign/campaign_%.c $(CAMPAIGN_SRC)) $(LIBSLUICE)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS) -lpthread

# Loaded into an uninstrumented sluiced, so never built with sanitizers.
$(BUILD)/tests/lib/nospace_shim.so: tests/lib/nospace_shim.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(filter-out -fsanitize=%,$(CFLAGS)) -fPIC -shared -o $@ $< -ldl

$(BUILD)/tests/campaign/powerloss_shim.so: tests/campaign/powerloss_shim.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(filter-out -fsanitize=%,$(CFLAGS)) -fPIC -shared -o $@ $< -ldl

# A test program: its object, the harness, then the libraries.
define link_test
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $(filter %.o,$^) $(filter %.a,$^) $(PKG_LIBS) $(TEST_LIBS) $(SINK_LIBS) $(EXTRA_LIBS) -lpthread
endef
$(BUILD)/tests/unit/test_%: $(call obj,tests/unit/test_%.c $(TEST_LIB_SRC)) $(LIBBROKER) $(LIBSLUICE)
	$(link_test)
$(BUILD)/tests/e2e/test_%: $(call obj,tests/e2e/test_%.c $(TEST_LIB_SRC)) $(LIBBROKER) $(LIBSLUICE)
	$(link_test)

tests: $(TESTS)
tests-unit: $(UNIT_TESTS)
tests-e2e: $(E2E_TESTS) $(BROWSER_TEST)

$(BROWSER_TEST): tests/browser/run.sh
	@mkdir -p $(dir $@)
	$(Q)printf '#!/bin/sh\n# the console'"'"'s browser tests (tests/browser/run.sh)\nexec "%s/tests/browser/run.sh" "$$@"\n' "$(CURDIR)" > $@ && chmod +x $@

# playwright-core from tests/browser/package-lock.json, its scripts not run: nothing downloads a
# browser; the tests drive Debian's /usr/bin/chromium.
browser-deps: tests/browser/node_modules/playwright-core/package.json
tests/browser/node_modules/playwright-core/package.json: tests/browser/package-lock.json
	@cd tests/browser && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
	@touch $@

# The Python client (client/python/): its pytest suite, against the plain build only (an
# ASan libsluice cannot be loaded into python3). make check-python runs it alone; make test
# runs it as one more program of tests/run.sh, a wrapper beside the C tests that prints
# cmocka's summary lines from pytest's counts (client/python/run_tests.sh).
PY_TESTS := $(if $(SAN),,$(BUILD)/tests/e2e/test_python $(BUILD)/slowdisk.so $(BUILD)/bench-py-c)
tests: $(PY_TESTS)
# The C side of the Python client's bench rows (client/python/bench.py): sluice-bench's row code
# linked with the same libsluice.so.1 the Python client loads. Built with the tests, so that a
# change to the bench's row code that breaks it fails the build, not a later `make bench`.
$(BUILD)/bench-py-c: $(call obj,client/python/bench_c.c tools/bench/bench_workers.c tools/bench/bench_client.c \
                       tools/bench/bench_core.c tools/bench/bench_guard.c) $(LIBSLUICE_SO)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -Wl,-rpath,$(CURDIR)/$(dir $(LIBSLUICE_SO)) -lpthread
$(BUILD)/tests/e2e/test_python: client/python/run_tests.sh
	@mkdir -p $(dir $@)
	$(Q)printf '#!/bin/sh\nexec "%s/client/python/run_tests.sh" "$$@"\n' '$(CURDIR)' > $@ && chmod +x $@

# Builds run JOBS compiles at once (one per core); the tests' own parallelism is SLUICE_TEST_JOBS.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

.PHONY: check-python
check-python: deps
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= all build/rel/slowdisk.so
	@SLUICE_LIB=build/rel/libsluice.so.1 SLUICE_BIN=bin /usr/bin/python3 -m pytest -p no:cacheprovider -q \
	  client/python/tests

# ---- the two commands ----
# make run ARGS='-l tcp://127.0.0.1:17601 -d /tmp/x': ARGS go to sluiced as they are
run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	exec $(BIN)/sluiced $(ARGS)

# make test: the plain build, then the ASan+UBSan build, then one run over both, the short
# campaigns (CI_CAMPAIGNS) among its programs.
CI_CAMPAIGNS := make:ha-campaign-ci make:crash-ci make:powerloss-ci make:fuzz-ci make:corrupt-ci
test: deps browser-deps
	@$(MAKE) --no-print-directory -j$(JOBS) all tests
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=address,undefined all tests
	@$(MAKE) --no-print-directory campaigns
	@tests/run.sh build/rel/tests:bin build/san/tests:build/san/bin $(CI_CAMPAIGNS)

test-run: all tests
	@tests/run.sh $(BUILD)/tests:$(BIN)

# make check-unit: the unit tests alone (tests/unit/), in seconds: the plain build (SAN=... for the
# sanitized one), run with SLUICE_BIN an empty directory, so that a test starting sluiced (or any
# other program of ours) fails. make check-e2e: the end-to-end tests (tests/e2e/), plain and
# ASan+UBSan builds. make test runs both sets in both builds, plus the short campaigns.
check-unit: deps
	@$(MAKE) --no-print-directory -j$(JOBS) tests-unit
	@tests/run.sh $(BUILD)/tests/unit

check-e2e: deps browser-deps
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= all tests-e2e
	@$(MAKE) --no-print-directory -j$(JOBS) SAN=address,undefined all tests-e2e
	@tests/run.sh build/rel/tests/e2e:bin build/san/tests/e2e:build/san/bin

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= build/rel/slowdisk.so
	@$(BIN)/sluice-bench --spawn $(BIN)/sluiced --slowdisk build/rel/slowdisk.so
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= build/rel/bench-py-c
	@/usr/bin/python3 client/python/bench.py --bin $(BIN) --lib $(LIBSLUICE_SO) --c-bench build/rel/bench-py-c

# The flush experiments (tools/bench/flush/bench_flush.c): what a durable commit costs on this
# disk, by design (broker/DESIGN.md, "Where the time goes"). Not part of all: make bench-flush, then run
# build/rel/bench-flush (--help).
.PHONY: bench-flush
bench-flush: $(BUILD)/bench-flush
$(BUILD)/bench-flush: $(call obj,tools/bench/flush/bench_flush.c)
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# The slow disk on demand (tools/slowdisk/slowdisk.c): an LD_PRELOAD shim adding
# SLUICE_SLOW_FLUSH_US to every flush of sluiced. Loaded into an uninstrumented sluiced.
$(BUILD)/slowdisk.so: tools/slowdisk/slowdisk.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(CC) $(filter-out -fsanitize=%,$(CFLAGS)) -fPIC -shared -o $@ $< -ldl -lpthread

# ---- reliability campaigns: the plain build only (the shim cannot go into an ASan broker) ----
# make crash [CRASH_SECONDS=60]            kill -9 the broker every 2 s under a pipelined load,
#                                          then drain: exits 1 if a confirmed message is lost
#      [CRASH_FLAGS=--fair]                every level fair by tag, publishes tagged
# make crash-ci                            the same for 10 s, FIFO then fair, in a few lines (part of make test)
# make powerloss [POWERLOSS_TRIALS=1000]   simulated power loss under LMDB (an LD_PRELOAD shim undoes
#                                          unsynced writes), then recover and drain; plus the control
# make powerloss-ci                        20 trials and the control run (part of make test)
# make corrupt [CORRUPT_TRIALS=100]        one random byte flipped in a stopped broker's data file per
#                                          trial: no crash, no restart loop, every message delivered,
#                                          dead-lettered or counted as quarantined; salvage brings back
#                                          all but the flipped record
# make corrupt-ci                          the same, 10 trials (part of make test)
# make ha-campaign [HA_TRIALS=270]         a high-availability group (two nodes, redis-server) under load:
#                                          kill -9 of the primary, SIGSTOP past its TTL, the standby
#                                          killed and back, Redis stopped 30 s, a failover A->B->A, the
#                                          primary's link to Redis cut, the nodes cut from each other,
#                                          the primary cut from both, Redis losing its data, in turns
#                                          (30 each); no confirmed publish lost, at most one node
#                                          confirming per epoch, the sink within its limit through a
#                                          failover; a failed trial's directories are kept (named)
# make ha-campaign-ci                      the same, one trial of each case, Redis stopped 5 s (part of
#                                          make test)
# SLUICE_SEED=N replays a run.
CRASH_SECONDS    ?= 60
POWERLOSS_TRIALS ?= 1000
CORRUPT_TRIALS   ?= 100
CAMPAIGNS := build/rel/tests/campaign/campaign_crash build/rel/tests/campaign/campaign_powerloss \
             build/rel/tests/campaign/powerloss_shim.so build/rel/tests/campaign/campaign_corrupt \
             build/rel/tests/campaign/campaign_ha
HA_TRIALS        ?= 270
.PHONY: campaigns campaign-bins crash crash-ci powerloss powerloss-ci faults corrupt corrupt-ci ha-campaign ha-campaign-ci

campaigns:
	@$(MAKE) --no-print-directory -j$(JOBS) SAN= campaign-bins

campaign-bins: bin/sluiced $(CAMPAIGNS)
	@:

# make faults                             EIO and ENOSPC injected with strace into a running broker
#                                          (tests/e2e/test_faults.c; also part of make test)
faults: deps
	@$(MAKE) --no-print-directory all build/rel/tests/e2e/test_faults
	@SLUICE_BIN=bin build/rel/tests/e2e/test_faults

crash: deps
	@$(MAKE) --no-print-directory campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_crash $(CRASH_SECONDS) $(CRASH_FLAGS)

crash-ci: campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_crash 10 --quiet
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_crash 10 --fair --quiet

powerloss: deps
	@$(MAKE) --no-print-directory campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_powerloss $(POWERLOSS_TRIALS) --control \
	  --shim build/rel/tests/campaign/powerloss_shim.so

powerloss-ci: campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_powerloss 20 --control --quiet \
	  --shim build/rel/tests/campaign/powerloss_shim.so

corrupt: deps
	@$(MAKE) --no-print-directory campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_corrupt $(CORRUPT_TRIALS)

corrupt-ci: campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_corrupt 10 --quiet

ha-campaign: deps
	@$(MAKE) --no-print-directory campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_ha $(HA_TRIALS) --keep-failed

ha-campaign-ci: campaigns
	@SLUICE_BIN=bin build/rel/tests/campaign/campaign_ha 9 --quiet --redis-down-ms 5000 --keep-failed

# ---- fuzzing: libFuzzer on the wire decoder (tests/fuzz/), clang only ----
# make fuzz [FUZZ_SECONDS=300] [FUZZ_SEED=N]   one bounded run; exits 1 on a finding
# make fuzz-ci                                 the same for 20 s (part of make test)
# Seeds come from tests/fuzz/corpus/ (regenerate: tests/fuzz/make_corpus.sh); the run
# works on a copy in build/fuzz/work/ and findings land in build/fuzz/artifacts/.
FUZZ_SECONDS ?= 300
FUZZ_CC      ?= clang
FUZZ_BIN     := build/fuzz/fuzz_decode
FUZZ_CFLAGS  := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer \
                -g -O1 -std=c11 -Wall -Wextra -Werror -Wmissing-prototypes -Wstrict-prototypes -Wshadow \
                -Wvla -D_GNU_SOURCE
.PHONY: fuzz fuzz-ci

build/fuzz/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(V),,echo "  CC      $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(call inc,$<) $(shell pkg-config --cflags msgpack 2>/dev/null) -MMD -MP -c $< -o $@

$(FUZZ_BIN): build/fuzz/tests/fuzz/fuzz_decode.o $(patsubst %.c,build/fuzz/%.o,$(wildcard proto/*.c))
	@$(if $(V),,echo "  LD      $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ $(shell pkg-config --libs msgpack 2>/dev/null || echo -lmsgpackc)

# clang and its fuzzer runtime are installed only when missing (one file test when present).
fuzz: deps
	@command -v $(FUZZ_CC) >/dev/null 2>&1 && \
	 [ -f "$$($(FUZZ_CC) -print-runtime-dir 2>/dev/null)/libclang_rt.fuzzer-$$(uname -m).a" ] || { \
	  echo "fuzz: installing clang libclang-rt-14-dev"; \
	  sudo=""; [ "$$(id -u)" = 0 ] || sudo=sudo; \
	  $$sudo apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev; }
	@$(MAKE) --no-print-directory -q $(FUZZ_BIN) 2>/dev/null || $(MAKE) --no-print-directory $(FUZZ_BIN)
	@tests/fuzz/run.sh $(FUZZ_BIN) $(FUZZ_SECONDS)

fuzz-ci:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=20

# The pure modules: no clock, no I/O, no logging; time is a parameter.
PURE := broker/meter/*.[ch] broker/sched/disp.[ch] broker/sched/drr.[ch] broker/sched/pool.[ch] \
        broker/sched/tmr.[ch] broker/store/gather.[ch] broker/loop_back.[ch] broker/coord/share.[ch] broker/util/grow.[ch] \
        broker/util/hist.[ch] client/pace.[ch]

# Layering. The include paths above make a wrong project include fail to compile; this checks
# that no two broker folders may use each other (so there is no circle between folders), keeps
# each library in its folder, and the pure modules free of clocks and I/O.
layering:
	@bad=""; $(foreach a,$(BROKER_DIRS),$(foreach b,$(filter-out $(a),$(USE_$(a))),\
	  $(if $(filter $(a),$(USE_$(b))),bad="$$bad $(a)<->$(b)";))) \
	 if [ -n "$$bad" ]; then echo "layering: folders that may use each other:$$bad"; exit 1; fi
	@bad=$$(grep -rlE '#include[[:space:]]*[<"]lmdb\.h' broker client proto | grep -v '^broker/store/'); \
	 bad="$$bad $$(grep -rlE '#include[[:space:]]*[<"]msgpack\.h' broker client tools)"; \
	 bad="$$bad $$(grep -rlE '#include[[:space:]]*[<"]proto\.h' tools)"; \
	 bad="$$bad $$(grep -rlE '#include[[:space:]]*[<"]zmq\.h' broker proto | grep -vE '^broker/(net/|loop\.)')"; \
	 bad="$$bad $$(grep -rlE '#include[[:space:]]*[<"](hiredis/)?hiredis\.h' broker client proto tools | grep -v '^broker/coord/')"; \
	 bad="$$bad $$(grep -rlE '#include[[:space:]]*[<"]microhttpd\.h' broker proto client | grep -v '^broker/http/')"; \
	 bad="$$bad $$(grep -lE '#include[[:space:]]*[<"](zmq|lmdb|stdio|log)\.h|clock_gettime|time\(' $(PURE) 2>/dev/null)"; \
	 bad=$$(echo $$bad); if [ -n "$$bad" ]; then echo "layering: violated in: $$bad"; exit 1; fi

# make install PREFIX=/usr DESTDIR=/tmp/stage: the layout a package takes. The unit gets the
# installed paths; the example sluice.conf is not overwritten when one is there. The man pages
# and the example name the config file as a system install has it, /etc/sluice/sluice.conf:
# they are installed with /etc/sluice/ made $(SYSCONFDIR)/sluice/ (a no-op for PREFIX=/usr).
# The unit's Documentation= names the pages as man: URIs when MANDIR is one that man searches
# without a MANPATH (so `systemctl help sluiced` shows them, and systemd-analyze verify, which
# runs man for each man: URI, finds them), else as file: URIs of the installed pages, which
# systemd-analyze verify accepts wherever they are.
MAN_SEARCHED := /usr/share/man /usr/local/share/man /usr/local/man /usr/man
UNIT_DOCS_MAN  := man:sluiced(8) man:sluice.conf(5) man:sluice(1)
UNIT_DOCS_FILE  = file:$(MANDIR)/man8/sluiced.8 file:$(MANDIR)/man5/sluice.conf.5 file:$(MANDIR)/man1/sluice.1
UNIT_DOCS       = $(if $(filter $(MANDIR),$(MAN_SEARCHED)),$(UNIT_DOCS_MAN),$(UNIT_DOCS_FILE))
SYSCONF_FIX := sed -e 's|/etc/sluice/|$(SYSCONFDIR)/sluice/|g'
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib/pkgconfig \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(UNITDIR) \
	  $(DESTDIR)$(SYSCONFDIR)/sluice $(DESTDIR)$(DATADIR)/sluice
	install -m 755 $(PROGRAMS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 client/sluice.h client/sluice_pace.h client/sluice_admin.h proto/sluice_errors.h \
	  $(DESTDIR)$(PREFIX)/include/
	install -m 644 $(LIBSLUICE) $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(LIBSLUICE_SO) $(DESTDIR)$(PREFIX)/lib/
	ln -sf libsluice.so.1 $(DESTDIR)$(PREFIX)/lib/libsluice.so
	for page in $(MANPAGES); do \
	  to=$(DESTDIR)$(MANDIR)/man$${page##*.}/$${page##*/}; \
	  $(SYSCONF_FIX) $$page > $$to && chmod 644 $$to || exit 1; \
	done
	sed -e 's|@BINDIR@|$(PREFIX)/bin|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' \
	  -e 's|@DOCUMENTATION@|$(UNIT_DOCS)|' tools/dist/sluiced.service.in \
	  > $(DESTDIR)$(UNITDIR)/sluiced.service && chmod 644 $(DESTDIR)$(UNITDIR)/sluiced.service
	[ -e $(DESTDIR)$(SYSCONFDIR)/sluice/sluice.conf ] || \
	  { $(SYSCONF_FIX) tools/dist/sluice.conf > $(DESTDIR)$(SYSCONFDIR)/sluice/sluice.conf && \
	    chmod 644 $(DESTDIR)$(SYSCONFDIR)/sluice/sluice.conf; }
	install -m 644 tools/dist/grafana-sluice.json $(DESTDIR)$(DATADIR)/sluice/
	@printf 'prefix=%s\nlibdir=$${prefix}/lib\nincludedir=$${prefix}/include\n\nName: sluice\nDescription: Sluice priority message broker client\nVersion: $(VERSION)\nCflags: -I$${includedir}\nLibs: -L$${libdir} -lsluice\nLibs.private: -lzmq -lmsgpackc -lpthread\n' '$(PREFIX)' \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/sluice.pc
	@# a real install (no DESTDIR) tells the loader about libsluice.so.1; a staged one leaves it to the package
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null 2>&1; then ldconfig; \
	 elif [ -z "$(DESTDIR)" ]; then echo "make install: run 'sudo ldconfig' so that programs find libsluice.so.1"; fi

clean:
	rm -rf build bin
