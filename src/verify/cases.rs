//! The suite's cases through the host-length entry points: select,
//! partition, scan, sort and remove of n elements, against the reference.

use crate::compaction::{
    Algorithm, Backend, Element, Keep, Operation, Rejected, Report, ScanElement, SortKey, check_element,
};
use crate::verify::{Harness, POISON, Pattern, Rule, THRESHOLD, first_word};

pub(crate) fn element<T: Element>(first: u32, rng: &mut fastrand::Rng) -> T {
    let words = std::mem::size_of::<T>() / 4;
    let mut w = [0u32; 8];
    w[0] = first;
    for x in w.iter_mut().take(words).skip(1) {
        *x = rng.u32(..);
    }
    bytemuck::pod_read_unaligned(&bytemuck::cast_slice::<u32, u8>(&w)[..std::mem::size_of::<T>()])
}

/// A kept element under the sentinel rule: the sentinel with one word
/// changed (word 0 to `first`), so a kernel that compares only part of an
/// element, one half of a 32-byte item say, drops it.
pub(crate) fn near_sentinel<T: Element>(sentinel: T, first: u32, rng: &mut fastrand::Rng) -> T {
    let mut e = sentinel;
    let words = bytemuck::bytes_of_mut(&mut e);
    let w = 4 * rng.usize(..words.len() / 4);
    let old = u32::from_le_bytes(words[w..w + 4].try_into().expect("a 4-byte word"));
    // `first` is below THRESHOLD, the sentinel's word 0 is all ones; a nonzero xor changes any other word.
    let new = if w == 0 { first } else { old ^ (1 + rng.u32(..u32::MAX)) };
    words[w..w + 4].copy_from_slice(&new.to_le_bytes());
    e
}

fn poisoned<B: Backend, T: Element>(backend: &B, n: usize) -> Result<B::Buffer<T>, String> {
    let bytes = vec![POISON; n * std::mem::size_of::<T>()];
    let host: Vec<T> = bytes.chunks_exact(std::mem::size_of::<T>()).map(bytemuck::pod_read_unaligned).collect();
    backend.upload(&host).map_err(|e| e.to_string())
}

pub(crate) fn bytes_eq<T: Element>(a: &[T], b: &[T]) -> bool {
    bytemuck::cast_slice::<T, u8>(a) == bytemuck::cast_slice::<T, u8>(b)
}

/// The elements in byte order, for multiset comparisons. Sorts the elements
/// themselves (no allocation per element): the GPU suite compares 2^28 of them.
fn sorted_bytes<T: Element>(v: &[T]) -> Vec<T> {
    use rayon::prelude::*;
    let mut s = v.to_vec();
    s.par_sort_unstable_by(|a, b| bytemuck::bytes_of(a).cmp(bytemuck::bytes_of(b)));
    s
}

/// Whether two slices hold the same multiset of elements.
pub(crate) fn same_multiset<T: Element>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && bytes_eq(&sorted_bytes(a), &sorted_bytes(b))
}

/// First position where two outputs differ, for a readable failure.
pub(crate) fn first_diff<T: Element>(got: &[T], want: &[T]) -> String {
    let at = got.iter().zip(want).position(|(a, b)| bytemuck::bytes_of(a) != bytemuck::bytes_of(b));
    match at {
        Some(i) => {
            format!("first difference at {i}: got word {:#x}, want {:#x}", first_word(&got[i]), first_word(&want[i]))
        }
        None => format!("lengths {} vs {}", got.len(), want.len()),
    }
}

/// One select or partition case of the suite: what runs, on which data. The
/// plain and the counted entry points take the same.
#[derive(Clone, Copy, Debug)]
pub struct CompactCase {
    pub algorithm: Algorithm,
    pub operation: Operation,
    pub rule: Rule,
    pub pattern: Pattern,
    pub seed: u64,
    /// The partition's rejected order (a select ignores it).
    pub rejected: Rejected,
}

/// The reference's rejected half in the order a partition asked for.
pub(crate) fn check_rejected_half<T: Element>(got: &[T], mut want: Vec<T>, order: Rejected) -> Result<(), String> {
    if order == Rejected::Reversed {
        want.reverse();
    }
    if !bytes_eq(got, &want) {
        return Err(format!("rejected half ({}) differs from the reference: {}", order.name(), first_diff(got, &want)));
    }
    Ok(())
}

/// The keep rule `rule` names, over the suite's flags, sentinel and predicate.
pub(crate) fn keep_rule<'a, B: Backend, T: Element>(
    rule: Rule,
    flags: &'a B::Buffer<u8>,
    sentinel: T,
    predicate: &'a B::Predicate<T>,
) -> Keep<'a, B, T> {
    match rule {
        Rule::Flags => Keep::Flags(flags),
        Rule::Sentinel => Keep::Sentinel(sentinel),
        Rule::Predicate => Keep::Predicate(predicate),
    }
}

/// The kept elements against the reference's: in order for a stable
/// algorithm, as a multiset for the others.
pub(crate) fn check_kept<T: Element>(alg: Algorithm, got: &[T], kept: &[T]) -> Result<(), String> {
    if alg.stable() {
        if !bytes_eq(got, kept) {
            return Err(format!("kept elements differ from the reference: {}", first_diff(got, kept)));
        }
    } else if !same_multiset(got, kept) {
        return Err("kept elements are not the reference's multiset".into());
    }
    Ok(())
}

/// A select or partition of `n` elements, against the reference.
pub fn compact_case<B: Harness, T: Element>(backend: &B, case: CompactCase, n: u64) -> Result<(), String> {
    let CompactCase { algorithm: alg, operation: op, rule, pattern, seed, rejected: order } = case;
    check_element::<T>().map_err(|e| e.to_string())?;
    let n = n as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let keep = pattern.flags(n, &mut rng);
    let sentinel: T = element(u32::MAX, &mut rng);
    let input: Vec<T> = keep
        .iter()
        .map(|&k| match (k, rule) {
            (true, Rule::Sentinel) if rng.bool() => near_sentinel(sentinel, rng.u32(..THRESHOLD), &mut rng),
            (true, _) => element(rng.u32(..THRESHOLD), &mut rng),
            (false, Rule::Sentinel) => sentinel,
            (false, _) => element(rng.u32(THRESHOLD..), &mut rng),
        })
        .collect();
    let kept: Vec<T> = input.iter().zip(&keep).filter(|(_, k)| **k).map(|(x, _)| *x).collect();
    let rejected: Vec<T> = input.iter().zip(&keep).filter(|(_, k)| !**k).map(|(x, _)| *x).collect();

    let d_input = backend.upload(&input).map_err(|e| e.to_string())?;
    let mut d_out = poisoned::<B, T>(backend, n)?;
    let flags: Vec<u8> = keep.iter().map(|&k| if k { 1 + rng.u8(..254) } else { 0 }).collect();
    let d_flags = backend.upload(&flags).map_err(|e| e.to_string())?;
    let pred = backend.word_below::<T>(THRESHOLD as u64);
    let rule = keep_rule::<B, T>(rule, &d_flags, sentinel, &*pred);
    let report = match op {
        Operation::Select => backend.select(alg, &d_input, rule, &mut d_out),
        _ => backend.partition_with(alg, &d_input, rule, &mut d_out, order),
    }
    .map_err(|e| e.to_string())?;
    let count = report.count().map_err(|e| e.to_string())? as usize;
    let out = backend.download(&d_out).map_err(|e| e.to_string())?;
    if count != kept.len() {
        return Err(format!("count {count}, want {}", kept.len()));
    }
    check_kept(alg, &out[..count], &kept)?;
    if op == Operation::Partition {
        check_rejected_half(&out[count..], rejected, order)?;
    }
    Ok(())
}

pub fn scan_case<B: Harness, S: ScanElement>(backend: &B, alg: Algorithm, n: u64, seed: u64) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Large values, so wrap-around is exercised too.
    let input: Vec<S> = (0..n).map(|_| S::from_u64(rng.u64(1..))).collect();
    let mut want = Vec::with_capacity(input.len());
    let mut sum = S::ZERO;
    for &x in &input {
        want.push(sum);
        sum = sum.add(x);
    }
    let d_in = backend.upload(&input).map_err(|e| e.to_string())?;
    let mut d_out = poisoned::<B, S>(backend, n as usize)?;
    let report = backend.exclusive_scan(alg, &d_in, &mut d_out).map_err(|e| e.to_string())?;
    let total = report.count().map_err(|e| e.to_string())?;
    let got = backend.download(&d_out).map_err(|e| e.to_string())?;
    if got != want {
        let i = got.iter().zip(&want).position(|(a, b)| a != b).unwrap_or(0);
        return Err(format!("scan differs at {i}: got {:?}, want {:?}", got.get(i), want.get(i)));
    }
    if total != sum.to_u64() {
        return Err(format!("total {total}, want {}", sum.to_u64()));
    }
    Ok(())
}

pub fn sort_case<B: Harness, K: SortKey + ScanElement>(
    backend: &B,
    alg: Algorithm,
    n: u64,
    pairs: bool,
    seed: u64,
) -> Result<(), String> {
    let mut rng = fastrand::Rng::with_seed(seed);
    // Few distinct high keys as well as full-range ones, so stability matters.
    let keys: Vec<K> =
        (0..n).map(|_| if rng.bool() { K::from_u64(rng.u64(..)) } else { K::from_u64(rng.u64(..8) << 20) }).collect();
    let values: Vec<u32> = (0..n as u32).collect();
    let mut want: Vec<(K, u32)> = keys.iter().copied().zip(values.iter().copied()).collect();
    want.sort_by_key(|p| p.0);
    let mut d_keys = backend.upload(&keys).map_err(|e| e.to_string())?;
    let mut d_values = backend.upload(&values).map_err(|e| e.to_string())?;
    backend.radix_sort(alg, &mut d_keys, if pairs { Some(&mut d_values) } else { None }).map_err(|e| e.to_string())?;
    let got_keys = backend.download(&d_keys).map_err(|e| e.to_string())?;
    if got_keys.iter().ne(want.iter().map(|p| &p.0)) {
        return Err("keys are not sorted like the reference".into());
    }
    if pairs {
        let got_values = backend.download(&d_values).map_err(|e| e.to_string())?;
        if got_values.iter().ne(want.iter().map(|p| &p.1)) {
            return Err("values did not follow their keys stably".into());
        }
    }
    Ok(())
}

/// Orders of a removal-index list; Redzone must not depend on it.
#[derive(Clone, Copy, Debug)]
pub enum RemovalOrder {
    Shuffled,
    Ascending,
    Descending,
}

impl RemovalOrder {
    pub const ALL: [RemovalOrder; 3] = [RemovalOrder::Shuffled, RemovalOrder::Ascending, RemovalOrder::Descending];
}

pub fn remove_case<B: Harness, T: Element>(
    backend: &B,
    alg: Algorithm,
    n: u64,
    density: f64,
    order: RemovalOrder,
    seed: u64,
) -> Result<(), String> {
    let n = n as usize;
    let mut rng = fastrand::Rng::with_seed(seed);
    let data: Vec<T> = (0..n).map(|_| element(rng.u32(..), &mut rng)).collect();
    let mut removal: Vec<u64> = (0..n as u64).collect();
    rng.shuffle(&mut removal);
    removal.truncate((density * n as f64).round() as usize);
    match order {
        RemovalOrder::Shuffled => {}
        RemovalOrder::Ascending => removal.sort_unstable(),
        RemovalOrder::Descending => removal.sort_unstable_by(|a, b| b.cmp(a)),
    }
    let mut gone = vec![false; n];
    for &i in &removal {
        gone[i as usize] = true;
    }
    let want: Vec<T> = data.iter().zip(&gone).filter(|(_, g)| !**g).map(|(x, _)| *x).collect();
    let mut d_data = backend.upload(&data).map_err(|e| e.to_string())?;
    let d_removal = backend.upload(&removal).map_err(|e| e.to_string())?;
    let report = backend.remove(alg, &mut d_data, &d_removal).map_err(|e| e.to_string())?;
    let count = report.count().map_err(|e| e.to_string())? as usize;
    if count != want.len() {
        return Err(format!("count {count}, want {}", want.len()));
    }
    let got = backend.download(&d_data).map_err(|e| e.to_string())?;
    if !same_multiset(&got[..count], &want) {
        return Err("survivors are not the reference's multiset".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Near-sentinels differ from the sentinel, each in one word, and every
    /// word gets its turn: the high half of a 32-byte item is compared too.
    #[test]
    fn near_sentinels_differ_in_one_word_each_and_every_word_in_turn() {
        let mut rng = fastrand::Rng::with_seed(3);
        let sentinel: [u32; 8] = element(u32::MAX, &mut rng);
        let mut changed = [0; 8];
        for _ in 0..400 {
            let e = near_sentinel(sentinel, rng.u32(..THRESHOLD), &mut rng);
            let diff: Vec<usize> = (0..8).filter(|&w| e[w] != sentinel[w]).collect();
            assert_eq!(diff.len(), 1, "{e:?} vs {sentinel:?}");
            changed[diff[0]] += 1;
        }
        assert!(changed.iter().all(|&c| c > 0), "{changed:?}");
    }
}
