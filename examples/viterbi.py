"""Viterbi decoding of a hidden Markov model with ``max_plus`` on log-probabilities.

One Viterbi step is a max_plus vector-matrix product: the best log-probability of ending in state j
at time t is

    delta_t[j] = max_i (delta_{t-1}[i] + log A[i, j]) + log B[j, o_t]

and ``return_argmax=True`` gives the best predecessor i (the back-pointer) for free. Stacking the
delta vectors of many sequences as rows decodes them all in one product per time step. The model is
a ring of states where each state may only stay or move one or two states on (forbidden moves have
log-probability -inf, which max_plus treats as absorbing). The built-in check is the textbook
dynamic-programming loop in numpy.

    python examples/viterbi.py --states 8 --length 200 --sequences 64 [--backend cpu]
"""

from __future__ import annotations

import sys

import numpy as np
from _common import Progress, check_backend, make_parser, ran_on, report

import pytropical_gpu as tg


def ring_hmm(states: int, symbols: int, seed: int = 0):
    """A random HMM: (log_pi, log_A, log_B) as float32; A allows stay / +1 / +2 moves only."""
    rng = np.random.default_rng(seed)
    a = np.zeros((states, states))
    for i in range(states):
        for step, wgt in zip((0, 1, 2), rng.dirichlet([4.0, 2.0, 1.0])):
            a[i, (i + step) % states] += wgt
    b = rng.dirichlet(np.full(symbols, 0.3), size=states)  # peaked emission distributions
    pi = np.full(states, 1.0 / states)
    with np.errstate(divide="ignore"):
        return (np.log(pi).astype(np.float32), np.log(a).astype(np.float32),
                np.log(b).astype(np.float32))


def sample(log_pi, log_a, log_b, length: int, count: int, seed: int = 0):
    """``count`` sequences of ``length`` steps: (hidden states, observations), both (count, length)."""
    rng = np.random.default_rng(seed)
    pi, a, b = np.exp(log_pi.astype(np.float64)), np.exp(log_a.astype(np.float64)), \
        np.exp(log_b.astype(np.float64))
    hidden = np.empty((count, length), np.int64)
    obs = np.empty((count, length), np.int64)
    for s in range(count):
        h = rng.choice(len(pi), p=pi / pi.sum())
        for t in range(length):
            hidden[s, t] = h
            obs[s, t] = rng.choice(b.shape[1], p=b[h] / b[h].sum())
            h = rng.choice(len(pi), p=a[h] / a[h].sum())
    return hidden, obs


def viterbi(log_pi, log_a, log_b, obs, backend: str | None = None, quiet: bool = True):
    """Most likely hidden paths of all sequences in ``obs`` (count, length) and their log-probabilities."""
    count, length = obs.shape
    delta = log_pi[None, :] + log_b[:, obs[:, 0]].T  # (count, states)
    back = np.empty((length, count, log_pi.shape[0]), np.int32)
    bar = Progress("time step", length, quiet=quiet)
    for t in range(1, length):
        # best[s, j] = max_i delta[s, i] + log_a[i, j]; back[t, s, j] = that i
        best, back[t] = tg.matmul(delta, log_a, "max_plus", return_argmax=True, backend=backend)
        delta = best + log_b[:, obs[:, t]].T
        bar.update(t)
    paths = np.empty((count, length), np.int64)
    paths[:, -1] = delta.argmax(axis=1)
    for t in range(length - 1, 0, -1):
        paths[:, t - 1] = back[t, np.arange(count), paths[:, t]]
    return paths, delta.max(axis=1)


def viterbi_loop(log_pi, log_a, log_b, obs):
    """The same recursion written as a plain loop over sequences and time (the built-in check)."""
    count, length = obs.shape
    paths = np.empty((count, length), np.int64)
    scores = np.empty(count, np.float32)
    for s in range(count):
        delta = log_pi + log_b[:, obs[s, 0]]
        back = []
        for t in range(1, length):
            cand = delta[:, None] + log_a  # cand[i, j]
            back.append(cand.argmax(axis=0))  # first maximum: the smallest i on ties
            delta = cand.max(axis=0) + log_b[:, obs[s, t]]
        state = int(delta.argmax())
        scores[s] = delta[state]
        path = [state]
        for bp in reversed(back):
            state = int(bp[state])
            path.append(state)
        paths[s] = path[::-1]
    return paths, scores


def main(argv=None) -> int:
    p = make_parser(__doc__.splitlines()[0])
    p.add_argument("--states", type=int, default=8, help="hidden states (default 8)")
    p.add_argument("--symbols", type=int, default=16, help="observation symbols (default 16)")
    p.add_argument("--length", type=int, default=200, help="steps per sequence (default 200)")
    p.add_argument("--sequences", type=int, default=64, help="sequences decoded together (default 64)")
    p.add_argument("--quiet", action="store_true", help="no progress lines")
    args = p.parse_args(argv)
    if (why := check_backend(args.backend)):
        print(why, file=sys.stderr)
        return 2

    log_pi, log_a, log_b = ring_hmm(args.states, args.symbols, args.seed)
    hidden, obs = sample(log_pi, log_a, log_b, args.length, args.sequences, args.seed + 1)
    size = args.sequences * args.states * args.states
    print(f"HMM with {args.states} states and {args.symbols} symbols; {args.sequences} sequences of "
          f"{args.length} steps; max_plus ran on: {ran_on(args.backend, 'matmul', size)}")
    paths, scores = viterbi(log_pi, log_a, log_b, obs, args.backend, quiet=args.quiet)
    acc = (paths == hidden).mean()
    naive = log_b.argmax(axis=0)[obs]  # most likely state per symbol, ignoring the dynamics
    print(f"decoded states agree with the true hidden states {acc:.1%} of the time "
          f"(per-symbol guess without the transitions: {(naive == hidden).mean():.1%})")
    print(f"best path log-probability of sequence 0: {scores[0]:.3f}; first states: "
          f"{' '.join(map(str, paths[0, :16]))} ...")

    ref_paths, ref_scores = viterbi_loop(log_pi, log_a, log_b, obs)
    ok = bool(np.array_equal(paths, ref_paths) and np.array_equal(scores, ref_scores))
    return report(ok, "paths and log-probabilities equal the plain dynamic-programming loop")


if __name__ == "__main__":
    sys.exit(main())
