#!/usr/bin/env bash
# README's tours, run as a reader would paste them: every ```sh block of
# README.md that begins with `imgpack sample-data` (the quick tour, the masks
# tour), each as one script under `set -e` in a folder of its own, with this
# build's CLI first on PATH. The quick tour's append and removal are given
# what a user would have: new images under names the dataset does not hold
# (more-images/) and a list of one converted image to reject (rejected.txt).
#   readme_tour_test.sh README.md IMGPACK
set -euo pipefail
readme=$1
imgpack=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PATH="$(dirname "$imgpack"):$PATH"

# The blocks, one file each: tour-1.sh, tour-2.sh, ...
awk -v dir="$tmp" '
  /^```sh$/ { inside = 1; lines = ""; next }
  /^```/ && inside {
    inside = 0
    if (lines ~ /^imgpack sample-data /) { n++; printf "%s", lines > (dir "/tour-" n ".sh") }
    next
  }
  inside { lines = lines $0 "\n" }
' "$readme"
tours=("$tmp"/tour-*.sh)

# The first JPEG under $1 by name. sed reads its whole input: `head -n 1`
# would exit after the first line, and under pipefail the SIGPIPE that sort
# then meets on a listing longer than one pipe write fails the test at random.
first_jpg() { find "$1" -name '*.jpg' | sort | sed -n 1p; }
if [ "${#tours[@]}" -lt 2 ] || [ ! -f "${tours[0]}" ]; then
  echo "readme_tour: expected at least two tours in $readme, found ${#tours[@]}" >&2
  exit 1
fi

for tour in "${tours[@]}"; do
  name=$(basename "$tour" .sh)
  work=$tmp/$name
  mkdir "$work"
  # What the tour's append and removal read, made from the images its first
  # line generates (generated here once more, into a folder of its own).
  if grep -q -- "--append" "$tour"; then
    first=$(head -n 1 "$tour")
    (cd "$work" && eval "${first/ images\// probe\/} -q")
    rejected=$(cd "$work/probe" && first_jpg .)
    echo "${rejected#./}" >"$work/rejected.txt"
    for class in "$work"/probe/*/; do
      class=$(basename "$class")
      [ "$class" = masks ] && continue
      mkdir -p "$work/more-images/$class"
      cp "$(first_jpg "$work/probe/$class")" \
        "$work/more-images/$class/g90_new.jpg"
    done
    rm -rf "$work/probe"
  fi
  echo "== $name" >&2
  sed 's/^/   /' "$tour" >&2
  if ! (cd "$work" && bash -e "$tour" >"$work/out.txt" 2>&1); then
    echo "readme_tour: $name failed:" >&2
    cat "$work/out.txt" >&2
    exit 1
  fi
done
echo "readme_tour: ${#tours[@]} tours of $readme ran" >&2
