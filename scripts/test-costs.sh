# ctest -j starts the tests it knows to be longest first, by the times each run
# records in BUILD/Testing/Temporary/CTestCostData.txt. A new build tree has
# none and starts them in declaration order, so a long test that happens to be
# declared late leaves the other cores idle at the end. The trees that CI and
# scripts/test build after the Release one (without CUDA, ASan, TSan) run the
# same tests: they take the Release tree's times, measured by the ctest stage
# of the same run, as their first estimate. Sourced, not run.
#   seed_test_costs FROM_DIR TO_DIR     (a tree with its own times keeps them)
seed_test_costs() {
  local from=$1/Testing/Temporary/CTestCostData.txt
  local to_dir=$2/Testing/Temporary
  [ -s "$from" ] || return 0
  [ -s "$to_dir/CTestCostData.txt" ] && return 0
  mkdir -p "$to_dir"
  cp "$from" "$to_dir/CTestCostData.txt"
}
