# annlab: one Makefile for the library, the `annlab` program, tests and benchmarks.
#
#   make            optimised build (build/), ./annlab symlink
#   make test       unit + integration tests (cmocka), after `make deps`
#   make test SAN=address,undefined   the same under ASan/UBSan (build-san/)
#   make experiment [CONFIG=configs/quickstart.json]
#   make bench      benchmark programs (print figures; never run by tests)
#   make coverage   the tests on an instrumented -O0 build (build-cov/), then
#                   line and branch coverage per folder (gcovr)
#
# Sources are found by wildcard: a new engine folder engines/<name>/ (C
# sources; the registry in engines/registry.c names its ops), or a new .c
# file in core, datasets, cgroups or harness, is part of the build without
# editing this file.  The C++ reference peers (engines/ref_*/ *.cc) are
# built when their Debian libraries are installed; engines/core/*.cc always.

CC      ?= cc
CXX     ?= c++
SAN     ?=
CONFIG  ?= configs/quickstart.json

PKGS    := jansson hdf5 liburing lmdb rocksdb openblas hwloc libcrypto libcurl yaml-0.1
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -laio -lz

ifneq ($(COV),)
  # make coverage: -O0 instrumented, its own build directory; ANNLAB_COVERAGE
  # makes fork-then-exec children dump their counters before exec
  BUILD   := build-cov
  OPT     := -O0 -g --coverage -DANNLAB_COVERAGE
else ifeq ($(SAN),)
  BUILD   := build
  OPT     := -O3 -g
else
  # -O2 (ASan asks for -O1 or more): the unit tests under ASan/UBSan, two
  # binaries at a time, back to back: 424 s against 619 s at -O1 (2026-12-08)
  BUILD   := build-san
  OPT     := -O2 -g -fno-omit-frame-pointer -fsanitize=$(SAN) -fno-sanitize-recover=undefined
endif

WARN     := -Wall -Wextra -Werror -Wno-format-truncation
CPPFLAGS += -I. -D_GNU_SOURCE $(PKG_CFLAGS)
CFLAGS   += -std=c11 $(OPT) $(WARN) -pthread -MMD -MP
CXXFLAGS += -std=c++17 $(OPT) -Wall -Wextra -Werror -Wno-unused-parameter -pthread -MMD -MP
LDFLAGS  += $(if $(SAN),-fsanitize=$(SAN)) $(if $(COV),--coverage) -pthread
LDLIBS   += $(PKG_LIBS) -lm

# Reference peers are C++ shims over Debian libraries; built when present.
HAVE_HNSWLIB := $(wildcard /usr/include/hnswlib/hnswlib.h)
HAVE_FAISS   := $(wildcard /usr/include/faiss/IndexIVFPQ.h)

LIB_SRCS := $(wildcard engines/*.c engines/*/*.c engines/core/*/*.c \
              datasets/*.c cgroups/*.c) \
            $(filter-out harness/main.c,$(wildcard harness/*.c))
# engines/core's C++: kv_rocksdb_sst.cc (RocksDB, always built)
CXX_SRCS := $(wildcard engines/core/*.cc)
ifneq ($(HAVE_HNSWLIB),)
  CPPFLAGS += -DANNLAB_HAVE_HNSWLIB
  CXX_SRCS += $(wildcard engines/ref_hnswlib/*.cc)
endif
ifneq ($(HAVE_FAISS),)
  CPPFLAGS += -DANNLAB_HAVE_FAISS
  CXX_SRCS += $(wildcard engines/ref_faiss/*.cc)
  LDLIBS   += -lfaiss -lopenblas -lgomp
endif
ifneq ($(CXX_SRCS),)
  LDLIBS += -lstdc++
endif

LIB_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(LIB_SRCS)) $(patsubst %.cc,$(BUILD)/obj/%.o,$(CXX_SRCS))
LIB      := $(BUILD)/libannlab.a
BIN      := $(BUILD)/annlab
TEST_SRCS  := $(wildcard tests/test_*.c)
TEST_BINS  := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRCS))
TEST_SUPPORT := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard tests/support/*.c))
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))

.PHONY: all deps test test-bins bench experiment nightly nightly-baseline clean fuzz fuzz-bins fuzz-smoke coverage
.DEFAULT_GOAL := all
# Keep intermediate objects of tests and benchmarks (no rebuild on every run).
.PRECIOUS: $(BUILD)/obj/%.o

# A plain `make` on a fresh machine installs the packages first (deps.sh is quiet
# and quick when nothing is missing).
all: deps
	@$(MAKE) --no-print-directory $(BIN) annlab

deps:
	@./scripts/deps.sh

annlab: $(BIN)
	@ln -sfn $(BIN) annlab

# V=1 prints whole command lines.
Q := $(if $(V),,@)

# Objects are rebuilt when the compiler or a flag changes (another OPT=, a
# library installed since): $(BUILD)/.flags holds the last set used and is
# rewritten, and so made newer than every object, only when it differs.
FLAGS_STAMP := $(BUILD)/.flags
FLAGS_NOW   := $(CC) $(CXX) $(CPPFLAGS) $(CFLAGS) $(CXXFLAGS) $(LDFLAGS) $(LDLIBS)
ifneq ($(file < $(FLAGS_STAMP)),$(FLAGS_NOW))
  $(shell mkdir -p $(BUILD))
  $(file > $(FLAGS_STAMP),$(FLAGS_NOW))
endif

$(BUILD)/obj/%.o: %.c $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/%.o: %.cc $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CXX     $<")
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) -c $< -o $@

$(LIB): $(LIB_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BIN): $(BUILD)/obj/harness/main.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(TEST_SUPPORT) $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -lcmocka -o $@

$(BUILD)/bench/%: $(BUILD)/obj/bench/%.o $(LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ $(LDLIBS) -o $@

test-bins: $(TEST_BINS) $(BIN)

# Tests find ./annlab through ANNLAB_BIN and shared data through ANNLAB_SHARED.
# TEST_JOBS=N runs up to N test binaries at once (CI: 2; default 1).
TEST_JOBS ?= 1
test: deps
	@$(MAKE) --no-print-directory test-bins
	@ANNLAB_TEST_JOBS=$(TEST_JOBS) ANNLAB_BIN=$(CURDIR)/$(BIN) ANNLAB_SHARED=$(CURDIR)/../shared ./tests/run.sh $(TEST_BINS)

# Line and branch coverage: every test on the instrumented build (a failing
# test still leaves its counters), then gcovr's per-file figures summed per
# folder by scripts/coverage_summary.py (build-cov/coverage.json keeps them).
# C++ exception edges and branches the compiler proved unreachable are not
# counted as branches of ours.
coverage:
	@./scripts/deps.sh --coverage
	@$(MAKE) --no-print-directory COV=1 test-bins
	@find build-cov -name '*.gcda' -delete
	@ANNLAB_BIN=$(CURDIR)/build-cov/annlab ANNLAB_SHARED=$(CURDIR)/../shared ./tests/run.sh \
	  $(patsubst tests/%.c,build-cov/tests/%,$(TEST_SRCS)) || true
	@gcovr --root . --object-directory build-cov --exclude 'tests/' --exclude 'bench/' \
	  --gcov-ignore-parse-errors --exclude-throw-branches --exclude-unreachable-branches \
	  --json-summary build-cov/coverage.json > /dev/null
	@python3 scripts/coverage_summary.py build-cov/coverage.json

bench: deps
	@$(MAKE) --no-print-directory $(BENCH_BINS)

experiment: deps
	@$(MAKE) --no-print-directory all
	./annlab run $(CONFIG)

# Nightly regression run against results/baselines/nightly (scripts/nightly.sh).
nightly: deps
	@$(MAKE) --no-print-directory all
	./scripts/nightly.sh

nightly-baseline: deps
	@$(MAKE) --no-print-directory all
	./scripts/nightly.sh --baseline

clean:
	rm -rf build build-san build-fuzz build-cov annlab

-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)

# libFuzzer targets (clang; Debian's clang 14 is enough): every on-disk
# format's reader and the config loader, under ASan/UBSan, one binary per
# tests/fuzz/fuzz_*.c, linked against the whole library built with clang
# (the C++ reference engines left out: the targets do not need them;
# engines/core's C++ compiled with clang++).
#   make fuzz && build-fuzz/fuzz_sector -max_total_time=60 build-fuzz/corpus-sector
#   make fuzz-smoke [FUZZ_SECONDS=20]   every target briefly (CI)
FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 20
FUZZ_CPPFLAGS := $(filter-out -DANNLAB_HAVE_HNSWLIB -DANNLAB_HAVE_FAISS,$(CPPFLAGS))
FUZZ_FLAGS   := -g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined
FUZZ_WARN    := -Wall -Wextra -Werror   # not $(WARN): clang refuses -Wno-format-truncation
FUZZ_LIB_SRCS := $(filter-out engines/ref_%,$(LIB_SRCS))
FUZZ_CXX     ?= clang++
FUZZ_OBJS    := $(patsubst %.c,build-fuzz/obj/%.o,$(FUZZ_LIB_SRCS)) \
                $(patsubst %.cc,build-fuzz/obj/%.o,$(wildcard engines/core/*.cc))
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,build-fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_LIBS    := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -laio -lz -lm -lstdc++

build-fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCC  $<")
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) -std=c11 $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_WARN) -pthread -c $< -o $@

build-fuzz/obj/%.o: %.cc
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZCXX $<")
	$(Q)$(FUZZ_CXX) $(FUZZ_CPPFLAGS) -std=c++17 $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(FUZZ_WARN) -Wno-unused-parameter -pthread -c $< -o $@

build-fuzz/libannlab.a: $(FUZZ_OBJS)
	@rm -f $@
	$(Q)ar rcs $@ $^

build-fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_common.h build-fuzz/libannlab.a
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  FUZZLD  $@")
	$(Q)$(FUZZ_CC) $(FUZZ_CPPFLAGS) -std=c11 $(FUZZ_FLAGS) -fsanitize=fuzzer $(FUZZ_WARN) -pthread $< build-fuzz/libannlab.a $(FUZZ_LIBS) -o $@

# clang and libFuzzer's runtime first (scripts/deps.sh --fuzz), then the targets
fuzz:
	@./scripts/deps.sh --fuzz
	@$(MAKE) --no-print-directory fuzz-bins

fuzz-bins: $(FUZZ_TARGETS)

# Each target for FUZZ_SECONDS (fuzz_config starts from configs/*.json,
# fuzz_sector, fuzz_files, fuzz_buildjson and fuzz_runbook from the valid files they
# write at start-up into FUZZ_*_SEED); a crash
# leaves build-fuzz/crash-* and fails the target.
fuzz-smoke: fuzz
	@for t in $(FUZZ_TARGETS); do \
	  n=$$(basename $$t); echo "fuzz $$t ($(FUZZ_SECONDS) s)"; \
	  mkdir -p build-fuzz/corpus-$$n; \
	  if [ $$n = fuzz_config ]; then cp configs/*.json build-fuzz/corpus-$$n/; fi; \
	  FUZZ_SECTOR_SEED=build-fuzz/corpus-$$n FUZZ_FILES_SEED=build-fuzz/corpus-$$n FUZZ_BUILDJSON_SEED=build-fuzz/corpus-$$n FUZZ_RUNBOOK_SEED=build-fuzz/corpus-$$n $$t -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    -artifact_prefix=build-fuzz/ build-fuzz/corpus-$$n > build-fuzz/$$n.log 2>&1; rc=$$?; \
	  tail -4 build-fuzz/$$n.log; \
	  if [ $$rc -ne 0 ]; then echo "fuzz $$n: exit $$rc (log build-fuzz/$$n.log)"; exit 1; fi; \
	done
