#!/usr/bin/env bash
# How often the asynchronous P2PDC schemes stop unconverged under load: obstacle3d_p2p at 4 ranks
# (RUNS times per scheme, n=15, 2,000 iterations, tol 1e-6) while one busy process per core
# spins and the other scheme's job runs at the same time. Prints the runs that stopped at the
# iteration limit per scheme. About 2 s a run on an idle 2-core host.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-300}
make -C examples >/dev/null
exe=$PWD/examples/build/obstacle3d_p2p
work=$(mktemp -d /tmp/mpicast-stress-p2pdc.XXXXXX)
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq "$(nproc)"); do
    sh -c 'while :; do :; done' &
    pids+=($!)
done
loop() { # scheme
    local stalled=0 dir=$work/$1
    mkdir -p "$dir"
    for _ in $(seq "$runs"); do
        out=$(timeout 120 mpirun --allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 \
            --bind-to none --stdin none --mca orte_tmpdir_base "$dir" -n 4 "$exe" --scheme="$1" \
            15 2000 1e-6 2>&1 || true)
        grep -q "converged=1" <<<"$out" || stalled=$((stalled + 1))
    done
    echo "$1: $stalled of $runs runs stopped unconverged"
}
echo "obstacle3d_p2p at 4 ranks, $(nproc) cores, $(nproc) busy processes, async and hybrid jobs side by side:"
loop hybrid > "$work/hybrid.out" &
hybrid=$!
loop async
wait "$hybrid"
cat "$work/hybrid.out"
