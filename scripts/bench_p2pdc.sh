#!/usr/bin/env bash
# P2PDC. Part 1: obstacle3d_p2p in the sync, async and hybrid schemes, measured at 2 and
# 4 ranks on this host (RUNS real runs, median and min) against the prediction from its trace
# (block counts, and measured bursts), through `mpicast validate`. Part 2: each scheme traced at
# 6 ranks (three groups of two in the hybrid scheme) and swept to 12 and 24 ranks on platforms/grid5000.xml (four sites, heterogeneous
# hosts, wide-area latencies): efficiency per scheme, as dPerf's Fig. 9.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MPICAST:-target/release/mpicast}
runs=${RUNS:-5}
args=${ARGS:-48 10000}
sweep_args=${SWEEP_ARGS:-64 10000}
work=$(mktemp -d /tmp/mpicast-bench-p2pdc.XXXXXX)
trap 'rm -rf "$work"' EXIT
src=examples/obstacle3d_p2p.c
inst=$PWD/instrument

echo "obstacle3d_p2p $args on this host ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)), $runs runs:"
printf '%-7s %5s %22s %22s %22s\n' scheme ranks "measured median (min)" "trace counts" "measured bursts"
for sch in sync async hybrid; do
    "$bin" validate "$src" -n 2,4 --runs "$runs" --modes trace,measured --cflags "-I$inst" \
        --libs "$inst/p2pdc.c -lm" --args="--scheme=$sch $args" --json "$work/v-$sch.json" >/dev/null 2>"$work/err" \
        || { echo "$sch: validate failed: $(tail -1 "$work/err")"; continue; }
    python3 - "$work/v-$sch.json" "$sch" <<'PY'
import json, sys
v = json.load(open(sys.argv[1]))
for p in v["points"]:
    m = p["measured"]
    cells = []
    for mode in ("trace", "measured"):
        q = next((x for x in p["predictions"] if x["mode"] == mode), None)
        if q and q["status"] == "ok":
            cells.append("%.3f s (%+.1f%%)" % (q["predicted_s"], q["error_pct"]))
        else:
            cells.append("n/a")
    meas = "%.3f s (%.3f s)" % (m["median_s"], m["min_s"]) if m else "failed"
    print("%-7s %5d %22s %22s %22s" % (sys.argv[2], p["ranks"], meas, cells[0], cells[1]))
PY
done

echo
echo "obstacle3d_p2p $sweep_args on grid5000 (traced at 6 ranks, scaled; efficiency relative to 6 ranks):"
for sch in sync async hybrid; do
    d="$work/t-$sch"
    "$bin" trace "$src" -n 6 -o "$d" --all-blocks \
        --mpirun-args "--allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none" \
        -- --scheme=$sch $sweep_args >/dev/null 2>"$work/err" || { echo "$sch: trace failed: $(tail -1 "$work/err")"; continue; }
    "$bin" sweep "$src" -n 6,12,24 --trace "$d" --platform platforms/grid5000.xml --svg "$work/$sch.svg" \
        --json "$work/s-$sch.json" -- --scheme=$sch $sweep_args >/dev/null 2>"$work/err" \
        || { echo "$sch: sweep failed: $(tail -1 "$work/err")"; continue; }
done
python3 - "$work" <<'PY'
import json, os, sys
rows = {}
for sch in ("sync", "async", "hybrid"):
    f = os.path.join(sys.argv[1], "s-%s.json" % sch)
    if os.path.exists(f):
        rows[sch] = {p["ranks"]: p for p in json.load(open(f))["points"]}
ranks = sorted({r for v in rows.values() for r in v})
print("%-7s " % "scheme" + " ".join("%18s" % ("%d ranks" % r) for r in ranks))
for sch, pts in rows.items():
    print("%-7s " % sch + " ".join("%18s" % ("%.3f s  %5.1f%%" % (pts[r]["predicted_s"], 100 * pts[r]["efficiency"]) if r in pts else "-") for r in ranks))
print("(each cell: predicted time and efficiency = T(6) x 6 / (T(N) x N))")
PY
