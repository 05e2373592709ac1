# lit configuration: test/lit holds runnable graph scripts (*.py) and pass tests (*.mlir).
import atexit
import os
import shutil
import sys
import tempfile

import lit.formats

config.name = "fusilli"
config.test_format = lit.formats.ShTest()
config.suffixes = [".py", ".mlir"]
# Only test/lit holds tests; everything else under the root is skipped.
config.excludes = [
    "lit_helpers.py",
    "lit.cfg.py",
    "fusilli",
    "examples",
    "benchmarks",
    "build",
    "venv",
    ".venv",
    "unit",
    ".ci",
]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))
# Outputs of this run only (lit makes an Output/ directory per test directory): removed when lit exits.
config.test_exec_root = tempfile.mkdtemp(prefix="fusilli-lit-")
atexit.register(shutil.rmtree, config.test_exec_root, ignore_errors=True)

config.substitutions.append(("%python", sys.executable))
config.substitutions.append(("%fusilli-opt", f"{sys.executable} -m fusilli.tools.opt"))
# The filecheck package installs `filecheck`; there is no `FileCheck`.
config.substitutions.append(("FileCheck", "filecheck"))

repo = os.path.dirname(os.path.abspath(__file__))
for var in ("HOME", "PATH", "FUSILLI_EXTRA_COMPILER_FLAGS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.environment["PYTHONPATH"] = os.pathsep.join([os.path.join(repo, "test", "lit"), repo])
# One compile cache shared by lit runs (never the user's), kept between runs so reruns are fast,
# bounded by least-recently-used eviction.
config.environment["FUSILLI_CACHE_DIR"] = os.path.join(tempfile.gettempdir(), "fusilli-lit-cache")
config.environment["FUSILLI_CACHE_MAX_BYTES"] = "256M"
# Tools installed next to the interpreter running lit (filecheck, fusilli-opt) come first.
config.environment["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
