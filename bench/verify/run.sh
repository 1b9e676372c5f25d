#!/usr/bin/env bash
# imgpack verify throughput against a plain read of the same shard files, in
# one run on one machine, both from the page cache:
#   - read:   cat of every shard to /dev/null, 1 process and N processes at once
#   - verify: imgpack verify --threads 1 and --threads N (structure + XXH3-64 of every record)
# Each is run 3 times; the best time counts.
#
#   bench/verify/run.sh MIB OUTDIR [THREADS]
#
# MIB is the size of the dataset's pixels (e.g. 300 for a quick run; pick
# more than RAM to measure the disk instead of the cache). THREADS defaults
# to nproc. OUTDIR receives every verify JSON and results.json; the generated
# images and dataset live in OUTDIR/work and are reused by a later run of the
# same size.
# Environment: IMGPACK (the CLI; default build/tools/imgpack).
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 MIB OUTDIR [THREADS]" >&2
  exit 2
fi
mib=$1
out=$2
threads=${3:-$(nproc)}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
imgpack=${IMGPACK:-$root/build/tools/imgpack}
[ -x "$imgpack" ] || { echo "$0: $imgpack not found (build first or set IMGPACK)" >&2; exit 1; }
say() { echo "bench/verify: $*" >&2; }

# 224x224x3 records (147 KiB each), 4 classes.
record_bytes=$((224 * 224 * 3))
records=$(( (mib * 1024 * 1024 + record_bytes - 1) / record_bytes ))
per_class=$(( (records + 3) / 4 ))
records=$(( per_class * 4 ))
mkdir -p "$out/work"
out=$(cd "$out" && pwd)
src="$out/work/src-$records"
data="$out/work/data-$records"
if [ ! -f "$src/labels.csv" ]; then
  say "generating $records source images (256x192)"
  rm -rf "$src"
  "$imgpack" sample-data "$src" --classes 4 --groups 4 --per-class "$per_class" --size 256x192 \
    --seed 1 --quiet
fi
if [ ! -f "$data/index.h5" ]; then
  say "converting to 224x224x3 records in 64 MiB shards"
  rm -rf "$data"
  "$imgpack" convert "$src" "$data" --size 224 --shard-size 64M --quiet
fi
shards=("$data"/shard-*.h5)
bytes=$(cat "${shards[@]}" | wc -c)

now() { date +%s.%N; }
best_of_3() {  # prints the best wall time of 3 runs of "$@"
  local best="" t0 t1 t
  for _ in 1 2 3; do
    t0=$(now); "$@" > /dev/null; t1=$(now)
    t=$(awk "BEGIN { print $t1 - $t0 }")
    if [ -z "$best" ] || awk "BEGIN { exit !($t < $best) }"; then best=$t; fi
  done
  echo "$best"
}
read_one() { cat "${shards[@]}"; }
read_many() { printf '%s\0' "${shards[@]}" | xargs -0 -n 1 -P "$threads" cat; }

say "warming the page cache ($((bytes / 1024 / 1024)) MiB in ${#shards[@]} shards)"
cat "${shards[@]}" > /dev/null

say "plain read"
read1_s=$(best_of_3 read_one)
readn_s=$(best_of_3 read_many)

verify_best() {  # THREADS -> best JSON of 3 runs (by seconds)
  local best_json="" best_s="" json s
  for _ in 1 2 3; do
    if ! json=$("$imgpack" verify "$data" --threads "$1" --json --quiet); then
      echo "$0: verify reported damage: $json" >&2
      exit 1
    fi
    s=$(echo "$json" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["seconds"])')
    if [ -z "$best_s" ] || awk "BEGIN { exit !($s < $best_s) }"; then best_s=$s; best_json=$json; fi
  done
  echo "$best_json"
}
say "imgpack verify --threads 1"
verify_best 1 > "$out/verify-1.json"
say "imgpack verify --threads $threads"
verify_best "$threads" > "$out/verify-$threads.json"

/usr/bin/python3 - "$out" "$threads" "$bytes" "$read1_s" "$readn_s" <<'PY'
import json, sys
out, threads, file_bytes, read1_s, readn_s = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
v1 = json.load(open(f"{out}/verify-1.json"))
vn = json.load(open(f"{out}/verify-{threads}.json"))
gb = lambda b, s: b / s / 1e9
results = {
    "file_bytes": file_bytes,
    "pixel_bytes": vn["bytes"],
    "records": vn["records_checked"],
    "threads": threads,
    "read_1_gb_per_s": gb(file_bytes, read1_s),
    "read_n_gb_per_s": gb(file_bytes, readn_s),
    "verify_1_gb_per_s": v1["gb_per_s"],
    "verify_n_gb_per_s": vn["gb_per_s"],
    "verify_1_seconds": v1["seconds"],
    "verify_n_seconds": vn["seconds"],
    "verify_1_structure_seconds": v1["structure_seconds"],
    "verify_n_structure_seconds": vn["structure_seconds"],
    "verify_1_checksum_gb_per_s": v1["checksum_gb_per_s"],
    "verify_n_checksum_gb_per_s": vn["checksum_gb_per_s"],
}
results["ratio_1"] = results["verify_1_gb_per_s"] / results["read_1_gb_per_s"]
results["ratio_n"] = results["verify_n_gb_per_s"] / results["read_n_gb_per_s"]
json.dump(results, open(f"{out}/results.json", "w"), indent=2)
print(f"{results['records']} records, {file_bytes / 2**20:.0f} MiB of shards, page cache, best of 3")
print("verify GB/s counts its whole run (index, shard validation, checksums); the checksum pass alone is in the last column")
print("| threads | plain read (cat) GB/s | imgpack verify GB/s | verify / read | checksum pass GB/s |")
print("|---|---|---|---|---|")
for t, k in ((1, "1"), (threads, "n")):
    print(f"| {t} | {results[f'read_{k}_gb_per_s']:.2f} | {results[f'verify_{k}_gb_per_s']:.2f} | "
          f"{results[f'ratio_{k}']:.2f} | {results[f'verify_{k}_checksum_gb_per_s']:.2f} |")
PY
