// Texture lookups (CPU twin: src/trace/texture.rs, same names, same
// arithmetic in the same order). Bilinear on linear texels with repeat
// addressing; texel (i, j)'s centre is at (i + 0.5, j + 0.5) in texel units,
// and v is flipped: OBJ's v runs up from the image's bottom row, image rows
// run down from the top.
#pragma once

#include "common.cuh"

// Repeat addressing: i modulo n in [0, n), negative i included.
__device__ __forceinline__ int wrap_texel(int i, int n) { return ((i % n) + n) % n; }

// The bilinear mean of the four texels around (u, v), repeating the image in
// both directions.
__device__ __forceinline__ float3 sample_bilinear(const float4* texels, const Texture& t, float u, float v) {
    int w = (int)t.width, h = (int)t.height;
    // Only the fraction of a tile matters; taking it first keeps far-off
    // coordinates (and the float-to-int conversion) in range.
    float fv = 1.0f - v;
    float x = (u - floorf(u)) * (float)w - 0.5f;
    float y = (fv - floorf(fv)) * (float)h - 0.5f;
    float x0 = floorf(x), y0 = floorf(y);
    float ax = x - x0, ay = y - y0;
    int xa = wrap_texel((int)x0, w), xb = wrap_texel((int)x0 + 1, w);
    int ya = wrap_texel((int)y0, h), yb = wrap_texel((int)y0 + 1, h);
    const float4* row = texels + t.offset;
    float3 row_a = f3(row[ya * w + xa]) * (1.0f - ax) + f3(row[ya * w + xb]) * ax;
    float3 row_b = f3(row[yb * w + xa]) * (1.0f - ax) + f3(row[yb * w + xb]) * ax;
    return row_a * (1.0f - ay) + row_b * ay;
}

// The diffuse albedo at barycentrics (u, v) of triangle k (BVH order): the
// material's texture through the interpolated UVs, weights (1 - u - v, u, v)
// on vertices 0, 1, 2 as for the normals; or its albedo when it has none.
__device__ __forceinline__ float3 albedo_at(const Scene& s, const Material& m, u32 k, float u, float v) {
    if (m.texture == NO_TEXTURE) return f3(m.albedo);
    const float* uv = s.uvs + 6 * (u64)k;
    float tu = uv[0] * (1.0f - u - v) + uv[2] * u + uv[4] * v;
    float tv = uv[1] * (1.0f - u - v) + uv[3] * u + uv[5] * v;
    return sample_bilinear(s.texels, s.textures[m.texture], tu, tv);
}
