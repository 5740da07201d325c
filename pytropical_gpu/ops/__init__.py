"""The operations layer: what each public verb does once a backend has been chosen.

Every operation takes the backend object first and follows one shape: *prepare* (validate the
arguments, bring operands to the backend's native arrays once, learn the operand facts of
:mod:`pytropical_gpu.facts` once), *run* the backend's kernels (the underscore methods of
:mod:`pytropical_gpu.backends.base`), *finish* (the result in the caller's array kind, once).
No operation calls another public operation.

Modules: :mod:`.gemm` (matmul), :mod:`.packed` (pack_rows, pack_cols, andor_matmul), :mod:`.vsa`
(bind, unbind, bundle, multiset, permute, accumulate, harden), :mod:`.similarity` (dot, cosine,
search). :class:`Operations` gives a backend object the same verbs as methods (``be.matmul``).
"""

from __future__ import annotations

from . import gemm, packed, similarity, vsa


class Operations:
    """The public verbs as methods of a backend object: ``get_backend("cpu").matmul(...)`` runs
    there, with the module functions' signatures less ``backend=``. Each method *is* the operation
    (the backend binds as its first argument), so a call through a backend object adds no layer."""

    matmul = gemm.matmul
    pack_rows = packed.pack_rows
    pack_cols = packed.pack_cols
    andor_matmul = packed.andor_matmul
    bind = vsa.bind
    unbind = vsa.unbind
    bundle = vsa.bundle
    multiset = vsa.multiset
    permute = vsa.permute
    accumulate = vsa.accumulate
    harden = vsa.harden
    dot = similarity.dot
    cosine = similarity.cosine
    search = similarity.search
    dot_similarity = similarity.dot
    cosine_similarity = similarity.cosine
    #: the names accumulate and harden had on backend objects before they became verbs
    soft_accumulate = vsa.accumulate
    soft_harden = vsa.harden


__all__ = ["Operations", "gemm", "packed", "similarity", "vsa"]
