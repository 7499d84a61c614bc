// 8-byte elements (u64 as low, high words); also the u64 scan's value.
alias Elem = vec2<u32>;
fn elem_eq(a: Elem, b: Elem) -> bool { return all(a == b); }
fn elem_word(x: Elem, k: u32) -> u32 { return x[min(k, 1u)]; }
fn elem_from_words(a: vec4<u32>, b: vec4<u32>) -> Elem { return a.xy; }
fn elem_zero() -> Elem { return vec2<u32>(0u); }
// Wrapping 64-bit add with the carry across the words.
fn elem_add(a: Elem, b: Elem) -> Elem {
    let lo = a.x + b.x;
    return vec2<u32>(lo, a.y + b.y + select(0u, 1u, lo < a.x));
}
fn elem_words(x: Elem) -> vec2<u32> { return x; }
