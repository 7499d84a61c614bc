//! The suite's cases through the counted entry points (`select_counted`,
//! `partition_counted`, `exclusive_scan_counted`): the length in a lens word,
//! stale content between it and the capacity, a guard region past the
//! capacity, and the count read back from its word.

use rayon::prelude::*;

use crate::compaction::{
    Algorithm, Backend, CompactCall, Element, Error, Lens, Operation, Report, ScanElement, check_element,
};
use crate::verify::cases::{CompactCase, check_kept, check_rejected_half, element, keep_rule, near_sentinel};
use crate::verify::{Config, Harness, POISON, Pattern, Rule, THRESHOLD};

/// The length a counted case stores in its length word, against the capacity.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountedLen {
    Zero,
    One,
    CapacityLessOne,
    Capacity,
    /// Below the capacity, with stale content (other data, other flags) past it.
    Below,
    /// u64::MAX: the call clamps it to the capacity.
    Above,
}

impl CountedLen {
    pub const ALL: [CountedLen; 6] = [
        CountedLen::Zero,
        CountedLen::One,
        CountedLen::CapacityLessOne,
        CountedLen::Capacity,
        CountedLen::Below,
        CountedLen::Above,
    ];

    /// The word's value for a capacity. Every length leaves stale content
    /// between it and the capacity; `Below` picks one in the upper half, and
    /// near the capacity for large ones, so that a case above 2^31 keeps n above 2^31 too.
    pub fn word(self, cap: u64, rng: &mut fastrand::Rng) -> u64 {
        match self {
            CountedLen::Zero => 0,
            CountedLen::One => 1,
            CountedLen::CapacityLessOne => cap.saturating_sub(1),
            CountedLen::Capacity => cap,
            CountedLen::Below if cap > Config::FULL_MATRIX_UP_TO => cap - 1 - rng.u64(..cap / 1024),
            CountedLen::Below => {
                let (lo, hi) = (cap / 2, cap.saturating_sub(1));
                if lo < hi { rng.u64(lo..hi) } else { lo }
            }
            CountedLen::Above => u64::MAX,
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            CountedLen::Zero => "0",
            CountedLen::One => "1",
            CountedLen::CapacityLessOne => "cap-1",
            CountedLen::Capacity => "cap",
            CountedLen::Below => "below",
            CountedLen::Above => "above",
        }
    }
}

/// Elements past a counted case's capacity: a guard region that must stay as it was.
const GUARD: usize = 1024;
/// The lens words around a counted case's two, which it must leave alone.
const LENS_FILL: [u64; 2] = [0x1111_1111_1111_1111, 0x3333_3333_3333_3333];

/// `len` values, each from `f(index, rng)`, made in parallel chunks with a
/// seed of their own: a case above 2^31 elements takes seconds, not minutes.
fn generate<T: Send>(len: usize, seed: u64, f: impl Fn(usize, &mut fastrand::Rng) -> T + Sync) -> Vec<T> {
    const CHUNK: usize = 1 << 16;
    let f = &f;
    (0..len.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|c| {
            let mut rng = fastrand::Rng::with_seed(seed ^ (c as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            (c * CHUNK..len.min((c + 1) * CHUNK)).map(move |i| f(i, &mut rng))
        })
        .collect()
}

fn poison<T: Element>(len: usize) -> Vec<T> {
    let p: T = bytemuck::pod_read_unaligned(&[POISON; 32][..std::mem::size_of::<T>()]);
    vec![p; len]
}

/// The guard region (past `cap`) of a downloaded output, if the backend keeps one, must still be poison.
fn check_guard<T: Element>(out: &[T], cap: usize) -> Result<(), String> {
    if out.len() < cap {
        return Err(format!("the output came back with {} elements, below its capacity {cap}", out.len()));
    }
    match bytemuck::cast_slice::<T, u8>(&out[cap..]).iter().position(|&b| b != POISON) {
        Some(i) => Err(format!("wrote past the capacity: guard byte {i} changed")),
        None => Ok(()),
    }
}

/// A counted call's report must point at the count word (2) rather than read it.
fn check_counted_report(report: &impl Report) -> Result<(), String> {
    match report.count() {
        Err(Error::CountInLens { word: 2 }) => Ok(()),
        other => Err(format!("Report::count of a counted call gave {other:?}, not the CountInLens error for word 2")),
    }
}

/// The lens words after a counted call: the count in word 2, the rest as they were.
fn check_words<B: Backend>(backend: &B, words: &B::Buffer<u64>, len_word: u64, count: u64) -> Result<(), String> {
    let got = backend.download(words).map_err(|e| e.to_string())?;
    let want = [LENS_FILL[0], len_word, count, LENS_FILL[1]];
    if got[2] != count {
        return Err(format!("count word {}, want {count}", got[2]));
    }
    if got != want {
        return Err(format!("lens words other than the count changed: {got:x?}, want {want:x?}"));
    }
    Ok(())
}

/// A counted select or partition: capacity `cap`, length word `len_word`
/// (n = min(len_word, cap)). The buffers hold stale content between n and
/// the capacity (other elements, other flags, as a longer earlier call would
/// leave) and a guard region past it (survivors all, so a read past the
/// capacity shows); outputs are poisoned. Only `output[..n]` is checked,
/// and the guard region, which must be untouched.
pub fn counted_compact_case<B: Harness, T: Element>(
    backend: &B,
    case: CompactCase,
    cap: u64,
    len_word: u64,
) -> Result<(), String> {
    let CompactCase { algorithm: alg, operation: op, rule, pattern, seed, rejected } = case;
    check_element::<T>().map_err(|e| e.to_string())?;
    let cap_elems = usize::try_from(cap).map_err(|_| format!("capacity {cap} does not fit in host memory"))?;
    let n = len_word.min(cap) as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let mut keep = match pattern {
        Pattern::Random(d) => generate(n, rng.u64(..), |_, r| r.f64() < d),
        p => p.flags(n, &mut rng),
    };
    keep.extend(generate(cap_elems - n, rng.u64(..), |_, r| r.bool()));
    keep.resize(cap_elems + GUARD, true);
    let sentinel: T = element(u32::MAX, &mut rng);
    let input: Vec<T> = generate(keep.len(), rng.u64(..), |i, r| match (keep[i], rule) {
        (true, Rule::Sentinel) if r.bool() => {
            let first = r.u32(..THRESHOLD);
            near_sentinel(sentinel, first, r)
        }
        (true, _) => {
            let first = r.u32(..THRESHOLD);
            element(first, r)
        }
        (false, Rule::Sentinel) => sentinel,
        (false, _) => {
            let first = r.u32(THRESHOLD..);
            element(first, r)
        }
    });
    let flags: Vec<u8> = generate(keep.len(), rng.u64(..), |i, r| if keep[i] { 1 + r.u8(..254) } else { 0 });
    let pick = |want: bool| -> Vec<T> {
        input[..n].par_iter().zip(&keep[..n]).filter(|(_, k)| **k == want).map(|(x, _)| *x).collect()
    };
    let kept = pick(true);

    let err = |e: Error| e.to_string();
    let d_input = backend.upload_guarded(&input, cap).map_err(err)?;
    let d_flags = backend.upload_guarded(&flags, cap).map_err(err)?;
    let mut d_out = backend.upload_guarded(&poison::<T>(cap_elems + GUARD), cap).map_err(err)?;
    let mut words = backend.upload(&[LENS_FILL[0], len_word, u64::MAX, LENS_FILL[1]]).map_err(err)?;
    let pred = backend.word_below::<T>(THRESHOLD as u64);
    let keep = keep_rule::<B, T>(rule, &d_flags, sentinel, &*pred);
    let lens = Lens { words: &mut words, input: 1, output: 2 };
    let split = op == Operation::Partition;
    let call =
        CompactCall { algorithm: alg, split, rejected, input: &d_input, keep, output: &mut d_out, lens: Some(lens) };
    let report = backend.compact(call).map_err(err)?;
    check_counted_report(&report)?;
    check_words(backend, &words, len_word, kept.len() as u64)?;
    let out = backend.download_guarded(&d_out).map_err(err)?;
    check_guard(&out, cap_elems)?;
    check_kept(alg, &out[..kept.len()], &kept)?;
    if split {
        check_rejected_half(&out[kept.len()..n], pick(false), rejected)?;
    }
    Ok(())
}

/// A counted exclusive scan: capacity `cap`, length word `len_word`, stale
/// values past n, a guard region past the capacity, a poisoned output.
pub fn counted_scan_case<B: Harness, S: ScanElement>(
    backend: &B,
    alg: Algorithm,
    cap: u64,
    len_word: u64,
    seed: u64,
) -> Result<(), String> {
    let cap_elems = usize::try_from(cap).map_err(|_| format!("capacity {cap} does not fit in host memory"))?;
    let n = len_word.min(cap) as usize;
    let input: Vec<S> = generate(cap_elems + GUARD, seed, |_, r| S::from_u64(r.u64(1..)));
    let mut want = Vec::with_capacity(n);
    let mut sum = S::ZERO;
    for &x in &input[..n] {
        want.push(sum);
        sum = sum.add(x);
    }
    let err = |e: Error| e.to_string();
    let d_in = backend.upload_guarded(&input, cap).map_err(err)?;
    let mut d_out = backend.upload_guarded(&poison::<S>(cap_elems + GUARD), cap).map_err(err)?;
    let mut words = backend.upload(&[LENS_FILL[0], len_word, u64::MAX, LENS_FILL[1]]).map_err(err)?;
    let lens = Lens { words: &mut words, input: 1, output: 2 };
    let report = backend.exclusive_scan_counted(alg, &d_in, &mut d_out, lens).map_err(err)?;
    check_counted_report(&report)?;
    check_words(backend, &words, len_word, sum.to_u64())?;
    let out = backend.download_guarded(&d_out).map_err(err)?;
    check_guard(&out, cap_elems)?;
    if out[..n] != want[..] {
        let i = out.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!("scan differs at {i}: got {:?}, want {:?}", out.get(i), want.get(i)));
    }
    Ok(())
}
