// 32-byte elements (a ray record): two 16-byte halves.
struct Elem32 {
    lo: vec4<u32>,
    hi: vec4<u32>,
}
alias Elem = Elem32;
fn elem_eq(a: Elem, b: Elem) -> bool { return all(a.lo == b.lo) && all(a.hi == b.hi); }
fn elem_word(x: Elem, k: u32) -> u32 {
    if (k < 4u) {
        return x.lo[k];
    }
    return x.hi[min(k - 4u, 3u)];
}
fn elem_from_words(a: vec4<u32>, b: vec4<u32>) -> Elem { return Elem32(a, b); }
fn elem_zero() -> Elem { return Elem32(vec4<u32>(0u), vec4<u32>(0u)); }
// Lane-wise: scans run on 4- and 8-byte values only; these let one module
// hold every entry point at every element size.
fn elem_add(a: Elem, b: Elem) -> Elem { return Elem32(a.lo + b.lo, a.hi + b.hi); }
fn elem_words(x: Elem) -> vec2<u32> { return x.lo.xy; }
