#!/usr/bin/env bash
# mpicast trace: cost of the instrumented run and size of the traces.
#
# 1. Slowdown. For each example: the plain program (mpicc -O2, the same flags as the trace build,
#    no runtime) and the instrumented one (`mpicast trace` builds it once into a kept work
#    directory; the same binary runs in counting mode and with MPICAST_TIME_BLOCKS=1, as
#    --time-blocks does), RUNS runs each (default 7), interleaved, RANKS ranks (default 4).
#    Reported: the program's own main-loop time (its elapsed_s=) and the mpirun wall clock,
#    min and median, and the ratios instrumented / plain of the mins and of the medians.
#    Target: at most 1.10x in counting mode.
# 2. Trace size. jacobi2d traced at ITERS and 10 x ITERS iterations: bytes per rank (largest
#    rank), counting mode and --time-blocks. Folding should keep the growth far below 10x.
#
# Environment: MPICAST (binary; default target/release/mpicast if it has `trace --time-blocks`,
# else target/debug/mpicast), RUNS, RANKS, EXAMPLES (names, default all six).
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${MPICAST:-}
if [ -z "$bin" ]; then
  for b in target/release/mpicast target/debug/mpicast; do
    if [ -x "$b" ] && "$b" trace --help 2>/dev/null | grep -q -- --time-blocks; then bin=$b; break; fi
  done
fi
if [ -z "$bin" ]; then
  echo "bench_trace: no mpicast binary with \`trace\` (cargo build first, or set MPICAST)" >&2
  exit 2
fi
runs=${RUNS:-7}
ranks=${RANKS:-4}
tmp=$(mktemp -d /tmp/mpicast-bench-trace.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ompi"
mpirun_args="--oversubscribe --mca mpi_yield_when_idle 1 --bind-to none --mca orte_tmpdir_base $tmp/ompi"
if [ "$(id -u)" = 0 ]; then mpirun_args="--allow-run-as-root $mpirun_args"; fi

# Problem sizes: a few hundred milliseconds to a few seconds per run at 4 ranks on 2 cores.
declare -A args=(
  [pi_dartboard]="2000000 5"
  [matmul_mw]="800 3"
  [jacobi2d]="1024 800 10"
  [stencil3d_torus]="96 300"
  [obstacle3d]="96 300"
  [isort]="1048576 30"
)
examples=${EXAMPLES:-"pi_dartboard matmul_mw jacobi2d stencil3d_torus obstacle3d isort"}

now() { date +%s.%N; }

# Runs `mpirun ... EXE ARGS` with extra environment; prints "loop_s wall_s".
run_once() {
  local envs=$1 exe=$2; shift 2
  local t0 t1 out
  t0=$(now)
  # shellcheck disable=SC2086
  if ! out=$(env $envs mpirun $mpirun_args -x MPICAST_TRACE_DIR -x MPICAST_TIME_BLOCKS -np "$ranks" "$exe" "$@" 2>&1); then
    echo "bench_trace: run failed: $exe $*" >&2
    echo "$out" | tail -20 >&2
    exit 1
  fi
  t1=$(now)
  local loop
  loop=$(echo "$out" | sed -n 's/.*elapsed_s=\([0-9.eE+-]*\).*/\1/p' | head -1)
  awk -v l="$loop" -v a="$t0" -v b="$t1" 'BEGIN { printf "%s %.4f\n", l, b - a }'
}

# min and median of the numbers on stdin
minmed() { sort -g | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.4f %.4f\n", v[1], m }'; }

echo "mpicast trace overhead: $ranks ranks, $runs runs per mode, interleaved; host $(hostname), $(nproc) cores$( [ "$ranks" -gt "$(nproc)" ] && echo ", oversubscribed")"
echo "loop = the program's elapsed_s (its main loop); wall = mpirun wall clock; ratios: instrumented/plain of mins and of medians"
printf "%-16s %-11s %17s %17s %13s %13s\n" example mode "loop s min/med" "wall s min/med" "loop ratio" "wall ratio"
for ex in $examples; do
  a=${args[$ex]}
  mkdir -p "$tmp/plain"
  # shellcheck disable=SC2086
  mpicc -O2 -o "$tmp/plain/$ex" "examples/$ex.c" -lm
  # shellcheck disable=SC2086
  "$bin" trace "examples/$ex.c" -n "$ranks" --mpirun-args "$mpirun_args" --work-dir "$tmp/work-$ex" \
    -o "$tmp/traces-$ex" -- $a >/dev/null 2>"$tmp/trace-$ex.err" || { cat "$tmp/trace-$ex.err" >&2; exit 1; }
  inst="$tmp/work-$ex/build/$ex"
  mkdir -p "$tmp/raw-$ex"
  : >"$tmp/$ex.plain"; : >"$tmp/$ex.count"; : >"$tmp/$ex.time"
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    run_once "MPICAST_TRACE_DIR= MPICAST_TIME_BLOCKS=0" "$tmp/plain/$ex" $a >>"$tmp/$ex.plain"
    # shellcheck disable=SC2086
    run_once "MPICAST_TRACE_DIR=$tmp/raw-$ex MPICAST_TIME_BLOCKS=0" "$inst" $a >>"$tmp/$ex.count"
    # shellcheck disable=SC2086
    run_once "MPICAST_TRACE_DIR=$tmp/raw-$ex MPICAST_TIME_BLOCKS=1" "$inst" $a >>"$tmp/$ex.time"
  done
  read -r pl_min pl_med < <(cut -d' ' -f1 "$tmp/$ex.plain" | minmed)
  read -r pw_min pw_med < <(cut -d' ' -f2 "$tmp/$ex.plain" | minmed)
  for mode in plain count time; do
    read -r l_min l_med < <(cut -d' ' -f1 "$tmp/$ex.$mode" | minmed)
    read -r w_min w_med < <(cut -d' ' -f2 "$tmp/$ex.$mode" | minmed)
    name=$mode; [ "$mode" = count ] && name=counting; [ "$mode" = time ] && name=time-blocks
    if [ "$mode" = plain ]; then
      printf "%-16s %-11s %8.4f/%-8.4f %8.3f/%-8.3f %13s %13s\n" "$ex" "$name" "$l_min" "$l_med" "$w_min" "$w_med" "" ""
    else
      printf "%-16s %-11s %8.4f/%-8.4f %8.3f/%-8.3f %6.3f/%-6.3f %6.3f/%-6.3f\n" "$ex" "$name" "$l_min" "$l_med" "$w_min" "$w_med" \
        "$(awk -v a="$l_min" -v b="$pl_min" 'BEGIN{print a/b}')" "$(awk -v a="$l_med" -v b="$pl_med" 'BEGIN{print a/b}')" \
        "$(awk -v a="$w_min" -v b="$pw_min" 'BEGIN{print a/b}')" "$(awk -v a="$w_med" -v b="$pw_med" 'BEGIN{print a/b}')"
    fi
  done
done
echo "target: counting mode at most 1.10x (loop ratio of medians)"

echo
echo "trace size: jacobi2d 256 ITERS 10 at $ranks ranks, largest rank file (bytes)"
printf "%-12s %10s %12s %12s %8s\n" mode iters bytes "10x iters" growth
for mode in counting time-blocks; do
  flag=""; [ "$mode" = time-blocks ] && flag=--time-blocks
  sizes=()
  for it in 200 2000; do
    # shellcheck disable=SC2086
    "$bin" trace examples/jacobi2d.c -n "$ranks" $flag --mpirun-args "$mpirun_args" -o "$tmp/size-$mode-$it" \
      -- 256 "$it" 10 >/dev/null 2>"$tmp/size.err" || { cat "$tmp/size.err" >&2; exit 1; }
    sizes+=("$(wc -c "$tmp/size-$mode-$it"/rank-*.trace | grep -v total | sort -n | tail -1 | awk '{print $1}')")
  done
  printf "%-12s %10s %12s %12s %7.2fx\n" "$mode" "200/2000" "${sizes[0]}" "${sizes[1]}" "$(awk -v a="${sizes[1]}" -v b="${sizes[0]}" 'BEGIN{print a/b}')"
done
