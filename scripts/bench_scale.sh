#!/usr/bin/env bash
# Trace scaling. Part 1: for each example, the prediction from a small trace (2, 3 or 4
# ranks) scaled to 4 to 16 ranks against the prediction from a real trace taken at that size,
# both through the same simulator (target: within 3%), in the default program scaling and,
# for comparison, the strong and weak assumptions. Part 2: 65,536 ranks predicted by scaling a
# 4-rank trace, wall time and peak memory (target: under 30 s and 4 GiB), in SimGrid and by the
# analytic replay (MODES="analytic" for the latter alone); MILLION=1 adds 1,048,576 ranks. BIG_RUNS
# (default 1) runs each of part 2's predictions that many times and prints the min, median and max
# wall time and the largest process over the runs (MILLION_RUNS for the million-rank ones); PART=2 skips part 1.
# Real traces at 16 ranks run oversubscribed on small machines; their counts do not depend on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MPICAST:-target/release/mpicast}
machine=${MACHINE:-tests/fixtures/machine/fixed.json}
plat=${PLATFORM:-platforms/cluster-gige.xml}
work=$(mktemp -d /tmp/mpicast-bench-scale.XXXXXX)
trap 'rm -rf "$work"' EXIT
mpirun_args="--allow-run-as-root --oversubscribe --mca mpi_yield_when_idle 1 --bind-to none"
# Part 1's table also goes into this file's "## Trace scaling" section (replaced, or appended).
doc=${SCALE_DOC:-docs/ACCURACY.md}
rows="$work/rows.md"
: >"$rows"

trace() { # example ranks args...
    local ex=$1 n=$2; shift 2
    local d="$work/$ex-$n-$(echo "$*" | tr ' ' _)"
    if [ ! -d "$d" ]; then
        "$bin" trace "examples/$ex.c" -n "$n" -o "$d" --all-blocks --mpirun-args "$mpirun_args" -- "$@" >/dev/null 2>"$d.err" \
            || { echo "trace $ex at $n ranks failed: $(tail -1 "$d.err")" >&2; return 1; }
    fi
    echo "$d"
}
predict() { # example ranks tracedir mode args... -> "seconds messages how" or "refused: ..."
    local ex=$1 n=$2 dir=$3 mode=$4; shift 4
    local out
    if out=$("$bin" predict "examples/$ex.c" -n "$n" --trace "$dir" --scaling "$mode" --machine "$machine" \
        --platform "$plat" --json - -- "$@" 2>"$work/err"); then
        python3 -c 'import json,sys; p=json.load(sys.stdin); print(p["predicted_s"], p["messages"], "static" if p["mode"] == "static" else "trace")' <<<"$out"
    else
        echo "refused: $(tail -1 "$work/err" | cut -c1-110)"
    fi
}

printf '%-16s %5s %4s  %-8s %12s %12s %8s %9s %s\n' example from to scaling scaled_s real_s diff messages how
# example|K|targets N'|arguments: K -> N' in {2 -> 4, 2 -> 8, 4 -> 16} for every example (a
# 2-rank master-worker trace has one worker: matmul_mw from 3).
cases=(
    "pi_dartboard|2|4 8|1000000 10"
    "pi_dartboard|4|16|1000000 10"
    "matmul_mw|3|6 12|512 3"
    "matmul_mw|4|16|512 3"
    "jacobi2d|2|4 8|256 200 10"
    "jacobi2d|4|16|256 200 10"
    "stencil3d_torus|2|4 8|64 50"
    "stencil3d_torus|4|16|64 50"
    "obstacle3d|2|4 8|64 10000"
    "obstacle3d|4|16|64 10000"
    "isort|2|4 8|65536 3"
    "isort|4|16|65536 3"
)
[ "${PART:-all}" = 2 ] && cases=()
for c in "${cases[@]}"; do
    IFS='|' read -r ex k targets args <<<"$c"
    read -ra a <<<"$args"
    small=$(trace "$ex" "$k" "${a[@]}") || continue
    for n in $targets; do
        big=$(trace "$ex" "$n" "${a[@]}") || continue
        read -r real realmsg _ <<<"$(predict "$ex" "$n" "$big" program "${a[@]}")"
        for mode in program strong weak; do
            res=$(predict "$ex" "$n" "$small" "$mode" "${a[@]}")
            if [[ $res == refused* ]]; then
                printf '%-16s %5d %4d  %-8s %s\n' "$ex" "$k" "$n" "$mode" "$res"
                printf '| %s | %d -> %d | %s | refused | %.6f | | | |\n' "$ex" "$k" "$n" "$mode" "$real" >>"$rows"
                continue
            fi
            read -r s msgs how <<<"$res"
            diff=$(python3 -c "print('%+.2f' % (100*($s/$real-1)))")
            printf '%-16s %5d %4d  %-8s %12.6f %12.6f %7s%% %9s %s\n' "$ex" "$k" "$n" "$mode" "$s" "$real" "$diff" "$msgs/$realmsg" "$how"
            printf '| %s | %d -> %d | %s | %.6f | %.6f | %s%% | %s | %s |\n' "$ex" "$k" "$n" "$mode" "$s" "$real" "$diff" "$msgs/$realmsg" "$how" >>"$rows"
        done
    done
done
echo "(scaled_s: predicted from the small trace scaled (how: trace), or from the static path at that size (how: static); real_s: from a trace taken at that size; target within 3%)"
[ "${PART:-all}" != 2 ] && python3 - "$doc" "$rows" "$machine" "$plat" <<'PY'
import re, sys, datetime
doc, rows, machine, plat = sys.argv[1:5]
table = open(rows).read()
section = (
    "## Trace scaling\n\n"
    f"Measured by `scripts/bench_scale.sh` (part 1) on {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC: each example traced "
    "(`--all-blocks`) at K ranks and at N', the K-rank trace scaled to N' (`predict -n N' --trace TRACE_K --scaling MODE`) "
    "against the prediction from the N'-rank trace, both costed with the same machine table "
    f"({machine}) and simulated on {plat}. Counts, not timings: the figures do not depend on the machine's load. "
    "Target: program scaling within 3%. How: `trace`, the K-rank trace scaled; `static`, the static path at N' "
    "(program scaling, where it reproduces the K-rank trace or the trace cannot be scaled).\n\n"
    "| example | K -> N' | scaling | scaled s | from the N'-rank trace s | difference | messages | how |\n"
    "|---|---|---|---:|---:|---:|---:|---|\n" + table
)
try:
    text = open(doc).read()
except FileNotFoundError:
    text = ""
# "## Trace scaling" alone: "## Trace scaling on the corpus" (scripts/corpus_scale.sh) is another section.
if re.search(r"^## Trace scaling$", text, re.M):
    text = re.sub(r"^## Trace scaling$.*?(?=^## |\Z)", lambda m: section + "\n", text, count=1, flags=re.M | re.S)
else:
    text = text.rstrip("\n") + "\n\n" + section
open(doc, "w").write(text)
print(f"wrote part 1's table into {doc}")
PY

# PART=1 stops here.
[ "${PART:-all}" = 1 ] && exit 0
echo
echo "65,536 ranks scaled from a 4-rank trace (platform cluster-ib, 16,384 hosts of 4 cores), simulated in SimGrid and by the analytic replay (--analytic):"
printf '%-16s %-9s %12s %10s %10s %10s %10s %10s %12s %5s\n' example replay predicted_s min_wall_s med_wall_s max_wall_s sim_s rss_GiB messages runs
big_cases=("pi_dartboard|1000000 10" "stencil3d_torus|256 5" "jacobi2d|4096 10 10")
big() { # example ranks hosts mode args...
    local ex=$1 n=$2 hosts=$3 mode=$4; shift 4
    local small flag=() walls=() rss=0
    small=$(trace "$ex" 4 "$@") || return 0
    [ "$mode" = analytic ] && flag=(--analytic)
    for _ in $(seq "${BIG_RUNS:-1}"); do
        /usr/bin/time -f '%e %M' -o "$work/time" "$bin" predict "examples/$ex.c" -n "$n" --hosts "$hosts" --cores-per-host 4 \
            --trace "$small" --machine "$machine" --platform platforms/cluster-ib.xml --json "$work/p.json" "${flag[@]}" -- "$@" >/dev/null 2>"$work/err" \
            || { echo "$ex ($mode): failed: $(tail -1 "$work/err")"; return 0; }
        read -r wall kb <"$work/time"
        walls+=("$wall")
        [ "$kb" -gt "$rss" ] && rss=$kb
    done
    python3 - "$work/p.json" "$ex" "$mode" "$rss" "${walls[@]}" <<'PY'
import json, statistics, sys
p = json.load(open(sys.argv[1]))
walls = sorted(float(w) for w in sys.argv[5:])
med = walls[(len(walls) - 1) // 2]
print('%-16s %-9s %12.6g %10.1f %10.1f %10.1f %10.1f %10.2f %12d %5d' % (sys.argv[2], sys.argv[3], p['predicted_s'], walls[0], med, walls[-1], p['simulation_wall_s'], int(sys.argv[4]) / 2**20, p['messages'], len(walls)))
PY
}
for c in "${big_cases[@]}"; do
    IFS='|' read -r ex args <<<"$c"
    read -ra a <<<"$args"
    for mode in ${MODES:-simgrid analytic}; do
        big "$ex" 65536 16384 "$mode" "${a[@]}"
    done
done
echo "(target: under 30 s and 4 GiB; sim_s is the last run's simulation, rss the largest process over the runs)"
# MILLION=1: 1,048,576 ranks (262,144 hosts of 4 cores) by the analytic replay (tens of minutes).
if [ -n "${MILLION:-}" ]; then
    echo
    echo "1,048,576 ranks scaled from a 4-rank trace, analytic replay (target: under 10 minutes and 20 GiB):"
    for c in "pi_dartboard|1000000 10" "stencil3d_torus|256 5"; do
        IFS='|' read -r ex args <<<"$c"
        read -ra a <<<"$args"
        BIG_RUNS=${MILLION_RUNS:-${BIG_RUNS:-1}} big "$ex" 1048576 262144 analytic "${a[@]}"
    done
fi
