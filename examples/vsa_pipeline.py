"""Encode records as hypervectors, store them in an item memory and look up noisy records, on the GPU.

A record has ``fields`` attributes (colour, city, ...), each one of ``values`` possible values. Every
field name and every value is a random ternary vector; a record is the bundle (majority) of its
bound field/value pairs:

    record = bundle(bind(COLOUR, red), bind(CITY, oslo), ...)

All ``n`` records are encoded at once (one batched ``bind`` of (fields, n) pairs, one batched
``bundle`` along the fields) and form the item memory. A query is a record with ``noise`` of its
fields replaced by other values, encoded the same way; ``search`` finds the stored record it is
most similar to.

Where the data lives: the field and value vectors go to the device once (``ctx.to_device``); on cuda
the bound pairs, the records (the item memory) and the queries are cupy arrays that never leave
the GPU, and only the search results come back. On wgpu operations currently return numpy
results, so each intermediate is put back with ``ctx.to_device`` before the next step; on cpu
``to_device`` changes nothing.

Check: the same pipeline written independently with numpy int8 trits (bind = elementwise product,
bundle = sign of the sum, search = argmax of the integer dot products, ties to the smaller index);
the item memory, the found records and their scores must be equal.

    python examples/vsa_pipeline.py --n 10000 --dim 4096 [--backend cuda]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from _common import check_backend, make_parser, report

import pytropical_gpu as tg
from pytropical_gpu import TernaryVec


def make_vocabulary(fields: int, values: int, dim: int, seed: int = 0):
    """Random dense trits (+1/-1, int8): field vectors (fields, dim), value vectors (fields, values, dim)."""
    rng = np.random.default_rng(seed)
    keys = rng.choice(np.array([-1, 1], np.int8), size=(fields, dim))
    vals = rng.choice(np.array([-1, 1], np.int8), size=(fields, values, dim))
    return keys, vals


def make_records(n: int, fields: int, values: int, seed: int = 0) -> np.ndarray:
    """(n, fields) value indices: record r has value ``rec[r, f]`` in field f."""
    return np.random.default_rng(seed).integers(0, values, size=(n, fields))


def noisy(records: np.ndarray, picks: np.ndarray, noise: int, values: int, seed: int = 0) -> np.ndarray:
    """Copies of ``records[picks]`` with ``noise`` fields each changed to another value."""
    rng = np.random.default_rng(seed)
    q = records[picks].copy()
    for row in q:
        for f in rng.choice(q.shape[1], size=min(noise, q.shape[1]), replace=False):
            row[f] = (row[f] + rng.integers(1, values)) % values
    return q


def _pairs(keys: np.ndarray, vals: np.ndarray, rec: np.ndarray) -> tuple[TernaryVec, TernaryVec]:
    """(fields, len(rec)) batches of the field vectors and of each record's value vectors (host)."""
    f = np.arange(keys.shape[0])
    k = np.broadcast_to(keys[:, None, :], (keys.shape[0], rec.shape[0], keys.shape[1]))
    return TernaryVec.from_array(np.ascontiguousarray(k)), TernaryVec.from_array(vals[f[:, None], rec.T])


def _on_device(ctx: tg.HybridContext, v: TernaryVec) -> TernaryVec:
    """``v`` where ``ctx`` keeps data: host (numpy) planes are put there, device planes stay."""
    return ctx.to_device(v) if isinstance(v.pos, np.ndarray) else v


def encode(ctx: tg.HybridContext, keys: np.ndarray, vals: np.ndarray, rec: np.ndarray) -> TernaryVec:
    """Records -> one batched TernaryVec (len(rec), dim), computed where ``ctx`` keeps its data."""
    k, v = _pairs(keys, vals, rec)
    bound = ctx.bind(ctx.to_device(k), ctx.to_device(v))           # (fields, n): field/value pairs
    return _on_device(ctx, ctx.multiset(_on_device(ctx, bound)))  # majority over the fields: (n,)


def pipeline(ctx: tg.HybridContext, keys, vals, records, queries):
    """Encode the item memory and the queries, search; returns (memory, indices, scores) on the host."""
    memory = encode(ctx, keys, vals, records)
    q = encode(ctx, keys, vals, queries)
    idx, scores = ctx.search(q, memory, 1)
    return ctx.to_host(memory), np.asarray(ctx.to_host(idx))[:, 0], np.asarray(ctx.to_host(scores))[:, 0]


def reference(keys: np.ndarray, vals: np.ndarray, records: np.ndarray, queries: np.ndarray):
    """The same pipeline with numpy int8 trits, written without the library."""
    f = np.arange(keys.shape[0])

    def enc(rec):
        bound = keys[:, None, :].astype(np.int32) * vals[f[:, None], rec.T]  # (fields, n, dim)
        return np.sign(bound.sum(axis=0)).astype(np.int8)                    # threshold 1

    mem, q = enc(records), enc(queries)
    scores = q.astype(np.int64) @ mem.astype(np.int64).T
    best = scores.argmax(axis=1)  # the first maximum: ties go to the smaller index
    return mem, best, scores[np.arange(len(q)), best]


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=10_000, help="records in the item memory (default 10000)")
    p.add_argument("--dim", type=int, default=4096, help="trits per hypervector (default 4096)")
    p.add_argument("--fields", type=int, default=8, help="fields per record (default 8)")
    p.add_argument("--values", type=int, default=100, help="values per field (default 100)")
    p.add_argument("--queries", type=int, default=64, help="noisy records looked up (default 64)")
    p.add_argument("--noise", type=int, default=3, help="fields changed per query (default 3)")
    p.add_argument("--quiet", action="store_true", help="(accepted for symmetry; prints no progress)")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2
    if min(args.n, args.dim, args.fields, args.queries) < 1 or args.values < 2:
        p.error("--n, --dim, --fields, --queries must be positive and --values at least 2")

    ctx = tg.HybridContext(backend=args.backend or "auto")
    keys, vals = make_vocabulary(args.fields, args.values, args.dim, args.seed)
    records = make_records(args.n, args.fields, args.values, args.seed + 1)
    picks = np.random.default_rng(args.seed + 2).choice(args.n, size=args.queries)
    queries = noisy(records, picks, args.noise, args.values, args.seed + 3)
    words = (args.dim + 31) // 32
    # operations on resident data run where the data lives: the pinned backend, else auto's GPU
    where = ctx.backend if ctx.backend != "auto" else (ctx.gpu or "cpu")
    print(f"{args.n} records of {args.fields} fields, dim {args.dim} ({words} words); "
          f"the pipeline ran on {where}")

    pipeline(ctx, keys, vals, records[:4], queries[:2])  # warm-up (kernel compiles)
    t0 = time.perf_counter()
    memory, idx, scores = pipeline(ctx, keys, vals, records, queries)
    elapsed = time.perf_counter() - t0
    found = int((idx == picks).sum())
    print(f"encoded {args.n} records and searched {args.queries} queries in {elapsed * 1e3:.1f} ms; "
          f"{found}/{args.queries} noisy queries ({args.noise} of {args.fields} fields changed) found "
          f"their record")

    ref_mem, ref_idx, ref_scores = reference(keys, vals, records, queries)
    ok = np.array_equal(memory.to_array(), ref_mem)
    ok &= np.array_equal(idx, ref_idx) and np.array_equal(scores, ref_scores)
    return report(bool(ok), "item memory, found records and scores equal the numpy int8 pipeline")


if __name__ == "__main__":
    sys.exit(main())
