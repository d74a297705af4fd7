# tarema: the only build entry point. `make help` lists the targets.
#
# Layout rules (no per-file edits needed when a module is added):
#   lib/*.c                    -> build/libtarema.a
#   <component>/**/*.c but main.c -> $(O)/lib<component>.a (every component; any depth)
#   <component>/main.c         -> $(BINDIR)/tarema-<component>
#   tests/unit/*_test.c        -> $(O)/tests/unit/*       (run by `make test-unit`)
#   tests/e2e/*_test.c         -> $(O)/tests/e2e/*        (run with tests/e2e/*_test.sh by `make test-e2e`)
#   bench/*_bench.c            -> $(O)/bench/*            (run by `make bench`)

# O and BINDIR let several builds share one tree without racing (make O=/tmp/x BINDIR=/tmp/x/bin).
O       ?= build
BINDIR  ?= bin
CC      ?= cc
PKGS    := libcurl jansson libpq yaml-0.1 libmicrohttpd gnutls
WARN    := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes -Wno-unused-parameter
OPT     ?= -O2 -g
CFLAGS  += -std=c17 -D_GNU_SOURCE $(OPT) $(WARN) -MMD -MP -I. -Itests
CFLAGS  += $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lglpk -lm -lpthread

COMPONENTS := profiler labeler scheduler sim planner dam
LIB_SRCS   := $(wildcard lib/*.c)
LIB_OBJS   := $(LIB_SRCS:%.c=$(O)/%.o)
# A component's sources are every .c under its folder (scheduler/ has subfolders), but main.c.
comp_srcs   = $(filter-out $(1)/main.c,$(sort $(shell find $(1) -name '*.c' 2>/dev/null)))
COMP_LIBS  := $(foreach c,$(COMPONENTS),$(if $(call comp_srcs,$(c)),$(O)/lib$(c).a))
BINS       := $(foreach c,$(COMPONENTS),$(if $(wildcard $(c)/main.c),$(BINDIR)/tarema-$(c)))
UNIT_TESTS := $(patsubst tests/unit/%.c,$(O)/tests/unit/%,$(wildcard tests/unit/*_test.c))
E2E_TESTS  := $(patsubst tests/e2e/%.c,$(O)/tests/e2e/%,$(wildcard tests/e2e/*_test.c))
BENCHES    := $(patsubst bench/%.c,$(O)/bench/%,$(wildcard bench/*_bench.c))
# Every program links all archives as one group, so archive order never matters.
LINK_LIBS   = -Wl,--start-group $(COMP_LIBS) $(O)/libtarema.a -Wl,--end-group $(LDLIBS)

.SECONDARY:
.PHONY: all deps test test-unit test-e2e test-versions test-sanitize sanitize-build bench demo fuzz image \
        lint format clean help conformance e2e-binary
all: $(BINS) $(UNIT_TESTS) $(E2E_TESTS) $(BENCHES)

help:
	@echo "make            build lib, every component into bin/, and the tests"
	@echo "make test       all tests: unit and end-to-end (real control plane and PostgreSQL)"
	@echo "make test-unit  only the fast unit tests"
	@echo "make test-e2e   only the end-to-end tests"
	@echo "make test-versions  the Kubernetes-version-dependent e2e tests (gangs, Workload API) on every"
	@echo "                version in hack/versions.env (each built once, ~40+ min cold on 2 cores)"
	@echo "make test-sanitize  unit tests and our programs' e2e tests built with ASan+UBSan"
	@echo "make fuzz       libFuzzer harnesses of every parser (FUZZ_RUNS or FUZZ_SECONDS each)"
	@echo "make bench      benchmarks (figures printed, nothing asserted on time)"
	@echo "make conformance  Kubernetes' own [sig-scheduling] e2e specs, kube-scheduler vs tarema (~30 min; docs/conformance.md)"
	@echo "make demo       the whole system on a local heterogeneous cluster"
	@echo "make image      OCI images of scheduler, labeler, profiler, dam, planner in $(O)/image (no Docker needed)"
	@echo "make lint       layering (hack/check-layers.sh), clang-format check and cppcheck"

# Installs Debian packages when a library is missing; a no-op once they are there.
$(O)/.deps-ok: hack/install-deps.sh
	@pkg-config --exists $(PKGS) && [ -f /usr/include/glpk.h ] && command -v sysbench >/dev/null \
	  && command -v fio >/dev/null || bash hack/install-deps.sh
	@mkdir -p $(O) && touch $@
deps: $(O)/.deps-ok

$(O)/%.o: %.c | $(O)/.deps-ok
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(O)/libtarema.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

define component_rules
$(O)/lib$(1).a: $$(patsubst %.c,$(O)/%.o,$$(call comp_srcs,$(1)))
	@rm -f $$@
	ar rcs $$@ $$^
$(BINDIR)/tarema-$(1): $(O)/$(1)/main.o $(COMP_LIBS) $(O)/libtarema.a
	@mkdir -p $(BINDIR)
	$$(CC) $$(CFLAGS) -o $$@ $$< $$(LINK_LIBS)
endef
$(foreach c,$(COMPONENTS),$(eval $(call component_rules,$(c))))

$(O)/tests/%: $(O)/tests/%.o $(COMP_LIBS) $(O)/libtarema.a
	$(CC) $(CFLAGS) -o $@ $< $(LINK_LIBS)
$(O)/bench/%: $(O)/bench/%.o $(COMP_LIBS) $(O)/libtarema.a
	$(CC) $(CFLAGS) -o $@ $< $(LINK_LIBS)

test: all e2e-binary
	@O=$(O) BINDIR=$(BINDIR) bash tests/run.sh all
test-unit: all
	@O=$(O) BINDIR=$(BINDIR) bash tests/run.sh unit
test-e2e: all e2e-binary
	@O=$(O) BINDIR=$(BINDIR) bash tests/run.sh e2e
# Kubernetes' own e2e.test ([sig-scheduling] specs) for tests/e2e/upstream_scheduling_test.sh,
# built before the tests so that its first build (minutes) does not count against a test's
# timeout; cached in ~/.cache/tarema, a no-op afterwards.
e2e-binary:
	@bash hack/build-e2e.sh

# The tests whose subject changes with the Kubernetes version (native gang APIs), once per
# supported version (KUBERNETES_VERSIONS, or VERSIONS="v1.37.2 ..."), each on its own cluster.
test-versions: all
	@status=0; for v in $${VERSIONS:-$$(. hack/versions.env; echo $$KUBERNETES_VERSIONS)}; do \
	  echo "### Kubernetes $$v"; \
	  TAREMA_K8S_VERSION=$$v O=$(O) BINDIR=$(BINDIR) \
	    TEST_FILTER='e2e/(gang_.*|cluster_workload_api_test\.sh)' bash tests/run.sh e2e || status=1; \
	done; exit $$status

bench: all
	@status=0; bash hack/bench.sh || status=1; \
	  BINDIR=$(BINDIR) bash bench/gang_bench.sh || status=1; \
	  BINDIR=$(BINDIR) bash bench/differential_kube.sh || status=1; \
	  exit $$status

# `make conformance`: Kubernetes' own [sig-scheduling] e2e specs (upstream e2e.test, built once
# by hack/build-e2e.sh) under kube-scheduler and under tarema-scheduler as the only scheduler,
# each on a fresh local cluster; CONFORMANCE_OUT gets report.md (per spec: both results) and the
# two JUnit files. About 30 minutes (several specs wait out 120-300 s timeouts).
CONFORMANCE_OUT ?= build/conformance
conformance: $(BINS) e2e-binary
	@BINDIR=$(BINDIR) bash hack/e2e-scheduling.sh compare $(CONFORMANCE_OUT) \
	  --expected hack/e2e/expected-tarema-failures.txt

demo: all
	@bash hack/demo.sh

fuzz: all
	@bash hack/fuzz.sh

# Daemonless: debootstrap root filesystem (cached in ~/.cache/tarema/image) + the binaries,
# packed by crane. Pushing: docs/operations.md, "Images".
image: $(BINS)
	@bash hack/build-image.sh --bin $(BINDIR) --out $(O)/image

# `make test-sanitize`: the unit tests and the e2e tests of our own programs, built by gcc with
# AddressSanitizer and UndefinedBehaviorSanitizer into a tree of their own (build/sanitize,
# never mixed with the normal objects). Every report is fatal (-fno-sanitize-recover,
# halt_on_error; LeakSanitizer at exit), so the test that triggered it fails. SANITIZE_E2E
# names the e2e tests run (through tests/run.sh TEST_FILTER): every one whose subject is our
# binaries. Left out, as they run no binary of this build: cluster_* (hack/cluster.sh and
# hack/postgres.sh themselves), deploy_chart (Helm lint and templates), deploy_image
# (hack/image's build steps compile their own binaries) and deploy_demo (`make demo` builds and
# runs the normal bin/). About 10 minutes on 2 cores.
SAN_O        ?= build/sanitize
SAN_FLAGS    := -O2 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
                -fno-omit-frame-pointer
SANITIZE_E2E ?= lib_kube_lease lib_kube_sync lib_kube_watch labeler_store yaml_limits sim_cli \
                labeler_cli labeler_groups labeler_weblog labeler_outage profiler_apply \
                scheduler_extender scheduler_live scheduler_conflict scheduler_leader deploy_cluster \
                dam_rank dam_service dam_failover dam_chart dam_store dam_workflow \
                sizing_webhook asa_waits asa_tables sim_asa sim_sizing
SAN_ENV      := ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:detect_stack_use_after_return=0 \
                UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
                LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitize/lsan.supp:print_suppressions=0
san_space    := $(san_empty) $(san_empty)
sanitize-build: $(BINS) $(UNIT_TESTS) $(E2E_TESTS)

test-sanitize:
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j2) O=$(SAN_O) \
	  BINDIR=$(SAN_O)/bin OPT="$(SAN_FLAGS)" sanitize-build
	@$(SAN_ENV) O=$(SAN_O) BINDIR=$(SAN_O)/bin \
	  TEST_FILTER='^(unit/.*|e2e/($(subst $(san_space),|,$(strip $(SANITIZE_E2E))))_test(\.sh)?)$$' \
	  bash tests/run.sh all

SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
# check-layers: the layer table of docs/architecture.md on the includes and on the archives'
# symbols (also run by `make test`, as tests/e2e/layers_test.sh).
lint: $(COMP_LIBS) $(O)/libtarema.a | $(O)/.deps-ok
	bash hack/check-layers.sh --build $(O)
	clang-format --dry-run -Werror $(SOURCES)
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -I. -Itests $(filter %.c,$(SOURCES))
format:
	clang-format -i $(SOURCES)

clean:
	rm -rf build bin

-include $(shell find $(O) -name '*.d' 2>/dev/null)

# labeler/migrations.c embeds the SQL files with .incbin, which -MMD cannot see.
$(O)/labeler/migrations.o: $(wildcard labeler/migrations/*.sql)
