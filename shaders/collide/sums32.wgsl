// The solver's per-body sums with two u32 atomics per u64 (any adapter): the
// twin of sums64.wgsl, picked by the engine (src/collide/wgpu `collide_prelude`).
// Per body, 9 u64 sums (linear[3], angular[3], push[3]) as 18 u32.
@group(0) @binding(11) var<storage, read_write> acc: array<atomic<u32>>;

// Adds the i64 `v` to field f (0..9) of body i's sums, in 2^-24 fixed point
// (two's complement: integer addition is associative, so the order in which
// the atomics land does not change the sums; the carry makes the emulated
// 64-bit add exact).
fn add_sum(i: u32, f: u32, v: vec2<u32>) {
    let at = 2u * (9u * i + f);
    let old = atomicAdd(&acc[at], v.x);
    atomicAdd(&acc[at + 1u], v.y + select(0u, 1u, old + v.x < old));
}

fn load_sum(i: u32, f: u32) -> vec2<u32> {
    let at = 2u * (9u * i + f);
    return vec2<u32>(atomicLoad(&acc[at]), atomicLoad(&acc[at + 1u]));
}
