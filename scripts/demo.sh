#!/usr/bin/env bash
# The demo: run the ChronosMix case study (examples/pi_dartboard.c) for real on 4 ranks and show
# what mpicast does with it.
set -euo pipefail
cd "$(dirname "$0")/.."
MPIRUN_FLAGS=${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1}
bin=target/release/mpicast
args=(2000000 4)

echo "== measured: mpirun -n 4 examples/build/pi_dartboard ${args[*]} (2 cores, oversubscribed)"
# shellcheck disable=SC2086
mpirun $MPIRUN_FLAGS -n 4 examples/build/pi_dartboard "${args[@]}"

echo
echo "== mpicast analyze examples/pi_dartboard.c --summary (blocks counted without a run)"
"$bin" analyze examples/pi_dartboard.c --summary
