#!/bin/sh
# MTC figures: durations of `bench machine --quick` and of a full run, and the
# repeatability of two full runs in a row. Prints figures; fails only on generous thresholds
# (quick > 40 s, full > 180 s: twice the targets, the machine may be shared).
# Usage: scripts/bench_machine.sh [path/to/mpicast]   (default: target/release/mpicast)
set -eu
MPICAST=${1:-target/release/mpicast}
[ -x "$MPICAST" ] || cargo build --release
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
export XDG_CACHE_HOME="$OUT/cache"
"$MPICAST" bench machine --quick --classes int_add -o "$OUT/warm.json" >/dev/null 2>&1 # compile once
echo "host: $(uname -n), $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
secs() { python3 -c "import json,sys; print(round(json.load(open(sys.argv[1]))['duration_s'],1))" "$1"; }
q=""
for i in 1 2 3; do
    "$MPICAST" bench machine --quick -o "$OUT/q$i.json" >/dev/null 2>&1
    q="$q $(secs "$OUT/q$i.json")"
done
echo "quick (3 runs, s):$q (target <= 20)"
"$MPICAST" bench machine --repeatability -o "$OUT/full.json" 2>/dev/null
echo "full run (s): $(secs "$OUT/full.json") (target <= 90)"
python3 - "$OUT" <<'PY'
import json, sys
d = sys.argv[1]
q = max(json.load(open(f"{d}/q{i}.json"))["duration_s"] for i in (1, 2, 3))
f = json.load(open(f"{d}/full.json"))
print(f"descheduled share (load from others) in the full run: {f['timer']['descheduled_fraction']*100:.1f}%")
print("fit error per calibration kernel (raw -> fitted):")
for k in f["fit"]["kernels"]:
    print(f"  {k['name']:<18} {k['error_raw']*100:+7.1f}% -> {k['error_fit']*100:+6.1f}%")
sys.exit(1 if q > 40 or f["duration_s"] > 180 else 0)
PY
