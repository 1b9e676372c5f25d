# The AddressSanitizer tree, shared by scripts/sanitize (asan) and scripts/fuzz
# (sourced by both, not run). One clang build serves both: every target with
# AddressSanitizer and UndefinedBehaviorSanitizer, and the libraries with
# libFuzzer's coverage instrumentation (fuzzer-no-link), so the same objects
# run the tests and the fuzzer. It is the configuration a machine without the
# CUDA toolkit builds (IMGPACK_WITH_CUDA=OFF), with warnings as errors, so CI
# builds and tests that one too; the Release tree has CUDA where it is found.
#   asan_tree_configure DIR
asan_tree_dir=${IMGPACK_ASAN_BUILD_DIR:-build-asan}
source scripts/python.sh

asan_tree_configure() {
  local dir=$1
  local generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # _GLIBCXX_ASSERTIONS adds bounds checks to std::vector, std::span and
  # friends: an index past size() but inside capacity() is no ASan report.
  CC=clang CXX=clang++ cmake -S . -B "$dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -D_GLIBCXX_ASSERTIONS" \
    -DIMGPACK_SANITIZE=address,undefined,fuzzer-no-link -DIMGPACK_BUILD_FUZZERS=ON \
    -DIMGPACK_WITH_CUDA=OFF -DIMGPACK_WERROR=ON -DIMGPACK_BUILD_TESTS=ON -DIMGPACK_TEST_PER_SUITE=ON \
    "$(sanitizer_linker_flags EXE)" "$(sanitizer_linker_flags SHARED)" \
    "-DPython_EXECUTABLE:FILEPATH=$(imgpack_python)" >/dev/null
}

# sanitizer_linker_flags EXE|SHARED: the ASan tree links with lld where it is
# installed (scripts/setup --tests installs it): the ASan tree's 49 programs and
# libraries relink in 31 s against GNU ld's 58 on two cores. Else GNU ld.
sanitizer_linker_flags() {
  local flags=""
  command -v ld.lld >/dev/null && flags=-fuse-ld=lld
  echo "-DCMAKE_$1_LINKER_FLAGS=$flags"
}

# llvm-symbolizer (Debian's llvm-14, which scripts/setup --tests installs):
# without it reports have no function names, and suppressions, which match
# function names, match nothing.
asan_symbolizer() {
  local candidate
  for candidate in llvm-symbolizer-14 llvm-symbolizer; do
    if command -v "$candidate" >/dev/null; then
      command -v "$candidate"
      return
    fi
  done
  echo "scripts: no llvm-symbolizer (Debian: llvm-14); sanitizer suppressions cannot match" >&2
  return 1
}
