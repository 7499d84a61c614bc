// wavefront.wgsl's hit merge where the device has 64-bit atomics
// (`Device::int64_atomics`; wgpu.rs puts this file before the shader):
// wavefront.cu's atomicMin on the path's u64 key, exact whatever order the
// items land in. hit_lock.wgsl is the fallback without them.
//
// `pw64` is the path words' buffer bound a second time as u64s: entry
// `path` is the pair of words at common.wgsl `key_at(path)` (lo first,
// little-endian), so u64 order is (t, triangle) order.
@group(0) @binding(12) var<storage, read_write> pw64: array<atomic<u64>>;

fn hit_merge(path: u32, best: vec2<u32>) {
    atomicMin(&pw64[path], (u64(best.y) << 32u) | u64(best.x));
}
