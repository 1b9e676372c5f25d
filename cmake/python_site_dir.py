"""Prints where `cmake --install` should put a Python module for this
interpreter under PREFIX: relative to PREFIX when under it, so that
`cmake --install --prefix` still works.

The first choice is a directory the interpreter already imports from under
PREFIX (Debian: PREFIX/lib/python3.X/dist-packages for /usr/local,
PREFIX/lib/python3/dist-packages for /usr), the shortest such; otherwise the
interpreter's standard platlib for PREFIX (PREFIX/lib/python3.X/site-packages),
which then needs PYTHONPATH.

usage: python3 -I python_site_dir.py PREFIX
"""
import os
import sys
import sysconfig

prefix = os.path.normpath(sys.argv[1])
found = [os.path.normpath(p) for p in sys.path
         if p.endswith(("site-packages", "dist-packages"))
         and os.path.normpath(p).startswith(prefix + os.sep)]
if found:
    chosen = min(found, key=len)
else:
    chosen = sysconfig.get_path("platlib", "posix_prefix", vars={"base": prefix, "platbase": prefix})
print(os.path.relpath(chosen, prefix))
