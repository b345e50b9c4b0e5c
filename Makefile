# lsmlab: reproduce storage-engine papers.
#
#   make                    every experiment at SCALE=small, then figures and REPORT.md
#   make test               unit/integration tests, then a SCALE=tiny smoke run of every experiment
#   make soak               the differential soak at a long budget (SOAK_OPS=30000 per configuration)
#   make loom               loom model checking of the Update Memo's concurrent paths
#   make fuzz               hostile input at a long budget (FUZZ_CASES=1500 per target): page decoders,
#                           data loaders, config parsers; prints the executions run per target
#   make rum-update         one experiment (run + figures); make rum = every RUM-tree experiment,
#                           make leaper = every Leaper experiment (leaper-online, -model, -sensitivity),
#                           make scaling = lsmlab's own scaling study (`lsmlab list --of NAME` tells)
#   make plot report        figures and report of $(SCALE) from its existing results
#   make SCALE=tiny|small|paper SEED=N SET="key=value key2=value2" <target>
#
# The report of SCALE=small is REPORT.md (the committed reference); any other scale writes
# $(RESULTS)/<scale>/REPORT.md beside its results, so a tiny or paper run never rewrites REPORT.md.
#
# `lsmlab list` shows the experiments, `lsmlab params EXPERIMENT` their parameters.

SCALE   ?= small
SEED    ?= 42
SET     ?=
RESULTS ?= results
PLOTS   ?= plots
REPORT  ?= $(if $(filter small,$(SCALE)),REPORT.md,$(RESULTS)/$(SCALE)/REPORT.md)
CARGO   ?= cargo
LSMLAB  = target/release/lsmlab
# The binary `cargo test` builds (test profile) for the integration tests; the smoke run uses it,
# so `make test` compiles the workspace once, in one profile.
TEST_LSMLAB = $(or $(CARGO_TARGET_DIR),target)/debug/lsmlab
SMOKE   = target/smoke

SET_ARGS = $(foreach kv,$(SET),--set '$(kv)')
RUN      = $(LSMLAB) run --scale $(SCALE) --seed $(SEED) --out $(RESULTS) $(SET_ARGS)
PLOT     = $(LSMLAB) plot --results $(RESULTS) --out $(PLOTS) --scale $(SCALE)
REPORTS  = $(LSMLAB) report --results $(RESULTS) --plots $(PLOTS) --scale $(SCALE) --out $(REPORT)

.PHONY: all build test bench soak loom fuzz plot report clean-results

all: build
	@set -e; names="$$($(LSMLAB) list --names)"; \
	if [ -z "$$names" ]; then echo "no experiments are registered" >&2; exit 1; fi; \
	for e in $$names; do echo "== $$e ($(SCALE))"; $(RUN) $$e; done
	$(PLOT)
	$(REPORTS)

# The release binary is remade only when a file it is built from is newer than it (file dates):
# the Rust sources, manifests, lock file and the claims the binary embeds. Cargo then decides what
# to compile; when it finds everything fresh it leaves the binary's date alone, so the binary is
# touched to say so, and the next make skips cargo altogether. `make -B build` asks cargo anyway
# (after a toolchain or RUSTFLAGS change, which no file date shows).
BUILD_INPUTS := Cargo.toml Cargo.lock $(shell find engine workloads experiments -type f \
	\( -name '*.rs' -o -name Cargo.toml -o -path '*/claims/*.json' \) -not -path '*/target/*' 2>/dev/null)

build: $(LSMLAB)

$(LSMLAB): $(BUILD_INPUTS)
	$(CARGO) build --release -p lsmlab
	@touch $@

# The inputs are never remade (in particular not through the match-anything rule at the end).
$(BUILD_INPUTS): ;

# The smoke run uses the binary the tests were built with (a tiny run takes seconds at the test
# profile's optimisation), not a second, release build of the whole workspace.
test:
	$(CARGO) test --workspace
	rm -rf $(SMOKE)
	@set -e; bin="$(TEST_LSMLAB)"; \
	if [ ! -x "$$bin" ]; then echo "error: $$bin was not built by cargo test" >&2; exit 1; fi; \
	names="$$($$bin list --names)"; \
	for e in $$names; do \
		echo "== smoke: $$e (tiny)"; \
		$$bin run $$e --scale tiny --seed $(SEED) --out $(SMOKE)/results --quiet; \
	done; \
	if [ -n "$$names" ]; then \
		$$bin plot --results $(SMOKE)/results --out $(SMOKE)/plots --scale tiny; \
		$$bin report --results $(SMOKE)/results --plots $(SMOKE)/plots --scale tiny --out $(SMOKE)/REPORT.md; \
	else echo "no experiments registered: smoke run skipped"; fi

# Criterion benches (lsmlab beside its peer crates in engine/benches/peers.rs and cache.rs), the
# paired rounds of the rows near 1.0 (engine/benches/paired.rs, into target/paired), then the
# ratios in results/bench/peers.json. --noplot: criterion's own charts need system fonts, which
# a fresh machine may not have (lsmlab's figures embed theirs). BENCH_PREVIOUS=FILE (an earlier
# run's summary, e.g. the committed peers.json just before a second run) adds that run's ratio to
# each row.
BENCH_PREVIOUS ?=
bench: build
	$(CARGO) bench --workspace --bench '*' -- --noplot
	$(LSMLAB) bench-summary --criterion target/criterion --paired target/paired \
		--out $(RESULTS)/bench/peers.json $(if $(BENCH_PREVIOUS),--previous $(BENCH_PREVIOUS))

# The differential soak at a long budget: SOAK_OPS operations per configuration of every engine
# (the LSM R-tree's strategies and variants, the key-value store under every warm-up policy, every
# time-series layout, both cluster layouts; engine parameters drawn from the seed, both devices)
# against a brute-force oracle, printing per engine the operations checked, flushes, merges or
# compactions and mismatches; a failure prints a shrunk stream. Then the concurrency tests at long
# budgets: STRESS_OPS operations per Update Memo variant on 8 threads against a sequential replay,
# and CACHE_RACE_OPS reads per reader thread racing page invalidation, reuse and rewrites.
SOAK_OPS       ?= 30000
SOAK_SEED      ?= 0
STRESS_OPS     ?= 1000000
CACHE_RACE_OPS ?= 200000
soak:
	SOAK_OPS=$(SOAK_OPS) SOAK_SEED=$(SOAK_SEED) STRESS_OPS=$(STRESS_OPS) CACHE_RACE_OPS=$(CACHE_RACE_OPS) \
		$(CARGO) test --release --no-fail-fast -p lsmlab-engine --test soak --test stress --test cache_race -- --nocapture

# Model checking of the Update Memo's concurrent paths: every interleaving of record / release /
# insert / is-obsolete on one object (engine/tests/loom_um.rs), and of a lock-free reader racing a
# writer that grows a table (engine/src/spatial/um.rs, loom_tests), up to LOOM_MAX_PREEMPTIONS
# preemptions, in its own target directory (loom needs the whole build under --cfg loom).
LOOM_MAX_PREEMPTIONS ?= 3
LOOM_ENV = RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom LOOM_MAX_PREEMPTIONS=$(LOOM_MAX_PREEMPTIONS)
loom:
	$(LOOM_ENV) $(CARGO) test --release -p lsmlab-engine --test loom_um
	$(LOOM_ENV) $(CARGO) test --release -p lsmlab-engine --lib spatial::um::loom_tests

# Hostile input at a long budget: every page decoder fed mutated pages through a hostile device
# (engine/tests/fuzz_pages.rs), every data loader and trace reader fed raw and mutated files
# (workloads/tests/fuzz_loaders.rs), the config parsers fed raw and mutated text
# (experiments/tests/fuzz_config.rs); FUZZ_CASES cases per target, executions printed per target.
FUZZ_CASES ?= 1500
fuzz:
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test -p lsmlab-engine --test fuzz_pages -- --nocapture --test-threads 1
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test -p lsmlab-workloads --test fuzz_loaders -- --nocapture --test-threads 1
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test -p lsmlab --test fuzz_config -- --nocapture --test-threads 1

plot: build
	$(PLOT)

report: build
	$(REPORTS)

# Any other target is a paper id (every experiment of the paper: rum, leaper, diol, oep7,
# combined) or an experiment's name (rum-update, scaling): run it at $(SCALE), then render the
# figures of that scale. `lsmlab list --of` says which experiments a target stands for and refuses
# a name the registry (experiments/src/registry.rs) does not know, so a new paper or experiment
# needs no line here.
%: build
	@set -e; names="$$($(LSMLAB) list --of '$@')"; \
	for e in $$names; do echo "== $$e ($(SCALE))"; $(RUN) $$e; done
	$(PLOT)

# The makefile itself is never remade through the rule above.
Makefile: ;

# Removes the results (with their report, for scales other than small) and figures of $(SCALE) only
# (reference runs of other scales stay).
clean-results:
	rm -rf $(RESULTS)/$(SCALE) $(PLOTS)/$(SCALE)
