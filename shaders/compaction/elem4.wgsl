// 4-byte elements (u32); also the u32 scan's value.
alias Elem = u32;
fn elem_eq(a: Elem, b: Elem) -> bool { return a == b; }
fn elem_word(x: Elem, k: u32) -> u32 { return x; }
fn elem_from_words(a: vec4<u32>, b: vec4<u32>) -> Elem { return a.x; }
fn elem_zero() -> Elem { return 0u; }
fn elem_add(a: Elem, b: Elem) -> Elem { return a + b; }
// The value as two 32-bit words (low, high) for a count word.
fn elem_words(x: Elem) -> vec2<u32> { return vec2<u32>(x, 0u); }
