// Packed GEMM (see gemm.h), with the 128-bit vector micro-kernel and the scalar fallback here;
// the loops and the packing are in gemm_driver.h, the AVX2 and AVX-512 kernels in gemm_x86.cpp.
// A micro-kernel keeps its 4x8 tile of C in eight 4-wide registers and, per k, loads two
// vectors of B and broadcasts four values of A: 16 vector operations for 64 flops. (A 6x8 tile
// needs more registers than SIMD128 code gets and was measured to run at half the speed.)
#include "kernels/gemm.h"
#include "kernels/cpu_x86.h"
#include "kernels/gemm_driver.h"
#include "kernels/vec4.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>


namespace cs::kernels {

namespace {

constexpr int MR = 4;    // rows of a micro-tile
constexpr int NR = 8;    // columns of a micro-tile
constexpr int MC = 64;   // rows of a packed block of A

using driver::c_at;
inline bool columns_contiguous(const GemmArgs& g, int j0) { return driver::columns_contiguous(g, j0, NR); }
inline void store_tile_scalar(const GemmArgs& g, const float* acc, int i0, int mr, int j0, int nc, bool first) {
  driver::store_tile_scalar(g, acc, NR, i0, mr, j0, nc, first);
}

}  // namespace

std::size_t gemm_scratch_bytes() { return driver::scratch_bytes(); }

namespace {

// The scalar micro-kernel: acc = sum over k of a[k] (MR values) x b[k] (NR values).
void micro_plain(int kn, const float* a, int a_step, const float* b, int b_step, float* acc) {
  float t[MR][NR] = {};
  for (int k = 0; k < kn; ++k) {
    const float* ak = a + static_cast<std::size_t>(k) * a_step;
    const float* bk = b + static_cast<std::size_t>(k) * b_step;
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
void micro_vector(const GemmArgs& g, int kn, const float* a, int a_step, const float* const* rows, const float* b,
                  int b_step, int i0, int mr, int j0, int nc, bool first) {
  v4f c00 = splat(0), c01 = splat(0), c10 = splat(0), c11 = splat(0);
  v4f c20 = splat(0), c21 = splat(0), c30 = splat(0), c31 = splat(0);
  const float *a0 = nullptr, *a1 = nullptr, *a2 = nullptr, *a3 = nullptr;
  if constexpr (!PackedA) a0 = rows[0], a1 = rows[1], a2 = rows[2], a3 = rows[3];
  const bool short_tile = !PackedA && mr <= 2;
  if (short_tile) {
    // One or two rows (an incremental pass's new positions through the unembedding): the same
    // sums for those rows, without the rows that would repeat the last one.
    for (int k = 0; k < kn; ++k) {
      const v4f b0 = load4(b), b1 = load4(b + 4);
      v4f ak = splat(a0[k]);
      c00 = madd(ak, b0, c00);
      c01 = madd(ak, b1, c01);
      if (mr == 2) {
        ak = splat(a1[k]);
        c10 = madd(ak, b0, c10);
        c11 = madd(ak, b1, c11);
      }
      b += b_step;
    }
  }
  for (int k = 0; k < (short_tile ? 0 : kn); ++k) {
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
    if constexpr (PackedA) a += a_step;
    b += b_step;
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

#if CS_KERNELS_VECTOR
// A product of a few rows (an incremental pass's new positions through the unembedding: [1 or 2,
// d_model] x [d_model, 48,262]) is a pass over B, and the tiles read B 8 columns at a time down
// K rows ldb apart: 3.5 GB/s in WebAssembly. Here B streams row by row instead, four rows of B
// per pass over the rows' sums (one [M, N] block of the packed scratch), at the speed memory
// gives (about 20 GB/s here). Each entry gets the same operations in the same order as in a
// tile (per KC block: a sum from 0 of madd(a_k, b_k) in k order, then alpha times it stored, or
// added to C from the second block on), so the result equals the tiled product bit for bit
// (tests/cpp/test_gemm.cpp).
constexpr int kStreamRows = 4;

bool streams(const GemmArgs& g) {
  if (g.op_a != Op::N || g.op_b != Op::N || g.causal != Causal::None || g.c_split != 0) return false;
  if (g.M < 1 || g.M > kStreamRows || g.K < 1 || g.N < 64) return false;
  const std::size_t padded = (static_cast<std::size_t>(g.N) + 3) / 4 * 4;
  return padded * g.M <= static_cast<std::size_t>(driver::KC) * driver::NC;  // the sums fit the scratch
}

// B's values v .. v+3 of row k, zero past N (a last, partial group of columns).
inline v4f load_cols(const float* row, int v, int N) {
  if (v + 4 <= N) return load4(row + v);
  float t[4] = {0, 0, 0, 0};
  for (int c = 0; v + c < N; ++c) t[c] = row[v + c];
  return load4(t);
}

void sgemm_rows(const GemmArgs& g) {
  const int M = g.M, N = g.N;
  const std::size_t padded = (static_cast<std::size_t>(N) + 3) / 4 * 4;
  float* sums = driver::scratch().b.data();  // [M, padded]
  const v4f al = splat(g.alpha), be = splat(g.beta);
  for (int kc0 = 0; kc0 < g.K; kc0 += driver::KC) {
    const int kb = std::min(driver::KC, g.K - kc0);
    std::fill(sums, sums + padded * M, 0.0f);
    int k = 0;
    for (; k + 4 <= kb; k += 4) {
      const float* b0 = g.B + static_cast<std::size_t>(kc0 + k) * g.ldb;
      const float *b1 = b0 + g.ldb, *b2 = b1 + g.ldb, *b3 = b2 + g.ldb;
      v4f a[kStreamRows][4];
      for (int i = 0; i < M; ++i)
        for (int r = 0; r < 4; ++r) a[i][r] = splat(g.A[static_cast<std::size_t>(i) * g.lda + kc0 + k + r]);
      for (int v = 0; v < N; v += 4) {
        const v4f x0 = load_cols(b0, v, N), x1 = load_cols(b1, v, N), x2 = load_cols(b2, v, N), x3 = load_cols(b3, v, N);
        for (int i = 0; i < M; ++i) {
          float* s = sums + i * padded + v;
          v4f c = load4(s);
          c = madd(a[i][0], x0, c);
          c = madd(a[i][1], x1, c);
          c = madd(a[i][2], x2, c);
          c = madd(a[i][3], x3, c);
          store4(s, c);
        }
      }
    }
    for (; k < kb; ++k) {
      const float* b0 = g.B + static_cast<std::size_t>(kc0 + k) * g.ldb;
      for (int i = 0; i < M; ++i) {
        const v4f a0 = splat(g.A[static_cast<std::size_t>(i) * g.lda + kc0 + k]);
        float* s = sums + i * padded;
        for (int v = 0; v < N; v += 4) store4(s + v, madd(a0, load_cols(b0, v, N), load4(s + v)));
      }
    }
    const bool first = kc0 == 0;
    for (int i = 0; i < M; ++i) {
      float* c = g.C + static_cast<std::size_t>(i) * g.ldc;
      const float* s = sums + i * padded;
      int v = 0;
      for (; v + 4 <= N; v += 4) {
        v4f x = al * load4(s + v);
        if (!first) x += load4(c + v);
        else if (g.beta != 0.0f) x += be * load4(c + v);
        store4(c + v, x);
      }
      if (v < N) store_tile_scalar(g, s + v, i, 1, v, N - v, first);  // the last columns, as an edge tile
    }
  }
}
#endif

void tile_plain(const GemmArgs& g, const driver::Tile& t) {
  float acc[MR * NR];
  micro_plain(t.kn, t.a, t.a_step, t.b, t.b_step, acc);
  store_tile_scalar(g, acc, t.i0, t.mr, t.j0, t.nc, t.first);
}

#if CS_KERNELS_VECTOR
void tile_vector(const GemmArgs& g, const driver::Tile& t) {
  if (t.rows)
    micro_vector<false>(g, t.kn, nullptr, 0, t.rows, t.b, t.b_step, t.i0, t.mr, t.j0, t.nc, t.first);
  else
    micro_vector<true>(g, t.kn, t.a, t.a_step, nullptr, t.b, t.b_step, t.i0, t.mr, t.j0, t.nc, t.first);
}
#endif

// The kernels this build has, in the order "auto" prefers them last to first.
struct Entry {
  const char* name;
  GemmFunction fn;
  bool (*runs)();  // does this CPU run it?
};
bool always() { return true; }

const char* portable_name() {
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

std::vector<Entry> entries() {
  std::vector<Entry> v;
  v.push_back({"plain", &sgemm_plain, &always});
#if CS_KERNELS_VECTOR
  v.push_back({portable_name(), &sgemm_vector, &always});
#endif
#if CS_GEMM_X86
  v.push_back({"avx2", &x86::sgemm_avx2, [] { return x86::cpu_has_avx2() && x86::cpu_has_fma(); }});
  v.push_back({"avx512", &x86::sgemm_avx512, &x86::cpu_has_avx512});
#endif
  return v;
}

const Entry* find(const std::string& name) {
  static const std::vector<Entry> all = entries();
  for (const Entry& e : all)
    if (name == e.name && e.runs()) return &e;
  return nullptr;
}

std::atomic<GemmFunction> g_active{&sgemm_vector};
std::atomic<const char*> g_active_name{nullptr};

}  // namespace

void sgemm_plain(const GemmArgs& g) {
  driver::run<MR, NR, MC>(g, [](const GemmArgs& a, const driver::Tile& t) { tile_plain(a, t); }, false);
}

#if CS_KERNELS_VECTOR
void sgemm_vector(const GemmArgs& g) {
  if (streams(g)) return sgemm_rows(g);
  driver::run<MR, NR, MC>(g, [](const GemmArgs& a, const driver::Tile& t) { tile_vector(a, t); }, true);
}
#else
void sgemm_vector(const GemmArgs& g) { sgemm_plain(g); }
#endif

void sgemm(const GemmArgs& g) { g_active.load(std::memory_order_relaxed)(g); }

std::vector<std::string> gemm_kernels() {
  std::vector<std::string> out;
  for (const Entry& e : entries())
    if (e.runs()) out.push_back(e.name);
  return out;
}

GemmFunction gemm_function(const std::string& name) {
  const Entry* e = find(name);
  return e ? e->fn : nullptr;
}

void set_gemm_kernel(const std::string& name) {
  std::string want = name;
  if (want == "portable") want = portable_name();
  if (want == "auto") want = gemm_kernels().back();
  const Entry* e = find(want);
  if (!e) {
    std::string list;
    for (const std::string& k : gemm_kernels()) list += (list.empty() ? "" : ", ") + k;
    throw std::invalid_argument("unknown GEMM kernel \"" + name + "\": this build on this CPU has " + list +
                                " (or \"auto\" for the fastest, \"portable\" for the page's arithmetic)");
  }
  g_active_name.store(e->name);
  g_active.store(e->fn);
}

const char* gemm_kernel_name() {
  const char* n = g_active_name.load();
  return n ? n : portable_name();
}

}  // namespace cs::kernels
