"""nbx-norm: Triton kernels for ATen's normalisation ops (layer, RMS, group, batch, weight norm).

Kernels live in ``layer_norm``, ``rms_norm``, ``group_norm``, ``batch_norm`` and ``weight_norm``;
``moments`` holds the split reduction (per-unit mean and variance) and the per-channel apply that
group, batch and weight norm share; ``checks`` holds argument validation. ``plugin`` only registers.
"""
