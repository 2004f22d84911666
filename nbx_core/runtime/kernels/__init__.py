"""The few Triton kernels nbx-core needs itself: strided copy with cast, fill, ranges, equality."""
