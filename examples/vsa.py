"""Hyperdimensional computing with bitsliced ternary vectors: records, analogy, sequences, learning.

1. A symbolic record: a country is bundle(NAME*usa, CAPITAL*washington, CURRENCY*dollar), with *
   = bind. Unbinding a role from the record gives back a noisy filler that ``search`` cleans up.
   Kanerva's "what is the dollar of Mexico?": bind(dollar, bind(USA, MEXICO)) ~ peso.
2. A sequence: bundle(permute(letter_i, i)); shifting back by i and searching reads letter i.
3. A prototype learner: each sample becomes a ternary vector (random projection with a dead zone),
   each class keeps saturating counters (``SoftTernaryVec.accumulate``) that are hardened into a
   prototype; misclassified samples are added to their class and subtracted from the wrong one.
   Accuracy is reported beside a nearest-centroid baseline on the raw features. Data: scikit-learn's
   handwritten digits if scikit-learn is installed, else a synthetic 10-class set of the same shape.

    python examples/vsa.py --dim 8192 [--backend cpu] [--plot similarities.png]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Progress, check_backend, make_parser, pyplot, ran_on, report

import pytropical_gpu as tg
from pytropical_gpu import SoftTernaryVec, TernaryVec


def item_memory(names: list[str], dim: int, seed: int) -> TernaryVec:
    """One random dense (+1/-1) vector per name, as one batched TernaryVec (rows = names)."""
    return TernaryVec.random(dim, density=1.0, seed=seed, batch=len(names))


def country_analogy(dim: int, seed: int = 0, backend: str | None = None) -> dict:
    names = ["NAME", "CAPITAL", "CURRENCY", "usa", "washington", "dollar", "mexico", "mexico_city",
             "peso"]
    mem = item_memory(names, dim, seed)
    v = {n: mem[i] for i, n in enumerate(names)}

    def record(*pairs):
        return tg.bundle([tg.bind(v[role], v[filler], backend=backend) for role, filler in pairs],
                         backend=backend)

    usa = record(("NAME", "usa"), ("CAPITAL", "washington"), ("CURRENCY", "dollar"))
    mex = record(("NAME", "mexico"), ("CAPITAL", "mexico_city"), ("CURRENCY", "peso"))

    def lookup(query):
        idx, scores = tg.search(query, mem, k=2, backend=backend)
        return names[int(idx[0])], float(tg.cosine(query, mem[int(idx[0])], backend=backend)), \
            names[int(idx[1])]

    capital = lookup(tg.unbind(mex, v["CAPITAL"], backend=backend))
    mapping = tg.bind(usa, mex, backend=backend)  # maps each USA filler to Mexico's
    dollar_of_mexico = lookup(tg.bind(v["dollar"], mapping, backend=backend))
    return {"capital_of_mexico": capital, "dollar_of_mexico": dollar_of_mexico}


def sequence_demo(word: str, dim: int, seed: int = 0, backend: str | None = None) -> str:
    """Encode ``word`` as bundle(permute(letter_i, i)) and read it back position by position."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    letters = item_memory(list(alphabet), dim, seed)
    seq = tg.bundle([tg.permute(letters[alphabet.index(ch)], i, backend=backend)
                     for i, ch in enumerate(word)], backend=backend)
    out = []
    for i in range(len(word)):
        idx, _ = tg.search(tg.permute(seq, -i, backend=backend), letters, k=1, backend=backend)
        out.append(alphabet[int(idx[0])])
    return "".join(out)


def load_data(seed: int = 0):
    """(X, y, name): scikit-learn's 8x8 digits (1797 x 64, values 0..16) or a synthetic look-alike."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        rng = np.random.default_rng(seed)
        centers = 8 + 2.0 * rng.standard_normal((10, 64))  # close classes, noisy samples
        y = rng.integers(0, 10, size=1800)
        x = np.clip(centers[y] + rng.normal(0, 4.0, size=(1800, 64)), 0, 16)
        return x, y, "synthetic 10-class data (pip install scikit-learn for the digits)"
    d = load_digits()
    return d.data.astype(np.float64), d.target, "scikit-learn digits"


def encode(x: np.ndarray, dim: int, mean, std, seed: int = 0) -> TernaryVec:
    """Random projection to ``dim`` trits: sign(R x) where |R x| is above a dead zone, else 0."""
    rng = np.random.default_rng(seed)
    proj = rng.standard_normal((x.shape[1], dim)).astype(np.float32)
    z = ((x - mean) / std).astype(np.float32) @ proj
    dead = 0.5 * z.std(axis=1, keepdims=True)
    trits = np.where(z > dead, 1, np.where(z < -dead, -1, 0)).astype(np.int8)
    return TernaryVec.from_array(trits)


def negate(v: TernaryVec) -> TernaryVec:
    return TernaryVec(v.neg, v.pos, v.dim)


def train_prototypes(hv: TernaryVec, y: np.ndarray, classes: int, epochs: int = 3, bits: int = 4,
                     batch: int = 64, backend: str | None = None, quiet: bool = True):
    """Class prototypes from saturating counters: one accumulate pass, then error-driven epochs.

    Returns (prototypes after the first pass, final prototypes), each a TernaryVec (classes, dim).
    """
    soft = SoftTernaryVec(hv.dim, bits=bits, batch=classes)
    zero = np.zeros((classes, hv.words), np.uint32)

    def update(sample: TernaryVec, rows: dict[int, bool]) -> None:
        """Add (+) or subtract (-) one sample to the counters of the given classes, in one call."""
        pos, neg = zero.copy(), zero.copy()
        for c, plus in rows.items():
            pos[c], neg[c] = (sample.pos, sample.neg) if plus else (sample.neg, sample.pos)
        soft.accumulate(TernaryVec(pos, neg, hv.dim), backend=backend)

    for i in range(len(y)):  # first pass: every sample into its own class counter
        update(hv[i], {int(y[i]): True})
    first = soft.harden(1, backend=backend)
    protos = first
    bar = Progress("epoch", epochs, quiet=quiet)
    for ep in range(epochs):
        wrong = 0
        for b0 in range(0, len(y), batch):
            idx, _ = tg.search(hv[b0:b0 + batch], protos, k=1, backend=backend)
            pred = idx[:, 0]
            for j in np.flatnonzero(pred != y[b0:b0 + batch]):
                update(hv[b0 + j], {int(y[b0 + j]): True, int(pred[j]): False})
                wrong += 1
            protos = soft.harden(1, backend=backend)
        bar.update(ep + 1, f"{wrong} corrections")
    return first, protos


def classify(hv: TernaryVec, protos: TernaryVec, backend: str | None = None) -> np.ndarray:
    idx, _ = tg.search(hv, protos, k=1, backend=backend)
    return np.asarray(idx)[:, 0]


def nearest_centroid(xtr, ytr, xte, classes: int) -> np.ndarray:
    cent = np.stack([xtr[ytr == c].mean(axis=0) for c in range(classes)])
    return ((xte[:, None, :] - cent[None]) ** 2).sum(-1).argmin(axis=1)


def learner(dim: int, seed: int = 0, epochs: int = 3, limit: int | None = None, bits: int = 4,
            backend: str | None = None, quiet: bool = True) -> dict:
    x, y, source = load_data(seed)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))[:limit]
    x, y = x[order], y[order]
    cut = int(0.7 * len(y))
    xtr, ytr, xte, yte = x[:cut], y[:cut], x[cut:], y[cut:]
    mean, std = xtr.mean(axis=0), xtr.std(axis=0) + 1e-6
    hv_tr = encode(xtr, dim, mean, std, seed)
    hv_te = encode(xte, dim, mean, std, seed)
    first, protos = train_prototypes(hv_tr, ytr, 10, epochs, bits, backend=backend, quiet=quiet)
    pred = classify(hv_te, protos, backend)
    return {
        "source": source, "train": cut, "test": len(yte),
        "acc_first_pass": float((classify(hv_te, first, backend) == yte).mean()),
        "acc": float((pred == yte).mean()),
        "acc_centroid": float((nearest_centroid(xtr, ytr, xte, 10) == yte).mean()),
        "cosines": np.asarray(tg.cosine(hv_te, protos, backend=backend)), "y_test": yte,
    }


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0], plot=True)
    p.add_argument("--dim", type=int, default=8192, help="trits per hypervector (default 8192)")
    p.add_argument("--epochs", type=int, default=3, help="retraining epochs (default 3)")
    p.add_argument("--limit", type=int, default=None, help="use at most this many samples")
    p.add_argument("--bits", type=int, default=4, help="counter bits: saturate at 2^bits-1 (default 4)")
    p.add_argument("--word", default="HYPERDIMENSIONAL", help="sequence to encode (A-Z)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2
    word = "".join(ch for ch in args.word.upper() if ch.isalpha()) or "A"
    words = (args.dim + 31) // 32
    print(f"dim {args.dim} ({words} words per plane); bind/bundle/search ran on: "
          f"{ran_on(args.backend, 'bind', 2 * words)}/{ran_on(args.backend, 'bundle', 3 * words)}/"
          f"{ran_on(args.backend, 'search', 10 * words)}")

    rec = country_analogy(args.dim, args.seed, args.backend)
    name, cos, second = rec["capital_of_mexico"]
    print(f"record: unbind(MEXICO, CAPITAL) -> {name} (cosine {cos:.2f}; runner-up {second})")
    name2, cos2, second2 = rec["dollar_of_mexico"]
    print(f"analogy: what is the dollar of Mexico? -> {name2} (cosine {cos2:.2f}; runner-up {second2})")
    back = sequence_demo(word, args.dim, args.seed + 1, args.backend)
    print(f"sequence: {word!r} encoded with permute and bundle, read back as {back!r}")

    res = learner(args.dim, args.seed, args.epochs, args.limit, args.bits, args.backend, quiet=args.quiet)
    print(f"prototype learner on {res['source']}: {res['train']} train / {res['test']} test samples")
    print(f"  accuracy: one accumulate pass {res['acc_first_pass']:.1%}, after {args.epochs} "
          f"retraining epochs {res['acc']:.1%}; nearest-centroid baseline {res['acc_centroid']:.1%}")

    if args.plot is not None:
        plt = pyplot()
        cos_all, yte = res["cosines"], res["y_test"]
        own = cos_all[np.arange(len(yte)), yte]
        other = cos_all[np.arange(len(yte))[:, None], np.arange(10)[None, :]][
            np.arange(10)[None, :] != yte[:, None]]
        fig, ax = plt.subplots(figsize=(5, 3.5))
        ax.hist(other, bins=50, alpha=0.6, density=True, label="other classes")
        ax.hist(own, bins=50, alpha=0.6, density=True, label="own class")
        ax.set(xlabel="cosine(test sample, prototype)", ylabel="density",
               title="similarity to the class prototypes")
        ax.legend()
        out = args.plot or "vsa_similarities.png"
        fig.savefig(out, dpi=100, bbox_inches="tight")
        print(f"saved {out}")

    ok = (rec["capital_of_mexico"][0] == "mexico_city" and rec["dollar_of_mexico"][0] == "peso"
          and back == word and res["acc"] >= 0.75)
    return report(ok, "record lookup, analogy and sequence recovered exactly; learner accuracy >= 75%")


if __name__ == "__main__":
    sys.exit(main())
