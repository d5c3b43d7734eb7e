// Packed GEMM (see gemm.h). The layout follows the usual Goto/BLIS scheme, kept small:
//   for each block of KC values of k:   pack op(B)[k-block, all N] into panels of 8 columns
//     for each block of MC rows:        pack op(A)[rows, k-block] into panels of 4 rows
//       for each 8-column panel, for each 4-row panel: the 4x8 micro-kernel
// A micro-kernel keeps its 4x8 tile of C in eight 4-wide registers and, per k, loads two
// vectors of B and broadcasts four values of A: 16 vector operations for 64 flops. (A 6x8 tile
// needs more registers than SIMD128 code gets and was measured to run at half the speed.)
#include "kernels/gemm.h"
#include "kernels/vec4.h"

#include <algorithm>
#include <cstring>
#include <vector>


namespace cs::kernels {

namespace {

constexpr int MR = 4;    // rows of a micro-tile
constexpr int NR = 8;    // columns of a micro-tile
constexpr int KC = 256;  // depth of a packed block
constexpr int MC = 64;    // rows of a packed block of A
constexpr int NC = 2048;  // columns of a packed block of B

// Packed panels, per thread, of a fixed size (one KC x NC block of B, one MC x KC block of A:
// 2 MB + 64 KB), allocated at the first product: however wide a product is (a vocabulary of a
// million columns), the memory kept between calls does not grow with it.
struct Scratch {
  std::vector<float> a, b;
};
Scratch& scratch() {
  static thread_local Scratch s;
  if (s.b.empty()) {
    s.a.resize(static_cast<std::size_t>(MC) * KC);
    s.b.resize(static_cast<std::size_t>(KC) * NC);
  }
  return s;
}

}  // namespace

std::size_t gemm_scratch_bytes() { return sizeof(float) * (static_cast<std::size_t>(MC) * KC + static_cast<std::size_t>(KC) * NC); }

namespace {

// op(B)[kc0 .. kc0+kb, nc0 .. nc0+nb] -> panels of NR columns: panel p holds, for each k, the NR
// values of columns nc0+p*NR .. nc0+p*NR+NR-1 (zero past N).
void pack_b(const GemmArgs& g, int kc0, int kb, int nc0, int nb, float* out) {
  const int panels = (nb + NR - 1) / NR;
  for (int p = 0; p < panels; ++p) {
    const int j0 = nc0 + p * NR, nc = std::min(NR, g.N - j0);
    float* dst = out + static_cast<std::size_t>(p) * kb * NR;
    if (g.op_b == Op::N) {
      for (int k = 0; k < kb; ++k) {
        const float* src = g.B + static_cast<std::size_t>(kc0 + k) * g.ldb + j0;
        float* d = dst + k * NR;
        if (nc == NR) {
          std::memcpy(d, src, sizeof(float) * NR);
        } else {
          for (int c = 0; c < nc; ++c) d[c] = src[c];
          for (int c = nc; c < NR; ++c) d[c] = 0.0f;
        }
      }
    } else {  // B is stored [N, K]: op(B)[k][j] = B[j][k]
      for (int c = 0; c < NR; ++c) {
        if (c < nc) {
          const float* src = g.B + static_cast<std::size_t>(j0 + c) * g.ldb + kc0;
          for (int k = 0; k < kb; ++k) dst[k * NR + c] = src[k];
        } else {
          for (int k = 0; k < kb; ++k) dst[k * NR + c] = 0.0f;
        }
      }
    }
  }
}

// The k-range, within the block kc0 .. kc0+kb, that can contribute to rows i0 .. i_last.
inline void k_range(const GemmArgs& g, int i0, int i_last, int kc0, int kb, int& k_lo, int& k_hi) {
  k_lo = 0, k_hi = kb;
  if (g.causal == Causal::LowerA) k_hi = std::max(0, std::min(kb, i_last + 1 - kc0));
  if (g.causal == Causal::UpperA) k_lo = std::min(kb, std::max(0, i0 - kc0));
}

// op(A)[mc0 .. mc0+mb, kc0 .. kc0+kb] -> panels of MR rows: panel p holds, for each k, the MR
// values of rows mc0+p*MR .. (zero past M). Only the k-range a causal mode reads is packed.
void pack_a(const GemmArgs& g, int mc0, int mb, int kc0, int kb, float* out) {
  const int panels = (mb + MR - 1) / MR;
  for (int p = 0; p < panels; ++p) {
    const int i0 = mc0 + p * MR, mr = std::min(MR, mc0 + mb - i0);
    int k_lo, k_hi;
    k_range(g, i0, i0 + mr - 1, kc0, kb, k_lo, k_hi);
    float* dst = out + static_cast<std::size_t>(p) * kb * MR;
    if (g.op_a == Op::N) {
      for (int r = 0; r < MR; ++r) {
        if (r < mr) {
          const float* src = g.A + static_cast<std::size_t>(i0 + r) * g.lda + kc0;
          for (int k = k_lo; k < k_hi; ++k) dst[k * MR + r] = src[k];
        } else {
          for (int k = k_lo; k < k_hi; ++k) dst[k * MR + r] = 0.0f;
        }
      }
    } else {  // A is stored [K, M]: op(A)[i][k] = A[k][i]
      for (int k = k_lo; k < k_hi; ++k) {
        const float* src = g.A + static_cast<std::size_t>(kc0 + k) * g.lda + i0;
        float* d = dst + k * MR;
        if (mr == MR) {
          std::memcpy(d, src, sizeof(float) * MR);
        } else {
          for (int r = 0; r < mr; ++r) d[r] = src[r];
          for (int r = mr; r < MR; ++r) d[r] = 0.0f;
        }
      }
    }
  }
}

// Where column j of row i of C lives.
inline float* c_at(const GemmArgs& g, int i, int j) {
  if (g.c_split > 0) {
    float* base = g.c_blocks ? g.c_blocks[j / g.c_split] : g.C + static_cast<std::size_t>(j / g.c_split) * g.c_split_stride;
    return base + static_cast<std::size_t>(i) * g.ldc + (j % g.c_split);
  }
  return g.C + static_cast<std::size_t>(i) * g.ldc + j;
}

// True when the NR columns j0.. of C are contiguous in memory (so a tile row is one store).
inline bool columns_contiguous(const GemmArgs& g, int j0) {
  if (g.c_split <= 0) return true;
  return j0 / g.c_split == (j0 + NR - 1) / g.c_split;
}

// Writes a finished tile `acc` (MR x NR, row-major) into C: C = alpha*acc + beta*C on the first
// k-block (C not read when beta == 0), C += alpha*acc on later ones.
void store_tile_scalar(const GemmArgs& g, const float* acc, int i0, int mr, int j0, int nc, bool first) {
  for (int r = 0; r < mr; ++r)
    for (int c = 0; c < nc; ++c) {
      float* p = c_at(g, i0 + r, j0 + c);
      const float v = g.alpha * acc[r * NR + c];
      if (!first) *p += v;
      else if (g.beta == 0.0f) *p = v;
      else *p = v + g.beta * *p;
    }
}

// The scalar micro-kernel: acc = sum over k of a[k] (MR values) x b[k] (NR values).
void micro_plain(int kn, const float* a, const float* b, float* acc) {
  float t[MR][NR] = {};
  for (int k = 0; k < kn; ++k) {
    const float* ak = a + k * MR;
    const float* bk = b + k * NR;
    for (int r = 0; r < MR; ++r)
      for (int c = 0; c < NR; ++c) t[r][c] += ak[r] * bk[c];
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r * NR + c] = t[r][c];
}

#if CS_KERNELS_VECTOR
using namespace vec;

// The vector micro-kernel. A comes either packed (`a`: MR values per k) or, when op(A) = A,
// straight from its rows (`rows`: one pointer per row of the tile, already at the first k): a
// broadcast load costs the same from four rows as from one panel, and skipping the packing
// saves a pass over A (for pattern v, the whole pattern). A full tile with contiguous columns is
// stored straight from the registers; edge tiles go through `acc` and store_tile_scalar.
template <bool PackedA>
void micro_vector(const GemmArgs& g, int kn, const float* a, const float* const* rows, const float* b, int i0, int mr,
                  int j0, int nc, bool first) {
  v4f c00 = splat(0), c01 = splat(0), c10 = splat(0), c11 = splat(0);
  v4f c20 = splat(0), c21 = splat(0), c30 = splat(0), c31 = splat(0);
  const float *a0 = nullptr, *a1 = nullptr, *a2 = nullptr, *a3 = nullptr;
  if constexpr (!PackedA) a0 = rows[0], a1 = rows[1], a2 = rows[2], a3 = rows[3];
  for (int k = 0; k < kn; ++k) {
    const v4f b0 = load4(b), b1 = load4(b + 4);
    v4f ak = splat(PackedA ? a[0] : a0[k]);
    c00 = madd(ak, b0, c00);
    c01 = madd(ak, b1, c01);
    ak = splat(PackedA ? a[1] : a1[k]);
    c10 = madd(ak, b0, c10);
    c11 = madd(ak, b1, c11);
    ak = splat(PackedA ? a[2] : a2[k]);
    c20 = madd(ak, b0, c20);
    c21 = madd(ak, b1, c21);
    ak = splat(PackedA ? a[3] : a3[k]);
    c30 = madd(ak, b0, c30);
    c31 = madd(ak, b1, c31);
    if constexpr (PackedA) a += MR;
    b += NR;
  }
  const v4f al = splat(g.alpha);
  if (mr == MR && nc == NR && columns_contiguous(g, j0)) {
    const v4f rows[MR][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31}};
    for (int r = 0; r < MR; ++r) {
      float* p = c_at(g, i0 + r, j0);
      v4f v0 = al * rows[r][0], v1 = al * rows[r][1];
      if (!first) {
        v0 += load4(p);
        v1 += load4(p + 4);
      } else if (g.beta != 0.0f) {
        const v4f be = splat(g.beta);
        v0 += be * load4(p);
        v1 += be * load4(p + 4);
      }
      store4(p, v0);
      store4(p + 4, v1);
    }
    return;
  }
  float acc[MR * NR];
  store4(acc + 0, c00), store4(acc + 4, c01), store4(acc + 8, c10), store4(acc + 12, c11);
  store4(acc + 16, c20), store4(acc + 20, c21), store4(acc + 24, c30), store4(acc + 28, c31);
  store_tile_scalar(g, acc, i0, mr, j0, nc, first);
}
#endif

template <bool Vector>
void sgemm_impl(const GemmArgs& g) {
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {  // C = beta * C
    for (int i = 0; i < g.M; ++i)
      for (int j = 0; j < g.N; ++j) {
        float* p = c_at(g, i, j);
        *p = g.beta == 0.0f ? 0.0f : g.beta * *p;
      }
    return;
  }
  Scratch& s = scratch();
  float acc[MR * NR];
  // The vector kernel reads an untransposed A in place.
  const bool direct_a = Vector && CS_KERNELS_VECTOR && g.op_a == Op::N;

  for (int nc0 = 0; nc0 < g.N; nc0 += NC) {
    const int nb = std::min(NC, g.N - nc0);
    const int panels_n = (nb + NR - 1) / NR;
    for (int kc0 = 0; kc0 < g.K; kc0 += KC) {
      const int kb = std::min(KC, g.K - kc0);
      const bool first = kc0 == 0;
      pack_b(g, kc0, kb, nc0, nb, s.b.data());
      for (int mc0 = 0; mc0 < g.M; mc0 += MC) {
        const int mb = std::min(MC, g.M - mc0);
        if (g.causal == Causal::LowerC && nc0 > mc0 + mb - 1) continue;  // block entirely above the diagonal
        if (!direct_a) pack_a(g, mc0, mb, kc0, kb, s.a.data());
        for (int pj = 0; pj < panels_n; ++pj) {
          const int j0 = nc0 + pj * NR, nc = std::min(NR, g.N - j0);
          const float* bp = s.b.data() + static_cast<std::size_t>(pj) * kb * NR;
          for (int i0 = mc0; i0 < mc0 + mb; i0 += MR) {
            const int mr = std::min(MR, mc0 + mb - i0);
            const int i_last = i0 + mr - 1;
            if (g.causal == Causal::LowerC && j0 > i_last) continue;  // tile entirely above the diagonal
            int k_lo, k_hi;
            k_range(g, i0, i_last, kc0, kb, k_lo, k_hi);
            const float* ap = s.a.data() + static_cast<std::size_t>((i0 - mc0) / MR) * kb * MR;
            const int kn = std::max(0, k_hi - k_lo);
#if CS_KERNELS_VECTOR
            if constexpr (Vector) {
              const float* b_at = bp + static_cast<std::size_t>(k_lo) * NR;
              if (direct_a) {
                const float* rows[MR];  // rows past M repeat the last one; their results are not stored
                for (int r = 0; r < MR; ++r)
                  rows[r] = g.A + static_cast<std::size_t>(i0 + std::min(r, mr - 1)) * g.lda + kc0 + k_lo;
                micro_vector<false>(g, kn, nullptr, rows, b_at, i0, mr, j0, nc, first);
              } else {
                micro_vector<true>(g, kn, ap + static_cast<std::size_t>(k_lo) * MR, nullptr, b_at, i0, mr, j0, nc, first);
              }
              continue;
            }
#endif
            micro_plain(kn, ap + static_cast<std::size_t>(k_lo) * MR, bp + static_cast<std::size_t>(k_lo) * NR, acc);
            store_tile_scalar(g, acc, i0, mr, j0, nc, first);
          }
        }
      }
    }
  }
}

}  // namespace

void sgemm_plain(const GemmArgs& g) { sgemm_impl<false>(g); }

void sgemm_vector(const GemmArgs& g) { sgemm_impl<CS_KERNELS_VECTOR != 0>(g); }

void sgemm(const GemmArgs& g) { sgemm_impl<CS_KERNELS_VECTOR != 0>(g); }

const char* gemm_kernel_name() {
#if !CS_KERNELS_VECTOR
  return "plain";
#elif defined(__wasm_simd128__)
  return "simd128";
#elif defined(__SSE__) || defined(__x86_64__)
  return "sse";
#else
  return "vector";
#endif
}

}  // namespace cs::kernels
