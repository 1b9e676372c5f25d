# The Python the scripts build the module for and run the tests and the
# benchmarks under, chosen in one place (sourced by scripts/build, scripts/test
# and bench/run-all, not run):
#   1. $PYTHON when it is set (a virtual environment's python, say);
#   2. else the first python3 on PATH that can import numpy: an activated
#      environment's, or the system's where an earlier one on PATH (pyenv's,
#      say) has none of the packages;
#   3. else /usr/bin/python3, the interpreter whose python3-* packages
#      scripts/setup --tests installs (Debian's), as the last resort.
#   imgpack_python     prints the chosen interpreter
# The choice is the interpreter's own sys.executable, so a pyenv shim or a
# symlink resolves to the Python it runs, and CMake and the scripts agree on it.
imgpack_python() {
  if [ -n "${PYTHON:-}" ]; then
    echo "$PYTHON"
    return
  fi
  local dir candidate
  local IFS=:
  for dir in $PATH; do
    candidate=${dir:-.}/python3
    [ -x "$candidate" ] || continue
    if "$candidate" -c 'import numpy, sys; print(sys.executable)' 2>/dev/null; then
      return
    fi
  done
  echo /usr/bin/python3
}
