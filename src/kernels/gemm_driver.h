// The packed GEMM's loops, packing and tile stores, shared by every micro-kernel (the 128-bit one
// in gemm.cpp, the AVX2 and AVX-512 ones in gemm_x86.cpp). Internal to src/kernels/.
//
// The Goto/BLIS scheme, kept small (gemm.cpp says more):
//   for each block of KC values of k:   pack op(B)[k-block, all N] into panels of NR columns
//     for each block of MC rows:        pack op(A)[rows, k-block] into panels of MR rows
//       for each NR-column panel, for each MR-row panel: the MR x NR micro-kernel
// Every kernel shares KC, and each entry of C is summed over k in the same order within a block,
// so kernels that round the same way (the AVX2 and AVX-512 ones both use fused multiply-adds)
// give the same bits whatever their tile sizes.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <vector>

#include "kernels/gemm.h"

namespace cs::kernels::driver {

constexpr int KC = 256;     // depth of a packed block
constexpr int NC = 2048;    // columns of a packed block of B (a multiple of every NR)
constexpr int MC_MAX = 96;  // rows of a packed block of A, for the kernel with the tallest block

// Packed panels, per thread, of a fixed size (one KC x NC block of B, one MC_MAX x KC block of A),
// allocated at the first product: however wide a product is (a vocabulary of a million
// columns), the memory kept between calls does not grow with it.
struct Scratch {
  std::vector<float> a, b;
};
inline Scratch& scratch() {
  static thread_local Scratch s;
  if (s.b.empty()) {
    s.a.resize(static_cast<std::size_t>(MC_MAX) * KC);
    s.b.resize(static_cast<std::size_t>(KC) * NC);
  }
  return s;
}
inline std::size_t scratch_bytes() {
  return sizeof(float) * (static_cast<std::size_t>(MC_MAX) * KC + static_cast<std::size_t>(KC) * NC);
}

// op(B)[kc0 .. kc0+kb, nc0 .. nc0+nb] -> panels of nr columns: panel p holds, for each k, the nr
// values of columns nc0+p*nr .. nc0+p*nr+nr-1 (zero past N). The panel width is a compile-time
// constant so a full panel's row is copied with a fixed-size copy (a few vector moves) rather
// than a call to memcpy per k: in WebAssembly that call cost more than the products of a
// narrow-M product such as dW_O = z^T dao (M = 32, K = 4,096).
template <int nr>
void pack_b(const GemmArgs& g, int kc0, int kb, int nc0, int nb, float* out) {
  const int panels = (nb + nr - 1) / nr;
  for (int p = 0; p < panels; ++p) {
    const int j0 = nc0 + p * nr, nc = std::min(nr, g.N - j0);
    float* dst = out + static_cast<std::size_t>(p) * kb * nr;
    if (g.op_b == Op::N && nc == nr) {
      for (int k = 0; k < kb; ++k)
        std::memcpy(dst + static_cast<std::size_t>(k) * nr, g.B + static_cast<std::size_t>(kc0 + k) * g.ldb + j0, sizeof(float) * nr);
    } else if (g.op_b == Op::N) {
      for (int k = 0; k < kb; ++k) {
        const float* src = g.B + static_cast<std::size_t>(kc0 + k) * g.ldb + j0;
        float* d = dst + static_cast<std::size_t>(k) * nr;
        for (int c = 0; c < nr; ++c) d[c] = c < nc ? src[c] : 0.0f;
      }
    } else {  // B is stored [N, K]: op(B)[k][j] = B[j][k]
      for (int c = 0; c < nr; ++c) {
        if (c < nc) {
          const float* src = g.B + static_cast<std::size_t>(j0 + c) * g.ldb + kc0;
          for (int k = 0; k < kb; ++k) dst[static_cast<std::size_t>(k) * nr + c] = src[k];
        } else {
          for (int k = 0; k < kb; ++k) dst[static_cast<std::size_t>(k) * nr + c] = 0.0f;
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

// op(A)[mc0 .. mc0+mb, kc0 .. kc0+kb] -> panels of mr rows: panel p holds, for each k, the mr
// values of rows mc0+p*mr .. (zero past M). Only the k-range a causal mode reads is packed. The
// panel height is a compile-time constant, as pack_b's width.
template <int mr_full>
void pack_a(const GemmArgs& g, int mc0, int mb, int kc0, int kb, float* out) {
  const int panels = (mb + mr_full - 1) / mr_full;
  for (int p = 0; p < panels; ++p) {
    const int i0 = mc0 + p * mr_full, mr = std::min(mr_full, mc0 + mb - i0);
    int k_lo, k_hi;
    k_range(g, i0, i0 + mr - 1, kc0, kb, k_lo, k_hi);
    float* dst = out + static_cast<std::size_t>(p) * kb * mr_full;
    if (g.op_a == Op::N) {
      for (int r = 0; r < mr_full; ++r) {
        if (r < mr) {
          const float* src = g.A + static_cast<std::size_t>(i0 + r) * g.lda + kc0;
          for (int k = k_lo; k < k_hi; ++k) dst[static_cast<std::size_t>(k) * mr_full + r] = src[k];
        } else {
          for (int k = k_lo; k < k_hi; ++k) dst[static_cast<std::size_t>(k) * mr_full + r] = 0.0f;
        }
      }
    } else if (mr == mr_full) {  // A is stored [K, M]: op(A)[i][k] = A[k][i]
      for (int k = k_lo; k < k_hi; ++k)
        std::memcpy(dst + static_cast<std::size_t>(k) * mr_full, g.A + static_cast<std::size_t>(kc0 + k) * g.lda + i0, sizeof(float) * mr_full);
    } else {
      for (int k = k_lo; k < k_hi; ++k) {
        const float* src = g.A + static_cast<std::size_t>(kc0 + k) * g.lda + i0;
        float* d = dst + static_cast<std::size_t>(k) * mr_full;
        for (int r = 0; r < mr_full; ++r) d[r] = r < mr ? src[r] : 0.0f;
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

// True when the nr columns j0.. of C are contiguous in memory (so a tile row is one store).
inline bool columns_contiguous(const GemmArgs& g, int j0, int nr) {
  if (g.c_split <= 0) return true;
  return j0 / g.c_split == (j0 + nr - 1) / g.c_split;
}

// Writes a finished tile `acc` (mr x nc of a row-major tile nr wide) into C: C = alpha*acc +
// beta*C on the first k-block (C not read when beta == 0), C += alpha*acc on later ones. The
// vector kernels' full-tile stores do the same operations in the same order.
inline void store_tile_scalar(const GemmArgs& g, const float* acc, int nr, int i0, int mr, int j0, int nc, bool first) {
  for (int r = 0; r < mr; ++r)
    for (int c = 0; c < nc; ++c) {
      float* p = c_at(g, i0 + r, j0 + c);
      const float v = g.alpha * acc[r * nr + c];
      if (!first) *p += v;
      else if (g.beta == 0.0f) *p = v;
      else *p = v + g.beta * *p;
    }
}

// One micro-tile's work, as the loops hand it to a micro-kernel: kn values of k; A either as MR
// consecutive values per k, a_step apart (`a`: the packed panel, a_step = MR, or op(A) = A^T read
// in place, a_step = lda), or, when `rows` is set, straight from the MR rows of op(A) = A (each
// pointer already at the first k; rows past M repeat the last one); `b` the NR values of op(B)
// for the first k, the next k's b_step further on (the packed panel, b_step = NR, or op(B) = B
// read in place, b_step = ldb). The kernel writes rows i0 .. i0+mr-1 and columns j0 .. j0+nc-1
// of C.
struct Tile {
  int kn;
  const float* a;
  const float* const* rows;
  const float* b;
  int a_step, b_step;
  int i0, mr, j0, nc;
  bool first;
};

// Packing costs a pass over the packed matrix, worth it when the panels are read by many
// micro-tiles. A product with a short side is the opposite: dW_O = z^T dao (M = 32, K = 4,096)
// reads each packed value of B only M / MR times, and packing it cost about as much as the
// products (measured in WebAssembly). Such operands are read in place instead, where every tile
// is whole (no reads past the matrix): op(A) = A^T (its MR values per k are consecutive, as in a
// packed panel) when M is a multiple of MR, and op(B) = B when M is at most kInPlaceB rows, its
// full NR-column panels read in place and only a last, narrower one packed (an unembedding of
// one position, [1, d_model] x [d_model, 48,262], packed all of W_U before: most of its time).
constexpr int kInPlaceB = 64;

// C = alpha op(A) op(B) + beta C with the MR x NR kernel `micro` (called as micro(g, tile); a
// lambda or function object, so that it is inlined into these loops: through a function pointer,
// each tile's arguments went through memory, which cost a fifth of a K = 32 product's time in
// WebAssembly). direct_a: the kernel reads an untransposed A in place (no packing of A).
template <int MR, int NR, int MC, class Micro>
void run(const GemmArgs& g, Micro micro, bool direct_a) {
  static_assert(MC % MR == 0 && MC <= MC_MAX && NC % NR == 0, "blocking");
  if (g.M <= 0 || g.N <= 0) return;
  if (g.K <= 0) {  // C = beta * C
    for (int i = 0; i < g.M; ++i)
      for (int j = 0; j < g.N; ++j) {
        float* p = c_at(g, i, j);
        *p = g.beta == 0.0f ? 0.0f : g.beta * *p;
      }
    return;
  }
  direct_a = direct_a && g.op_a == Op::N;
  const bool in_place_at = g.op_a == Op::T && g.M % MR == 0;
  const bool in_place_b = g.op_b == Op::N && g.M <= kInPlaceB;
  const int n_full = g.N - g.N % NR;  // columns in full panels (read in place when in_place_b)
  Scratch& s = scratch();
  for (int nc0 = 0; nc0 < g.N; nc0 += NC) {
    const int nb = std::min(NC, g.N - nc0);
    const int panels_n = (nb + NR - 1) / NR;
    for (int kc0 = 0; kc0 < g.K; kc0 += KC) {
      const int kb = std::min(KC, g.K - kc0);
      const bool first = kc0 == 0;
      if (!in_place_b) pack_b<NR>(g, kc0, kb, nc0, nb, s.b.data());
      else if (nc0 + nb > n_full) pack_b<NR>(g, kc0, kb, n_full, g.N - n_full, s.b.data());  // the last panel only
      for (int mc0 = 0; mc0 < g.M; mc0 += MC) {
        const int mb = std::min(MC, g.M - mc0);
        if (g.causal == Causal::LowerC && nc0 > mc0 + mb - 1) continue;  // block entirely above the diagonal
        if (!direct_a && !in_place_at) pack_a<MR>(g, mc0, mb, kc0, kb, s.a.data());
        for (int pj = 0; pj < panels_n; ++pj) {
          const int j0 = nc0 + pj * NR, nc = std::min(NR, g.N - j0);
          const bool b_here = in_place_b && j0 < n_full;  // this panel read in place
          const float* bp = s.b.data() + (in_place_b ? 0 : static_cast<std::size_t>(pj) * kb * NR);
          for (int i0 = mc0; i0 < mc0 + mb; i0 += MR) {
            const int mr = std::min(MR, mc0 + mb - i0);
            const int i_last = i0 + mr - 1;
            if (g.causal == Causal::LowerC && j0 > i_last) continue;  // tile entirely above the diagonal
            int k_lo, k_hi;
            k_range(g, i0, i_last, kc0, kb, k_lo, k_hi);
            Tile t;
            t.kn = std::max(0, k_hi - k_lo);
            if (b_here) t.b = g.B + static_cast<std::size_t>(kc0 + k_lo) * g.ldb + j0, t.b_step = g.ldb;
            else t.b = bp + static_cast<std::size_t>(k_lo) * NR, t.b_step = NR;
            t.i0 = i0, t.mr = mr, t.j0 = j0, t.nc = nc, t.first = first;
            const float* rows[MR];
            if (direct_a) {
              for (int r = 0; r < MR; ++r)
                rows[r] = g.A + static_cast<std::size_t>(i0 + std::min(r, mr - 1)) * g.lda + kc0 + k_lo;
              t.a = nullptr, t.rows = rows, t.a_step = 0;
            } else if (in_place_at) {
              t.a = g.A + static_cast<std::size_t>(kc0 + k_lo) * g.lda + i0;
              t.rows = nullptr, t.a_step = g.lda;
            } else {
              t.a = s.a.data() + static_cast<std::size_t>((i0 - mc0) / MR) * kb * MR + static_cast<std::size_t>(k_lo) * MR;
              t.rows = nullptr, t.a_step = MR;
            }
            micro(g, t);
          }
        }
      }
    }
  }
}

}  // namespace cs::kernels::driver

// The x86-64 kernels (gemm_x86.cpp), compiled with per-function target attributes so the rest of
// the build stays SSE4.2; cpu_x86.h says whether this CPU (and its OS) runs them.
#if !defined(CS_GEMM_PLAIN) && !defined(__EMSCRIPTEN__) && defined(__x86_64__) && defined(__GNUC__)
#define CS_GEMM_X86 1
namespace cs::kernels::x86 {
void sgemm_avx2(const GemmArgs& g);
void sgemm_avx512(const GemmArgs& g);
}  // namespace cs::kernels::x86
#else
#define CS_GEMM_X86 0
#endif
