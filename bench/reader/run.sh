#!/usr/bin/env bash
# Reader benchmarks against their peers, in one run on one machine:
#   1. imgpack bench: reader throughput vs the same run's 2-thread memcpy over the same bytes
#   2. h5py: the fastest per-sample way of reading the same shards (/usr/bin/python3)
#   3. torchvision ImageFolder + DataLoader(2 workers) decoding and resizing the source images
#   4. with a CUDA device: pinned upload vs same-run cudaMemcpy, starvation with a simulated step
#
#   bench/reader/run.sh SCALE OUTDIR
#
# SCALE 1 is the reference size: 14,400 records of 224x224x3 (2.0 GiB of pixels,
# over the 2 GiB the targets are defined for); 0.05 is a quick smoke run. OUTDIR
# receives the JSON of every step, results.json and results.md (the table for
# docs/BENCHMARKS.md). Generated images and the dataset live in OUTDIR/work and
# are reused by a later run of the same SCALE.
# Environment: IMGPACK (the CLI; default build/tools/imgpack), PYTHON (default
# /usr/bin/python3, which has h5py, numpy, torch and torchvision).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 SCALE OUTDIR" >&2
  exit 2
fi
scale=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
imgpack=${IMGPACK:-$root/build/tools/imgpack}
python=${PYTHON:-/usr/bin/python3}
[ -x "$imgpack" ] || { echo "$0: $imgpack not found (build first or set IMGPACK)" >&2; exit 1; }

records=$("$python" -c "import math,sys; print(max(64, math.ceil(14400 * float(sys.argv[1]))))" "$scale")
classes=8
per_class=$(( (records + classes - 1) / classes ))
records=$(( per_class * classes ))
mkdir -p "$out/work"
out=$(cd "$out" && pwd)
src="$out/work/src-$records"
data="$out/work/data-$records"
say() { echo "bench/reader: $*" >&2; }

if [ ! -f "$src/labels.csv" ]; then
  say "generating $records source images (400x300, JPEG and PNG)"
  rm -rf "$src"
  "$imgpack" sample-data "$src" --classes $classes --groups 6 --per-class "$per_class" \
    --size 400x300 --seed 1 --quiet
fi
if [ ! -f "$data/index.h5" ]; then
  say "converting to 224x224x3 records"
  rm -rf "$data"
  "$imgpack" convert "$src" "$data" --size 224 --quiet --json > "$out/convert.json"
fi

say "warming the page cache"
cat "$data"/shard-*.h5 > /dev/null

say "imgpack bench (random order, batch 256, 2 threads, host output)"
"$imgpack" bench "$data" --batch 256 --threads 2 --epochs 3 --order random --device host \
  --memcpy-threads 2 --json --quiet > "$out/reader.json"

say "imgpack bench --sweep-threads"
"$imgpack" bench "$data" --batch 256 --epochs 2 --order random --sweep-threads --threads 4 \
  --json --quiet > "$out/reader_sweep.json"

say "h5py per-sample reads"
"$python" "$here/h5py_read.py" "$data" --batch 256 --max-images 20000 > "$out/h5py.json"

say "torchvision ImageFolder + DataLoader (2 workers)"
"$python" "$here/torch_imagefolder.py" "$src" --size 224 --batch 256 --workers 2 \
  --max-images $(( records < 3072 ? records : 3072 )) > "$out/torch.json"

rm -f "$out/gpu_upload.json" "$out/gpu_step.json"
if "$imgpack" bench "$data" --device cuda:0 --epochs 1 --batch 256 --json --quiet \
    > "$out/gpu_upload.json" 2> "$out/gpu_probe.err"; then
  say "CUDA: starvation with a simulated step of 1.2x the pure read time"
  step_ms=$("$python" -c "import json,sys; j=json.load(open(sys.argv[1])); \
print(1.2 * 1000 * 256 / j['images_per_s'])" "$out/gpu_upload.json")
  "$imgpack" bench "$data" --device cuda:0 --epochs 2 --batch 256 --step-ms "$step_ms" \
    --json --quiet > "$out/gpu_step.json"
else
  say "no CUDA device: GPU targets unmeasured ($(tail -1 "$out/gpu_probe.err"))"
  rm -f "$out/gpu_upload.json"
fi

"$python" "$here/compare.py" "$out" --scale "$scale"
