// The solver's per-body sums with native 64-bit atomics (SHADER_INT64 and
// SHADER_INT64_ATOMIC_ALL_OPS: `Device::int64_atomics`): one atomic add per
// sum instead of sums32.wgsl's two. The same bits in the same buffer layout.
// Per body, 9 u64 sums (linear[3], angular[3], push[3]).
@group(0) @binding(11) var<storage, read_write> acc: array<atomic<u64>>;

// Adds the i64 `v` (lo, hi) to field f (0..9) of body i's sums, in 2^-24
// fixed point (integer addition is associative: any order gives the same sums).
fn add_sum(i: u32, f: u32, v: vec2<u32>) {
    atomicAdd(&acc[9u * i + f], u64(v.x) | (u64(v.y) << 32u));
}

fn load_sum(i: u32, f: u32) -> vec2<u32> {
    let s = atomicLoad(&acc[9u * i + f]);
    return vec2<u32>(u32(s & 0xfffffffflu), u32(s >> 32u));
}
