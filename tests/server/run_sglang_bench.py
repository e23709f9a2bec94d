"""Runs SGLang's own benchmark client, `python -m sglang.bench_serving`, without torch.

Usage: python3 run_sglang_bench.py [bench_serving flags]

The client (sglang.benchmark.serving and its datasets) needs only aiohttp, transformers and a
few small packages, but since sglang 0.5.10 importing it reaches torch through three modules it
does not use for a plain run:
  - sglang/__init__.py: the runtime's public API (torch, triton via sglang.srt.utils.common);
  - sglang/srt/utils/__init__.py: re-exports sglang.srt.utils.common (torch); the client needs
    only the sibling module sglang.srt.utils.network (psutil, pyzmq);
  - sglang.srt.disaggregation.utils (torch): the client reads one constant from it,
    FAKE_BOOTSTRAP_HOST, and only under --fake-prefill.
So these packages are entered without running their __init__ files, the constant's module is
an empty stand-in, and the client then runs unmodified as `__main__`, as `python -m` runs it.
Tied to the sglang version scripts/install_deps.sh pins (test_sglang_bench.py checks it).
"""
import importlib.util
import os
import runpy
import sys
import types


def package_without_init(name, root):
    module = types.ModuleType(name)
    module.__path__ = [os.path.join(root, *name.split(".")[1:])]
    sys.modules[name] = module


def main():
    spec = importlib.util.find_spec("sglang")  # locates the package without importing it
    if spec is None:
        sys.exit("sglang is not installed (scripts/install_deps.sh installs the pinned client)")
    if "--fake-prefill" in sys.argv:
        sys.exit("--fake-prefill needs sglang.srt.disaggregation, which this runner leaves out")
    root = spec.submodule_search_locations[0]
    for name in ("sglang", "sglang.srt", "sglang.srt.utils", "sglang.srt.disaggregation"):
        package_without_init(name, root)
    stand_in = types.ModuleType("sglang.srt.disaggregation.utils")
    stand_in.FAKE_BOOTSTRAP_HOST = None  # read only under --fake-prefill, refused above
    sys.modules[stand_in.__name__] = stand_in
    sys.argv[0] = "sglang.bench_serving"
    runpy.run_module("sglang.benchmark.serving", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
