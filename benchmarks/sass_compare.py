"""Compare the SASS of the CUDA kernels between a git revision and the working tree, per function,
without a GPU: whether a source change (a fold of duplicated device code, a removed template
parameter) leaves the compiled kernels as they were, so no device timing is needed.

Each source's module is built as tests/test_cuda_compile.py builds it (every module's head, the
source, every extra, the address of every instantiation), by ``nvcc -arch=ARCH`` under exactly
``kernels.OPTIONS`` to a cubin, then ``cuobjdump -sass``. Functions are matched by demangled name
(``--rename OLD=NEW`` maps names whose template arguments changed) and compared line by line, both
encoding words included (the scheduling control bits too); only whitespace is normalised. Session 6
used it for the search kernels' D5/D8 folds (benchmarks/results/search_cuda_notes.md).

    python benchmarks/sass_compare.py e9f8625 --sources vsa_search_tma.cu vsa_topk.cu \
        [--arch sm_90a] [--cuobjdump PATH] [--nvdisasm PATH] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_FUNC = re.compile(r"\s*Function : (\S+)")
_INS = re.compile(r"/\*[0-9a-f]{4,}\*/ (.*?) ;")


def dump(tree: str, out: str, sources: list[str], arch: str, cuobjdump: str, nvdisasm: str | None) -> None:
    """Build ``sources`` of the tree at ``tree`` (run in a process of its own: the tree's package is
    imported) and write {source: {mangled name: [SASS lines]}} to out/sass.json."""
    sys.path.insert(0, tree)
    from pytropical_gpu import shaders
    from pytropical_gpu.backends.cuda import module_specs
    from pytropical_gpu.backends.cuda.kernels import OPTIONS

    env = dict(os.environ, **({"NVDISASM_PATH": nvdisasm} if nvdisasm else {}))
    result = {}
    for src in sources:
        specs = [s for s in module_specs() if s.source == src]
        names = sorted({n for s in specs for n in s.names.values()})
        refs = ",\n".join(f"  (const void*)&{n}" for n in names)
        code = ("".join(dict.fromkeys(s.head for s in specs)) + shaders.load_source("cuda", src)
                + "".join(dict.fromkeys(s.extra for s in specs))
                + f"\nconst void* ptg_instantiations[] = {{\n{refs}\n}};\n")
        cu = Path(out) / src
        cu.write_text(code)
        subprocess.run(["nvcc", f"-arch={arch}", *OPTIONS, "-cubin", "-o", f"{cu}.cubin", str(cu)],
                       check=True)
        sass = subprocess.run([cuobjdump, "-sass", f"{cu}.cubin"], env=env, check=True,
                              capture_output=True, text=True).stdout
        funcs, cur = {}, None
        for line in sass.splitlines():
            m = _FUNC.match(line)
            if m:
                cur = funcs.setdefault(m.group(1), [])
            elif cur is not None and line.strip():
                cur.append(" ".join(line.split()))
        result[src] = funcs
    (Path(out) / "sass.json").write_text(json.dumps(result))


def _demangle(names: list[str]) -> dict[str, str]:
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True)
    return dict(zip(names, out.stdout.split("\n")))


def compare(before: dict, after: dict, renames: list[tuple[str, str]]) -> bool:
    """Print, per source, the functions identical / differing / in one tree only; True if none
    differ."""
    clean = True
    for src in before:
        a, b = before[src], after[src]
        da, db = _demangle(list(a)), _demangle(list(b))
        ka = {}
        for n in a:
            key = da[n]
            for old, new in renames:
                key = re.sub(old, new, key)
            ka[key] = n
        kb = {db[n]: n for n in b}
        same = 0
        for key in sorted(set(ka) | set(kb)):
            if key not in kb or key not in ka:
                print(f"  {src}: only {'before' if key in ka else 'after'}: {key}")
            elif a[ka[key]] == b[kb[key]]:
                same += 1
            else:
                clean = False
                ia = [m.group(1) for x in a[ka[key]] for m in [_INS.match(x)] if m]
                ib = [m.group(1) for x in b[kb[key]] for m in [_INS.match(x)] if m]
                print(f"  {src}: DIFFERS {key}: {len(ia)} -> {len(ib)} instructions, "
                      f"same instructions (encodings aside): {ia == ib}")
        print(f"{src}: {same} identical, {len(set(ka) & set(kb)) - same} differ")
    return clean


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev", nargs="?", help="git revision to compare the working tree with")
    ap.add_argument("--sources", nargs="+", required=True, help="cuda/ sources, e.g. vsa_topk.cu")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    ap.add_argument("--nvdisasm", default=None, help="NVDISASM_PATH for cuobjdump")
    ap.add_argument("--rename", action="append", default=[], metavar="OLD=NEW",
                    help="regex substitution on the before tree's demangled names")
    ap.add_argument("--keep", default=None, help="keep the builds under this directory")
    ap.add_argument("--dump", nargs=2, metavar=("TREE", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.dump:
        dump(*args.dump, args.sources, args.arch, args.cuobjdump, args.nvdisasm)
        return 0
    if not args.rev:
        ap.error("a git revision is needed")
    work = Path(args.keep or tempfile.mkdtemp(prefix="sass_compare_"))
    trees = {"before": work / "before_tree", "after": ROOT}
    trees["before"].mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.rev], check=True,
                             capture_output=True).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            safe = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
            tar.extractall(trees["before"], **safe)
    dumps = {}
    for side, tree in trees.items():
        out = work / side
        out.mkdir(exist_ok=True)
        cmd = [sys.executable, __file__, "--dump", str(tree), str(out), "--sources", *args.sources,
               "--arch", args.arch, "--cuobjdump", args.cuobjdump]
        subprocess.run(cmd + (["--nvdisasm", args.nvdisasm] if args.nvdisasm else []), check=True)
        dumps[side] = json.loads((out / "sass.json").read_text())
    renames = [tuple(r.split("=", 1)) for r in args.rename]
    return 0 if compare(dumps["before"], dumps["after"], renames) else 1


if __name__ == "__main__":
    sys.exit(main())
