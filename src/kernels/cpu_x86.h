// What the x86-64 CPU (and its OS) runs, for the kernels picked at run time (gemm_x86.cpp,
// softmax_x86.cpp). libgcc's checks include the OS's support for the wider registers (XGETBV),
// not only CPUID. Internal to src/kernels/.
#pragma once

#if !defined(CS_GEMM_PLAIN) && !defined(__EMSCRIPTEN__) && defined(__x86_64__) && defined(__GNUC__)
namespace cs::kernels::x86 {
inline bool cpu_has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
inline bool cpu_has_fma() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma");
}
inline bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
}
}  // namespace cs::kernels::x86
#endif
