// The softmaxes' exponential at the x86 CPU's width (softmax_x86.cpp), picked at run time by
// softmax.cpp's exp_shifted_sum. Internal to src/kernels/.
#pragma once

#if !defined(CS_GEMM_PLAIN) && !defined(__EMSCRIPTEN__) && defined(__x86_64__) && defined(__GNUC__)
#define CS_SOFTMAX_X86 1
namespace cs::kernels::x86 {
// out[j] = exp(x[j] - shift) for j < n4 (a multiple of 4); acc4 += the four partial sums, in the
// order the portable 4-wide loop adds them.
using WideExp = void (*)(const float* x, float shift, float* out, int n4, float* acc4);
void exp_shifted_avx512(const float* x, float shift, float* out, int n4, float* acc4);
void exp_shifted_avx2(const float* x, float shift, float* out, int n4, float* acc4);
// The widest this CPU runs, or nullptr (then the portable loop does all the work). The
// environment variable CS_WIDE_EXP=0 turns it off (for comparisons).
WideExp pick_wide_exp();
}  // namespace cs::kernels::x86
#else
#define CS_SOFTMAX_X86 0
#endif
