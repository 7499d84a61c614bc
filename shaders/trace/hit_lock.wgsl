// wavefront.wgsl's hit merge where the device lacks 64-bit atomics
// (REAP_WGPU_INT64=0 forces it; hit64.wgsl is the exact one): a lock in
// the key's high word. A t's bits stay below KEY_LOCKED, so the invocation
// whose compare-exchange swaps the high word to KEY_LOCKED owns the key,
// compares (t, triangle) in full and writes the smaller key back, high word
// last, within the same iteration: lanes of one subgroup never wait on each
// other's later iterations. Readers of the high word see KEY_LOCKED as no
// bound, never a wrong one. An update that finds the lock held HIT_SPIN
// times gives up (lavapipe's loop limit): under heavy contention a hit can be
// lost, which is why devices with 64-bit atomics never use this file.

// The hit key's high word while one invocation updates the key (never a t: t's bits are below 0x7f800000).
const KEY_LOCKED: u32 = 0xfffffffeu;
// Attempts at the key's lock before an update gives up (wgpu.rs `TraceTuning::hit_spin`).
override HIT_SPIN: u32 = 4096u;

fn hit_merge(path: u32, best: vec2<u32>) {
    let lo_at = key_at(path);
    let hi_at = lo_at + 1u;
    for (var i = 0u; i < HIT_SPIN; i++) {
        let cur = atomicLoad(&pw[hi_at]);
        if cur == KEY_LOCKED { continue; }
        if best.y > cur { return; }
        let r = atomicCompareExchangeWeak(&pw[hi_at], cur, KEY_LOCKED);
        if r.exchanged {
            let lo = atomicLoad(&pw[lo_at]);
            if key_less(best, vec2<u32>(lo, cur)) {
                atomicStore(&pw[lo_at], best.x);
                atomicStore(&pw[hi_at], best.y);
            } else {
                atomicStore(&pw[hi_at], cur);
            }
            return;
        }
    }
}
