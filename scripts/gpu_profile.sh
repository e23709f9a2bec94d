#!/usr/bin/env bash
# Per-kernel time of one decode step, from Nsight Compute (GPU machine; after
# `scripts/gpu_check.sh run` unpacked the binaries to /tmp/sgl_gpu):
#   scripts/gpu_profile.sh "--batch-size 1 --input-len 128"
# runs sgl-bench one-batch eagerly (no graphs, so every launch is profiled) for two decode steps
# on the dummy Llama-3-8B and prints the last step's kernels by total time. Kernel times under
# ncu are each measured alone (serialized, cold caches), so their sum over-states a real step;
# the shares are what matter. Raw CSV lands in $OUT.
set -euo pipefail
cd "$(dirname "$0")/.."
root=/tmp/sgl_gpu
export LD_LIBRARY_PATH="$root/gpu/lib:${LD_LIBRARY_PATH:-}"
out=${OUT:-/tmp}
tag=$(echo "$1" | tr -c 'a-zA-Z0-9' '_')
csv="$out/ncu_$tag.csv"
ncu --clock-control none --metrics gpu__time_duration.sum --csv --page raw \
  "$root/gpu/sgl-bench" one-batch --config "$root/configs/llama-3-8b.json" $1 --output-len 3 \
  --skip-floors --disable-cuda-graph >"$csv" 2>"$out/ncu_$tag.log" || {
  tail -20 "$out/ncu_$tag.log"; exit 1; }
python3 - "$csv" <<'PY'
import csv, re, sys, collections
rows = [r for r in csv.reader(open(sys.argv[1])) if r]
head = next(i for i, r in enumerate(rows) if "Kernel Name" in r)
cols = rows[head]
name_i, time_i = cols.index("Kernel Name"), cols.index("gpu__time_duration.sum")
launches = []
for r in rows[head + 2:]:  # skip the units row
    try:
        launches.append((r[name_i], float(r[time_i].replace(",", ""))))
    except (ValueError, IndexError):
        pass
# Each forward starts with the embedding gather: the last one starts the last decode step.
starts = [i for i, (n, _) in enumerate(launches) if "gather_rows_kernel" in n]
step = launches[starts[-1]:]
by = collections.defaultdict(lambda: [0, 0.0])
for n, t in step:
    short = re.sub(r"\(.*", "", n)[:60]
    by[short][0] += 1
    by[short][1] += t
total = sum(t for _, t in step)
unit = rows[head + 1][time_i]  # "ns", "us" or "ms"
scale = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}.get(unit, 1.0)
print(f"last decode step: {len(step)} kernels, {total*scale:.1f} us summed")
for n, (c, t) in sorted(by.items(), key=lambda kv: -kv[1][1]):
    print(f"{n:60s} {c:5d} {t*scale:10.1f} us {100*t/total:5.1f}%")
PY
