// The row operations of the softmaxes (attention rows and the loss over the vocabulary), 4-wide
// with the compiler's vector extension like the GEMM kernel. With std::exp and scalar loops, the
// 4 million exponentials of one reference forward pass cost about as much as all its matrix
// products in WebAssembly. The exponential is Cephes' expf polynomial: relative error below 2e-7
// (about 1.5 ulp) for arguments down to -87.3, and exactly 0 below that.
#pragma once

namespace cs::kernels {

// out[j] = exp(x[j] - shift) for j < n; returns the sum of the out[j] (accumulated in float).
// out may equal x.
float exp_shifted_sum(const float* x, float shift, float* out, int n);
// The same with the 4-wide loop only. exp_shifted_sum runs 8 or 16 lanes at a time where the x86
// CPU has AVX2 or AVX-512, with the same bits in every output and in the sum (tests check it).
float exp_shifted_sum_portable(const float* x, float shift, float* out, int n);

// The largest of x[0..n), 4-wide (NaN values are passed over; -infinity when there is no other).
float max_of(const float* x, int n);

// One causal attention row: p[0..n) = softmax(s[0..n)), p[n..width) = 0.
void softmax_row(const float* s, float* p, int n, int width);

// Its gradient: ds[j] = p[j] * (dp[j] - sum_k p[k] dp[k]) for j < n, ds[n..width) = 0.
void softmax_grad_row(const float* p, const float* dp, float* ds, int n, int width);

}  // namespace cs::kernels
