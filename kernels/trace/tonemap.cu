// The image as the viewer shows it: each pixel's accumulated sum (RGB
// radiance, A = samples) to its mean, clamped to [0, 1] (no tone curve, so a
// furnace stays exactly white), sRGB-encoded and rounded to 8 bits, alpha
// opaque. Running it on the device makes the viewer's readback 4 bytes a
// pixel instead of 16. Compiled with IEEE arithmetic (no FMA contraction,
// exact division) so it rounds as the CPU does.
//
// Keep in sync with src/trace/tonemap.rs (`trace_tonemap`, `srgb8`): that is
// the one definition of the curve, which the CPU engine, the viewer and
// `reap render`'s PNG use.

typedef unsigned int u32;

__device__ __forceinline__ unsigned char srgb8(float linear) {
    // fmaxf before fminf: a NaN becomes 0, as Rust's `as u8` makes it.
    float c = fminf(fmaxf(linear, 0.0f), 1.0f);
    float s = c <= 0.0031308f ? 12.92f * c : 1.055f * powf(c, 1.0f / 2.4f) - 0.055f;
    return (unsigned char)(s * 255.0f + 0.5f);
}

extern "C" __global__ void trace_tonemap(const float4* sum, uchar4* rgba, u32 pixels) {
    u32 i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= pixels) return;
    float4 s = sum[i];
    // A reciprocal then products, as the CPU twin computes the mean.
    float w = s.w > 0.0f ? 1.0f / s.w : 0.0f;
    rgba[i] = make_uchar4(srgb8(s.x * w), srgb8(s.y * w), srgb8(s.z * w), 255);
}
