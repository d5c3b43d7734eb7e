// The 4-wide float vector both kernels are written with: the compiler's vector_size(16)
// extension, which GCC compiles to SSE and clang to WebAssembly SIMD128. Loads and stores go
// through memcpy so no alignment is assumed. CS_KERNELS_VECTOR is 0 where the extension is missing
// or CS_GEMM_PLAIN asks for the scalar fallbacks. CS_KERNELS_RELAXED is 1 in the WebAssembly
// relaxed-SIMD build, where madd() below is fused.
#pragma once
#include <cstdint>
#include <cstring>

#if !defined(CS_GEMM_PLAIN) && (defined(__GNUC__) || defined(__clang__))
#define CS_KERNELS_VECTOR 1
#else
#define CS_KERNELS_VECTOR 0
#endif

#if CS_KERNELS_VECTOR && defined(__wasm_relaxed_simd__)
#define CS_KERNELS_RELAXED 1
#else
#define CS_KERNELS_RELAXED 0
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

// a * b + c. With WebAssembly relaxed SIMD (-mrelaxed-simd) it is f32x4.relaxed_madd, which the
// engine runs as a fused multiply-add where the processor has one (one rounding instead of two);
// everywhere else a plain multiply then add, the same instructions as `a * b + c` written out.
// clang 14 (Emscripten 3.1.6) has the builtin only under its pre-standard name and opcode, which
// scripts/wasm-relaxed-opcodes.mjs renumbers after linking; newer clang has the standard one.
#if defined(__wasm_relaxed_simd__)
#if __has_builtin(__builtin_wasm_relaxed_madd_f32x4)
inline v4f madd(v4f a, v4f b, v4f c) { return __builtin_wasm_relaxed_madd_f32x4(a, b, c); }
#else
inline v4f madd(v4f a, v4f b, v4f c) { return __builtin_wasm_fma_f32x4(a, b, c); }
#endif
#else
inline v4f madd(v4f a, v4f b, v4f c) { return a * b + c; }
#endif
// c - a * b, through madd (negating b is exact; for a constant b it is folded at compile time).
#if defined(__wasm_relaxed_simd__)
inline v4f nmadd(v4f a, v4f b, v4f c) { return madd(a, -b, c); }
#else
inline v4f nmadd(v4f a, v4f b, v4f c) { return c - a * b; }
#endif

}  // namespace cs::kernels::vec
#endif
