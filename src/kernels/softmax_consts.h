// The constants of the softmaxes' exponential (Cephes' expf), shared by the portable 4-wide
// version (softmax.cpp) and the x86 wide ones (softmax_x86.cpp), which must compute the same bits.
#pragma once
#include <cstdint>

namespace cs::kernels::expc {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kMin = -87.3365447504f;  // below this the result would be a denormal: return 0
constexpr float kMax = 88.0f;            // (the softmaxes only pass arguments <= 0)
constexpr float P0 = 1.9875691500e-4f, P1 = 1.3981999507e-3f, P2 = 8.3334519073e-3f;
constexpr float P3 = 4.1665795894e-2f, P4 = 1.6666665459e-1f, P5 = 5.0000001201e-1f;
// Adding 1.5 * 2^23 rounds a float of magnitude below 2^22 to the nearest integer, which then
// sits in the low bits of the sum: n = bits(t) - bits(kMagic), and 2^n has bits (n + 127) << 23.
constexpr float kMagic = 12582912.0f;
constexpr std::int32_t kMagicBits = 0x4B400000;
constexpr std::int32_t kScaleBias = 127 - kMagicBits;

}  // namespace cs::kernels::expc
