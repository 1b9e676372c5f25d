#!/usr/bin/env bash
# mpirun -n 3 imgpack convert: each rank converts its part and rank 0 merges,
# into the records (and masks) a conversion in one piece makes; a rank that
# fails fails the job with its message and leaves no index.h5.
#   mpi_convert_test.sh IMGPACK
set -euo pipefail
imgpack=$1
if ! command -v mpirun >/dev/null; then
  echo "mpi_convert: no mpirun (Debian: openmpi-bin); skipped" >&2
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mpirun=(mpirun --allow-run-as-root --oversubscribe -n 3)

"$imgpack" sample-data "$tmp/src" --classes 3 --groups 3 --per-class 4 --size 40x32 --masks -q
args=(--size 16x12 --variants 2 --augment hflip --shard-size 4K --threads 1
      --group-regex '/(g[0-9]+)_' --split cv:stratified-group:2 --masks "$tmp/src/masks" -q)
"$imgpack" convert "$tmp/src" "$tmp/single" "${args[@]}"
"${mpirun[@]}" "$imgpack" convert "$tmp/src" "$tmp/mpi" "${args[@]}"
"$imgpack" verify "$tmp/mpi" -q
[ ! -e "$tmp/mpi/parts" ] || { echo "parts left in $tmp/mpi" >&2; exit 1; }

"${PYTHON:-python3}" - "$tmp/single" "$tmp/mpi" <<'PY'
import os, sys
import h5py

def strings(index, name):
    data, offsets = index[name + "/bytes"][:], index[name + "/offsets"][:]
    return [data[a:b].tobytes().decode() for a, b in zip(offsets[:-1], offsets[1:])]

def records(path):
    keys = []
    with h5py.File(os.path.join(path, "index.h5"), "r") as index:
        if index.attrs["masks"] != 1:
            sys.exit(f"{path}: no masks")
        paths = strings(index, "samples/path")
        labels = index["samples/label"][:]
        groups = index["samples/group"][:]
        for name in strings(index, "shards/file"):
            with h5py.File(os.path.join(path, name), "r") as shard:
                for s, v, c, m in zip(shard["sample"][:], shard["variant"][:], shard["checksum"][:],
                                      shard["mask_checksum"][:]):
                    keys.append((paths[s], int(v), int(c), int(m), int(labels[s]),
                                 int(groups[s])))
    return sorted(keys)

import json
with open(os.path.join(sys.argv[2], "report.json")) as f:
    parts = json.load(f).get("parts", [])
if len(parts) != 3:
    sys.exit(f"expected a merge of 3 parts, the report lists {parts}")
single, merged = records(sys.argv[1]), records(sys.argv[2])
if single != merged:
    sys.exit(f"merged records differ: {len(single)} vs {len(merged)}")
PY

# The job run again (as after a launcher that reported a failure once the
# merge had finished): nothing is converted again, nothing is written.
before=$(cd "$tmp/mpi" && find . -type f -exec sha256sum {} + | sort)
loud=()
for a in "${args[@]}"; do [ "$a" = -q ] || loud+=("$a"); done
"${mpirun[@]}" "$imgpack" convert "$tmp/src" "$tmp/mpi" "${loud[@]}" 2> "$tmp/again.err" ||
  { cat "$tmp/again.err" >&2; exit 1; }
grep -q "nothing to convert" "$tmp/again.err" || { cat "$tmp/again.err" >&2; exit 1; }
! grep -q "TBB Warning" "$tmp/again.err" || { cat "$tmp/again.err" >&2; exit 1; }
after=$(cd "$tmp/mpi" && find . -type f -exec sha256sum {} + | sort)
[ "$before" = "$after" ] || { echo "the rerun changed $tmp/mpi" >&2; exit 1; }

# --overwrite replaces the merged dataset, with other options and with the
# same ones, as a conversion in one piece does.
"${mpirun[@]}" "$imgpack" convert "$tmp/src" "$tmp/mpi" "${args[@]/16x12/20x15}" --overwrite
"$imgpack" inspect "$tmp/mpi" --json | grep -q '"width": 20' ||
  { echo "--overwrite under mpirun did not replace the dataset" >&2; exit 1; }
"${mpirun[@]}" "$imgpack" convert "$tmp/src" "$tmp/mpi" "${args[@]}" --overwrite
"$imgpack" verify "$tmp/mpi" -q
"$imgpack" inspect "$tmp/mpi" --json | grep -q '"width": 16' ||
  { echo "--overwrite under mpirun did not replace the dataset again" >&2; exit 1; }

first_class=$(ls "$tmp/src" | sed -n 1p)
printf 'broken' > "$tmp/src/$first_class/zz_broken.png"
if "${mpirun[@]}" "$imgpack" convert "$tmp/src" "$tmp/fail" "${args[@]}" --on-error fail \
    2> "$tmp/fail.err"; then
  echo "a conversion with a failing rank succeeded" >&2
  exit 1
fi
grep -q "zz_broken.png" "$tmp/fail.err" || { cat "$tmp/fail.err" >&2; exit 1; }
[ ! -e "$tmp/fail/index.h5" ] || { echo "index.h5 written although a rank failed" >&2; exit 1; }

# MPI is reached through libimgpack_mpi.so, loaded only under a launcher: a
# run without one loads no MPI library, and a launcher with the module gone
# is an error naming it.
LD_DEBUG=libs "$imgpack" --version >"$tmp/libs.txt" 2>&1
if grep -q "libmpi" "$tmp/libs.txt"; then
  echo "imgpack --version loaded MPI" >&2
  exit 1
fi
if IMGPACK_MPI_MODULE=/nonexistent/libimgpack_mpi.so "${mpirun[@]}" "$imgpack" convert \
    "$tmp/src" "$tmp/nomodule" "${args[@]}" 2> "$tmp/nomodule.err"; then
  echo "a conversion under mpirun without the MPI module succeeded" >&2
  exit 1
fi
grep -q "IMGPACK_MPI_MODULE names no usable MPI module\|libimgpack_mpi.so: not found" \
  "$tmp/nomodule.err" || { cat "$tmp/nomodule.err" >&2; exit 1; }
[ ! -e "$tmp/nomodule/index.h5" ] || { echo "index.h5 written without MPI" >&2; exit 1; }
echo "mpi_convert: ok"
