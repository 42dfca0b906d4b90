# mpicast: the README's two commands are `make demo` and `make test`; both install what is missing.
CARGO ?= cargo
MPIRUN_FLAGS ?= --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1
RELEASE := target/release/mpicast

.PHONY: setup build examples demo test accuracy bench clean

setup:
	@./scripts/setup.sh

build: setup
	$(CARGO) build --release

examples: setup
	$(MAKE) -C examples

demo: build examples
	@./scripts/demo.sh

test: setup
	$(CARGO) test --no-fail-fast

# Figures that are too slow or too noisy for the test suite: each script prints what it measured.
bench: build
	@./scripts/bench_analyze.sh
	@./scripts/bench_machine.sh
	@./scripts/bench_replay.sh
	@./scripts/bench_predict.sh

clean:
	$(CARGO) clean
	$(MAKE) -C examples clean
