"""Count one path through a kernel's k-loop in SASS, by opcode and by pipe, without a GPU.

Builds ``cuda/semiring_gemm.cu`` with the given template instantiations (``nvcc -arch=ARCH`` under
``kernels.OPTIONS``, as benchmarks/sass_compare.py does), dumps the SASS, and for the function whose
mangled name contains ``--key``: without ``--head``, lists its backward branches (the loops); with
``--head ADDR --branches TNTN``, walks from ADDR taking each conditional branch as the letters say
(T taken, N not; unconditional ones always) until it jumps back to ADDR, and prints the count by
opcode and by pipe ("alu": the half-rate integer pipe, "fma": IMAD*). Session 7 (gemm_cuda_notes.md)
counted the int32 argmax loops with it.

    python benchmarks/sass_path.py "ptg::sr_gemm<ptg::MaxPlusDpxW, 64, 64, 16, 4, 4, 2, true>" \
        --key Lb1ELi16ELb1E --head 0x11f0 --branches NTNT --cuobjdump /tmp/cg/cuobjdump
"""

from __future__ import annotations

import argparse
import collections
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
_INS = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?);")
_BRA = re.compile(r"\bBRA\b.*?0x([0-9a-f]+)")
_ALU = {"IADD3", "ISETP", "LEA", "SEL", "VIMNMX", "VIADDMNMX", "VIMNMX3", "LOP3", "SHF", "IMNMX",
        "MOV", "PRMT", "IABS", "P2R", "R2P", "PLOP3", "FSEL", "FSETP", "FMNMX"}


def pipe(op: str) -> str:
    base = op.split(".")[0]
    if base.startswith("U"):
        return "uniform"
    if base.startswith("IMAD"):
        return "fma"
    if base in _ALU:
        return "alu"
    return "mem" if base in ("LDS", "STS", "LDG", "BAR", "LDC") else "branch"


def functions(names: list[str], arch: str, cuobjdump: str) -> dict[str, list[tuple[int, str]]]:
    """{mangled name: [(address, instruction)]} of the module holding ``names``."""
    from pytropical_gpu import shaders
    from pytropical_gpu.backends.cuda.kernels import OPTIONS

    work = Path(tempfile.mkdtemp(prefix="sass_path_"))
    refs = ",\n".join(f"  (const void*)&{n}" for n in names)
    (work / "m.cu").write_text(shaders.load_source("cuda", "semiring_gemm.cu")
                               + f"\nconst void* ptg_instantiations[] = {{\n{refs}\n}};\n")
    subprocess.run(["nvcc", f"-arch={arch}", *OPTIONS, "-cubin", "-o", str(work / "m.cubin"),
                    str(work / "m.cu")], check=True)
    sass = subprocess.run([cuobjdump, "-sass", str(work / "m.cubin")], check=True, capture_output=True,
                          text=True).stdout
    out = {}
    for part in sass.split("Function : ")[1:]:
        out[part.split("\n")[0].strip()] = [(int(m.group(1), 16), m.group(2).strip())
                                            for m in _INS.finditer(part)]
    return out


def walk(ins: list[tuple[int, str]], head: int, branches: str) -> list[str]:
    at = {a: i for i, (a, _) in enumerate(ins)}
    i, left, path = at[head], list(branches), []
    while True:
        a, s = ins[i]
        path.append(s)
        m = _BRA.search(s)
        if m and (not s.startswith("@") or left.pop(0) == "T"):
            if int(m.group(1), 16) == head:
                break
            i = at[int(m.group(1), 16)]
            continue
        i += 1
    if left:
        raise SystemExit(f"branches left unused: {''.join(left)}")
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="+", help="template instantiations to compile")
    ap.add_argument("--key", required=True, help="a substring of the function's mangled name")
    ap.add_argument("--head", type=lambda x: int(x, 16), help="loop head address (hex)")
    ap.add_argument("--branches", default="", help="T/N for each conditional branch on the path")
    ap.add_argument("--arch", default="sm_90a")
    ap.add_argument("--cuobjdump", default="cuobjdump")
    args = ap.parse_args()
    fn = {k: v for k, v in functions(args.names, args.arch, args.cuobjdump).items() if args.key in k}
    if len(fn) != 1:
        raise SystemExit(f"--key matches {len(fn)} functions: {sorted(fn)}")
    (name, ins), = fn.items()
    print(name, len(ins), "instructions")
    if args.head is None:
        for a, s in ins:
            m = _BRA.search(s)
            if m and int(m.group(1), 16) <= a:
                print(f"loop 0x{int(m.group(1), 16):x} - 0x{a:x}")
        return 0
    path = walk(ins, args.head, args.branches)
    ops = collections.Counter(s.split()[1] if s.startswith("@") else s.split()[0] for s in path)
    pipes = collections.Counter()
    for op, c in ops.items():
        pipes[pipe(op)] += c
    print(len(path), "issued:", dict(pipes))
    print(dict(ops.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
