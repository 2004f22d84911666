"""nbx-attention: softmax and scaled dot-product attention kernels for NBX."""
