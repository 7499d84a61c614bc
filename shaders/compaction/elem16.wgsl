// 16-byte elements.
alias Elem = vec4<u32>;
fn elem_eq(a: Elem, b: Elem) -> bool { return all(a == b); }
fn elem_word(x: Elem, k: u32) -> u32 { return x[min(k, 3u)]; }
fn elem_from_words(a: vec4<u32>, b: vec4<u32>) -> Elem { return a; }
fn elem_zero() -> Elem { return vec4<u32>(0u); }
// Lane-wise: scans run on 4- and 8-byte values only; these let one module
// hold every entry point at every element size.
fn elem_add(a: Elem, b: Elem) -> Elem { return a + b; }
fn elem_words(x: Elem) -> vec2<u32> { return x.xy; }
