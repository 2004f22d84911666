"""nbx-conv: convolution, im2col, pooling, upsampling and grid sampling kernels for NBX."""
