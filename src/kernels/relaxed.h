// Whether this build's kernels are the relaxed-SIMD ones (the WebAssembly module
// circuitscope-relaxed, src/kernels/vec4.h's madd): their multiply-adds may then be fused, so a
// product from the kernels and the same sums from Eigen or a scalar loop can differ in the last
// bits, where every other build gives identical bits. For tests that compare two such paths.
#pragma once

namespace cs::kernels {

bool relaxed_simd();

}  // namespace cs::kernels
