#!/usr/bin/env bash
# Static prediction speed: mpicast predict for each example that the static path resolves, at 16,
# 256 and 1024 ranks on platforms/cluster-ib.xml, the examples' default arguments. Prints min and
# median wall time over RUNS runs (default 5), min and median of the time before the simulation
# (the static evaluation and the trace), the last run's simulation time, the messages simulated and
# how many of the main loop's iterations steady-state folding simulated (- when it did not fold;
# in brackets, how many of the iterations of a loop nested in it each of them simulated).
# SIZES="16 256" picks the rank counts; ANALYTIC=1 replays by formula (--analytic) instead of in
# SimGrid.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=target/release/mpicast
runs=${RUNS:-5}
machine=${MACHINE:-tests/fixtures/machine/fixed.json}
printf '%-18s %6s %10s %10s %11s %11s %10s %12s %14s\n' example ranks min_s median_s presim_min presim_med sim_s messages folded
for ex in pi_dartboard matmul_mw jacobi2d stencil3d_torus; do
    for n in ${SIZES:-16 256 1024}; do
        walls=(); evals=(); sim=0; msgs=0
        for _ in $(seq "$runs"); do
            out=$("$bin" predict "examples/$ex.c" -n "$n" --platform platforms/cluster-ib.xml \
                --machine "$machine" ${ANALYTIC:+--analytic} --json - )
            walls+=("$(echo "$out" | sed -n 's/^ *"wall_s": *\([0-9.eE+-]*\).*/\1/p')")
            evals+=("$(python3 -c 'import json, sys; p = json.load(sys.stdin); print(p["wall_s"] - p["simulation_wall_s"])' <<<"$out")")
            read -r sim msgs folded < <(python3 -c '
import json, sys
p = json.load(sys.stdin)
f = p.get("folded")
folded = "-"
if f:
    folded = "%d/%d" % (f["simulated"], f["iterations"])
    if f.get("inner"):
        folded += "(%d/%d)" % (f["inner"]["simulated"], f["inner"]["iterations"])
print(p["simulation_wall_s"], p["messages"], folded)' <<<"$out")
        done
        sorted=$(printf '%s\n' "${walls[@]}" | sort -g)
        min=$(echo "$sorted" | head -1)
        med=$(echo "$sorted" | sed -n "$(( (runs + 1) / 2 ))p")
        esorted=$(printf '%s\n' "${evals[@]}" | sort -g)
        emin=$(echo "$esorted" | head -1)
        emed=$(echo "$esorted" | sed -n "$(( (runs + 1) / 2 ))p")
        printf '%-18s %6d %10.3f %10.3f %11.3f %11.3f %10.3f %12d %14s\n' "$ex" "$n" "$min" "$med" "$emin" "$emed" "$sim" "$msgs" "${folded:--}"
    done
done
echo "(target at 1,024 ranks: jacobi2d under 2 s, stencil3d_torus under 1 s; sim_s is the last run's simulation time)"
