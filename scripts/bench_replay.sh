#!/usr/bin/env bash
# Replay speed: synthetic periodic 2D halo exchange (4 irecv + 4 isend of 8 KiB, waitall, compute)
# at 1024 ranks x 100 and 16384 ranks x 100 iterations. Prints wall time, messages per second and
# peak memory, simulated in SimGrid and by the analytic replay (--analytic). Targets: >= 1,000,000 messages of the trace per wall second; 16384 x 100 under 60 s and 1 GiB.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MPICAST:-target/release/mpicast}
if [ ! -x /usr/bin/time ]; then
  echo "bench_replay: /usr/bin/time (Debian package 'time') is missing: peak memory is not measured"
fi
for flag in "" --analytic; do
  echo "replay: ${flag:-SimGrid}"
  for size in 1024x100 16384x100; do
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -v "$bin" replay --bench "$size" $flag 2>&1 | grep -E '^(bench|wall)|Maximum resident'
    else
      "$bin" replay --bench "$size" $flag 2>&1 | grep -E '^(bench|wall)'
    fi
  done
done
