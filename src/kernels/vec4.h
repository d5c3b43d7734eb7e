// The 4-wide float vector both kernels are written with: the compiler's vector_size(16)
// extension, which GCC compiles to SSE and clang to WebAssembly SIMD128. Loads and stores go
// through memcpy so no alignment is assumed. CS_KERNELS_VECTOR is 0 where the extension is missing
// or CS_GEMM_PLAIN asks for the scalar fallbacks.
#pragma once
#include <cstdint>
#include <cstring>

#if !defined(CS_GEMM_PLAIN) && (defined(__GNUC__) || defined(__clang__))
#define CS_KERNELS_VECTOR 1
#else
#define CS_KERNELS_VECTOR 0
#endif

#if CS_KERNELS_VECTOR
namespace cs::kernels::vec {

typedef float v4f __attribute__((vector_size(16)));
typedef std::int32_t v4i __attribute__((vector_size(16)));
typedef std::uint32_t v4u __attribute__((vector_size(16)));

inline v4f load4(const float* p) {
  v4f v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store4(float* p, v4f v) { std::memcpy(p, &v, sizeof v); }
inline v4f splat(float x) { return v4f{x, x, x, x}; }

}  // namespace cs::kernels::vec
#endif
