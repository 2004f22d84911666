"""nbx-spectral: FFTs and the short-time Fourier transform as Triton kernels for NBX."""
