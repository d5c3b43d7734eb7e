// See relaxed.h. Compiled with the other kernels, so with -mrelaxed-simd in the relaxed build.
#include "kernels/relaxed.h"

#include "kernels/vec4.h"

namespace cs::kernels {

bool relaxed_simd() { return CS_KERNELS_RELAXED != 0; }

}  // namespace cs::kernels
