# ctest -j starts the tests it knows to be longest first, by the times each run
# records in BUILD/Testing/Temporary/CTestCostData.txt. A new build tree has
# none and starts them in declaration order, so a long test that happens to be
# declared late leaves the other cores idle at the end. The trees that CI and
# scripts/test build after the Release one (without CUDA, ASan, TSan) run the
# same tests: they take the Release tree's times, measured by the ctest stage
# of the same run, as their first estimate. The sanitizer trees run a suite
# per test (`Suite.*`, cmake/test_suites.cmake): each suite's estimate is the
# sum of its tests' times. Sourced, not run.
#   seed_test_costs FROM_DIR TO_DIR     (a tree with its own times keeps them)
seed_test_costs() {
  local from=$1/Testing/Temporary/CTestCostData.txt
  local to_dir=$2/Testing/Temporary
  [ -s "$from" ] || return 0
  [ -s "$to_dir/CTestCostData.txt" ] && return 0
  mkdir -p "$to_dir"
  # Lines "NAME RUNS AVERAGE" up to "---" (the failed tests follow it); a
  # parameterised test's NAME holds spaces ("Suite.Test/0  # GetParam() = 1").
  awk '$0 == "---" { done = 1 }
       done { next }
       NF >= 3 {
         print
         if (index($1, ".") > 0 && $1 !~ /\.\*$/) {
           suite = substr($1, 1, index($1, ".")) "*"
           runs[suite] = 1
           cost[suite] += $NF
         }
       }
       END {
         for (suite in cost) print suite, runs[suite], cost[suite]
         print "---"
       }' "$from" >"$to_dir/CTestCostData.txt"
}
