"""nbx-reduction: ATen reductions, scans and losses as Triton kernels for NBX."""
