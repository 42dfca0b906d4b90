#!/usr/bin/env bash
# The demo: the ChronosMix case study (examples/pi_dartboard.c) on 4 ranks: predicted by mpicast
# from its source without running it, then run for real, both printed.
set -euo pipefail
cd "$(dirname "$0")/.."
MPIRUN_FLAGS=${MPIRUN_FLAGS:---allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1}
bin=target/release/mpicast
args=(2000000 4)

echo "== mpicast analyze examples/pi_dartboard.c --summary (blocks counted without a run)"
"$bin" analyze examples/pi_dartboard.c --summary

echo
echo "== mpicast predict examples/pi_dartboard.c -n 4 --platform platforms/localhost.xml -- ${args[*]}"
echo "   (static path: no run; the machine table is measured on first use and cached)"
"$bin" predict examples/pi_dartboard.c -n 4 --platform platforms/localhost.xml --json /tmp/mpicast-demo-prediction.json -- "${args[@]}"
predicted=$(sed -n 's/^ *"predicted_s": *\([0-9.eE+-]*\).*/\1/p' /tmp/mpicast-demo-prediction.json)

echo
echo "== measured: mpirun -n 4 examples/build/pi_dartboard ${args[*]} (2 cores, oversubscribed)"
# shellcheck disable=SC2086
out=$(mpirun $MPIRUN_FLAGS -n 4 examples/build/pi_dartboard "${args[@]}")
echo "$out"
measured=$(echo "$out" | sed -n 's/^elapsed_s=//p')

echo
awk -v p="$predicted" -v m="$measured" 'BEGIN {
    printf "predicted %.3f s   measured %.3f s (the program'"'"'s own timer)   error %+.1f%%\n", p, m, 100 * (p - m) / m
}'
