"""clang-tidy over the C++ sources of a build (scripts/tidy runs it), with a cache of clean results.

A source is checked again only when something its check depends on has changed: its
compile command (with the source and build folders written as placeholders, so that
another clone or build folder finds the same entry), the contents of the source and of
every header it includes (as the build's ninja dependency log lists them), .clang-tidy
and clang-tidy's version. Only clean results are cached: a source with findings is
checked on every run, and one the build has not compiled yet (no dependency list) too.

    python3 scripts/tidy.py BUILD_DIR [FILE ...]

Cache: $IMGPACK_TIDY_CACHE, else $XDG_CACHE_HOME/imgpack/tidy, else ~/.cache/imgpack/tidy;
IMGPACK_TIDY_CACHE=off checks everything. Output of every check: BUILD_DIR/clang-tidy.log.
"""
import concurrent.futures
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = re.compile("^" + re.escape(ROOT) + r"/(reader|libpack|tools|tests|python|bench)/.*\.cpp$")


def say(text):
    print("scripts/tidy: " + text, file=sys.stderr, flush=True)


def cache_dir():
    configured = os.environ.get("IMGPACK_TIDY_CACHE")
    if configured == "off":
        return None
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "imgpack", "tidy")


def tidy_commands(build):
    """The build's compile commands without GCC's precompiled header (tests/CMakeLists.txt
    force-includes it; clang cannot read it), so each test also proves it includes what it
    uses. Written to BUILD/tidy-commands/ for clang-tidy -p."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = json.load(f)
    for entry in commands:
        entry["command"] = re.sub(r" -Winvalid-pch", "", entry["command"])
        entry["command"] = re.sub(r" -include [^ ]*/cmake_pch\.hxx", "", entry["command"])
    folder = os.path.join(build, "tidy-commands")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "compile_commands.json"), "w") as f:
        json.dump(commands, f, indent=1)
    return folder, {entry["file"]: entry for entry in commands}


def ninja_deps(build):
    """Object file (relative to BUILD) -> the files its compilation read, from ninja's log."""
    try:
        text = subprocess.run(["ninja", "-C", build, "-t", "deps"], capture_output=True,
                              text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return {}
    deps, current = {}, None
    for line in text.splitlines():
        if line and not line[0].isspace():
            current = line.split(":", 1)[0] if "(VALID)" in line else None
            if current:
                deps[current] = []
        elif current and line.strip():
            deps[current].append(line.strip())
    return deps


class Keys:
    """The cache key of each source: everything its clang-tidy result depends on."""

    def __init__(self, build, config):
        self.build = os.path.realpath(build)
        self.deps = ninja_deps(build)
        self.file_hashes = {}
        self.config = config

    def normalized(self, text):
        return text.replace(self.build, "@BUILD@").replace(ROOT, "@SOURCE@")

    def file_hash(self, path):
        if path not in self.file_hashes:
            try:
                with open(path, "rb") as f:
                    self.file_hashes[path] = hashlib.md5(f.read()).hexdigest()
            except OSError:
                self.file_hashes[path] = "missing"
        return self.file_hashes[path]

    def key(self, entry):
        args = shlex.split(entry["command"])
        if "-o" not in args:
            return None
        files = self.deps.get(args[args.index("-o") + 1])
        if not files:
            return None
        digest = hashlib.sha256(self.config.encode())
        digest.update(self.normalized(entry["command"]).encode())
        # In the order of the normalized names: the same in every clone, wherever it is.
        paths = {self.normalized(path): path for path in
                 (os.path.normpath(os.path.join(entry["directory"], f)) for f in files)}
        for name in sorted(paths):
            digest.update(("\n" + name + " " + self.file_hash(paths[name])).encode())
        return digest.hexdigest()


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    build, chosen = sys.argv[1], [os.path.abspath(f) for f in sys.argv[2:]]
    folder, commands = tidy_commands(build)
    sources = sorted(f for f in commands if (f in chosen if chosen else SOURCES.match(f)))
    version = subprocess.run(["clang-tidy", "--version"], capture_output=True,
                             text=True).stdout
    with open(os.path.join(ROOT, ".clang-tidy")) as f:
        config = version + f.read()
    cache = cache_dir()
    keys = Keys(build, config)
    todo = []
    for source in sources:
        key = keys.key(commands[source]) if cache else None
        if key and os.path.exists(os.path.join(cache, key)):
            continue
        todo.append((source, key))
    say("clang-tidy over %d of %d sources (%d unchanged since a clean check) on %d cores"
        % (len(todo), len(sources), len(sources) - len(todo), os.cpu_count()))

    def check(item):
        source, key = item
        done = subprocess.run(["clang-tidy", "-p", folder, "--quiet", source],
                              capture_output=True, text=True)
        output = done.stdout + done.stderr
        clean = done.returncode == 0 and not re.search(r"(warning|error):", output)
        if clean and key:
            os.makedirs(cache, exist_ok=True)
            with open(os.path.join(cache, key), "w") as f:
                f.write(os.path.relpath(source, ROOT) + "\n")
        return source, clean, output

    failed = []
    with open(os.path.join(build, "clang-tidy.log"), "w") as log, \
            concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        for n, (source, clean, output) in enumerate(pool.map(check, todo), 1):
            log.write("=== %s\n%s" % (source, output))
            if not clean:
                failed.append((source, output))
            if n % 10 == 0 or n == len(todo):
                say("%d/%d sources checked" % (n, len(todo)))
    for source, output in failed:
        findings = sorted(set(line for line in output.splitlines()
                              if re.search(r"(warning|error):", line)))
        print("\n".join(findings) or output, file=sys.stderr)
    if failed:
        say("clang-tidy found problems in %d sources (full output: %s)"
            % (len(failed), os.path.join(build, "clang-tidy.log")))
        return 1
    say("no findings")
    return 0


if __name__ == "__main__":
    sys.exit(main())
