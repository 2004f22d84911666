"""nbx-index: gather/scatter, advanced indexing, embedding, sort/topk, search, padding and layout kernels.

Seeded random ops (``multinomial``, ``randperm``) take their seed from
:func:`nbx_index.random.manual_seed`.
"""
