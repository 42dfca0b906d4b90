# mpicast: the README's two commands are `make demo` and `make test`; both install what is missing.
CARGO ?= cargo
MPIRUN_FLAGS ?= --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1
RELEASE := target/release/mpicast

.PHONY: setup build examples demo test layers accuracy stability bench corpus corpus-scale fuzz clean

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release

examples: setup
	$(MAKE) -C examples

demo: build examples
	@./scripts/demo.sh

test: layers setup
	$(CARGO) test --no-fail-fast

# The layering docs/ARCHITECTURE.md states (no cycle between the folders of src/; src/mpi and
# src/platform use only src/model): a grep, first, since it needs no build.
layers:
	@./scripts/check_layers.sh

# Figures that are too slow or too noisy for the test suite: each script prints what it measured.
bench: build
	@./scripts/bench_analyze.sh
	@./scripts/bench_machine.sh
	@./scripts/bench_replay.sh
	@./scripts/bench_predict.sh
	@ANALYTIC=1 SIZES=1024 ./scripts/bench_predict.sh
	@./scripts/bench_scale.sh
	@./scripts/bench_p2pdc.sh

# Measured accuracy of every prediction mode against real runs, on this host and on emulated
# networks (network namespaces: needs root, skipped otherwise); writes docs/ACCURACY.md.
accuracy: build
	@./scripts/accuracy.sh

# Predictions from two machine tables measured back to back, side by side, for the examples and
# (after make corpus) the corpus's performance set (target: within 3%).
stability: build
	@./scripts/stability.sh

# Real MPI programs from Debian source packages (hpcc, simgrid, mpich, openmpi, netpipe), fetched into
# ~/.cache/mpicast/corpus and put through every stage; writes docs/CORPUS.md. CORPUS=quick: a subset.
CORPUS ?= full
corpus: build
	@./scripts/corpus.sh $(CORPUS)

# The corpus's traces scaled 2 -> 4, 2 -> 8 and 4 -> 16 against traces taken at those sizes (after
# make corpus); writes the "Trace scaling on the corpus" section of docs/ACCURACY.md.
corpus-scale: build
	@./scripts/corpus_scale.sh

# Mutation fuzzing of the readers and the front end (tests/fuzz.rs, in the integration test
# binary), MPICAST_FUZZ_SECS per target.
MPICAST_FUZZ_SECS ?= 600
fuzz:
	MPICAST_FUZZ_SECS=$(MPICAST_FUZZ_SECS) $(CARGO) test --release --test integration -- --ignored --test-threads=1 --nocapture \
		fuzz::fuzz_trace fuzz::fuzz_frontend fuzz::fuzz_json fuzz::fuzz_expr

clean:
	$(CARGO) clean
	$(MAKE) -C examples clean
