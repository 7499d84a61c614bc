//! The report's sections that set a preset beside its paper: seed 000's
//! figures and tables and the speedup tables of seeds 002 and 003 (seed
//! 004's Redzone comparison is redzone.rs).

use std::fmt::Write as _;

use super::*;
use crate::compaction::{Billeter, CompactSimd, OutputMode};

/// The Billeter variant the paper's tables single out.
const POPC_SELECTIVE: Algorithm =
    Algorithm::Billeter(Billeter { simd: CompactSimd::Popc, output: OutputMode::Selective });

/// Whether an algorithm is one of seed 000's compactSIMD variants.
fn is_billeter(a: &Algorithm) -> bool {
    matches!(a, Algorithm::Billeter(_))
}

pub(super) fn densities(v: &View<'_>) -> Vec<f64> {
    let mut d: Vec<f64> = Vec::new();
    for r in &v.rows {
        if !d.iter().any(|x| close(*x, r.density)) {
            d.push(r.density);
        }
    }
    d.sort_by(f64::total_cmp);
    d
}

pub(super) fn fig3(s: &mut String, v: &View<'_>) {
    let ds = densities(v);
    let n = v.rows[0].n;
    let mut cols = vec!["algorithm".to_string()];
    cols.extend(ds.iter().map(|d| pct(*d)));
    cols.push("% copy (mean)".into());
    cols.push("vs CUB (mean)".into());
    header(s, &cols.iter().map(String::as_str).collect::<Vec<_>>());
    for alg in v.algorithms() {
        let mut cells = vec![format!("`{alg}`")];
        cells.extend(ds.iter().map(|d| opt(v.get(alg, 4, n, *d).map(|r| r.median_ms), msf)));
        let rows = v.of(alg);
        cells.push(format!("{:.1}", mean(&rows.iter().map(|r| r.pct_of_copy).collect::<Vec<_>>())));
        let vs: Vec<f64> = rows.iter().filter_map(|r| r.vs_cub).collect();
        cells.push(if vs.is_empty() { "–".into() } else { format!("{:.2}", mean(&vs)) });
        line(s, &cells);
    }
    for (op, label) in
        [(PeerOp::SelectIf, "CUB `DeviceSelect::If`"), (PeerOp::SelectFlagged, "CUB `DeviceSelect::Flagged`")]
    {
        if v.cub(op, 4, n, ds[0]).is_some() {
            let mut cells = vec![label.to_string()];
            cells.extend(ds.iter().map(|d| opt(v.cub(op, 4, n, *d).map(|r| r.median_ms), msf)));
            cells.push("".into());
            cells.push("1.00".into());
            line(s, &cells);
        }
    }
    let _ = writeln!(s, "\nTime in ms to compact {} 32-bit elements (seed 000 Fig. 3 plots the same).\n", size(n));
    // The paper: the selective variant is the fastest at every density; buffered is slower everywhere.
    let billeter: Vec<Algorithm> = v.algorithms().into_iter().filter(is_billeter).collect();
    if billeter.is_empty() {
        return;
    }
    let mut not_selective = Vec::new();
    for d in &ds {
        let best = billeter
            .iter()
            .filter_map(|a| v.get(*a, 4, n, *d).map(|r| (*a, r.median_ms)))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((a, _)) = best
            && !matches!(a, Algorithm::Billeter(Billeter { output: OutputMode::Selective, .. }))
        {
            not_selective.push((a.to_string(), pct(*d)));
        }
    }
    if not_selective.is_empty() {
        let _ = writeln!(s, "As in the paper, a selective variant is the fastest Billeter variant at every density.\n");
    } else {
        let _ = writeln!(
            s,
            "**On this GPU the selective variant is not the fastest Billeter variant everywhere** (the paper found it \
             fastest at all densities): the fastest is {} ({} densities measured).\n",
            grouped(&not_selective),
            ds.len()
        );
    }
    let fastest_overall = v
        .algorithms()
        .into_iter()
        .map(|a| (a, mean(&v.of(a).iter().map(|r| r.median_ms).collect::<Vec<_>>())))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((a, t)) = fastest_overall
        && !is_billeter(&a)
    {
        let best_b = billeter
            .iter()
            .map(|b| (*b, mean(&v.of(*b).iter().map(|r| r.median_ms).collect::<Vec<_>>())))
            .min_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((b, tb)) = best_b {
            let _ = writeln!(
                s,
                "Averaged over densities, `{a}` ({} ms) is {:.2}x faster than the best Billeter variant `{b}` ({} ms): \
                     the single-pass designs that followed the paper beat its three-phase scheme on this GPU.\n",
                msf(t),
                tb / t,
                msf(tb)
            );
        }
    }
}

pub(super) fn fig4(s: &mut String, v: &View<'_>) {
    let mut ns: Vec<u64> = v.rows.iter().map(|r| r.n).collect();
    ns.sort();
    ns.dedup();
    let mut ess: Vec<usize> = v.rows.iter().map(|r| r.element_bytes).collect();
    ess.sort();
    ess.dedup();
    let mut cols = vec!["algorithm".to_string(), "bits".into()];
    cols.extend(ns.iter().map(|n| size(*n)));
    cols.push("% copy at largest n".into());
    cols.push("vs CUB at largest n".into());
    header(s, &cols.iter().map(String::as_str).collect::<Vec<_>>());
    let avg = |alg: Algorithm, es: usize, n: u64| {
        let t: Vec<f64> = v
            .rows
            .iter()
            .filter(|r| r.catalog() == Some(alg) && r.element_bytes == es && r.n == n)
            .map(|r| r.median_ms)
            .collect();
        (!t.is_empty()).then(|| mean(&t))
    };
    let last = *ns.last().unwrap_or(&0);
    for alg in v.algorithms() {
        for &es in &ess {
            let mut cells = vec![format!("`{alg}`"), (es * 8).to_string()];
            cells.extend(ns.iter().map(|n| opt(avg(alg, es, *n), msf)));
            let at: Vec<&Row> = v
                .rows
                .iter()
                .copied()
                .filter(|r| r.catalog() == Some(alg) && r.element_bytes == es && r.n == last)
                .collect();
            cells.push(format!("{:.1}", mean(&at.iter().map(|r| r.pct_of_copy).collect::<Vec<_>>())));
            let vs: Vec<f64> = at.iter().filter_map(|r| r.vs_cub).collect();
            cells.push(if vs.is_empty() { "–".into() } else { format!("{:.2}", mean(&vs)) });
            line(s, &cells);
        }
    }
    let _ = writeln!(s, "\nMean time in ms over the densities measured, per n (seed 000 Fig. 4 plots the same).\n");
    // The paper: Billeter compacts 128-bit elements faster than CUDPP compacts 32-bit ones.
    let b = POPC_SELECTIVE;
    let slower: Vec<String> = ns
        .iter()
        .filter_map(|&n| match (avg(b, 16, n), avg(Algorithm::Blelloch, 4, n)) {
            (Some(wide), Some(narrow)) if wide > narrow => Some(size(n)),
            _ => None,
        })
        .collect();
    if ess.contains(&16) && !slower.is_empty() {
        let _ = writeln!(
            s,
            "**On this GPU `{b}` with 128-bit elements is slower than `blelloch` (the CUDPP approach) with 32-bit \
             elements at n = {}**, reversing the paper's observation that it compacts 128-bit elements faster than \
             competitors compact 32-bit ones.\n",
            slower.join(", ")
        );
    }
}

/// Mean, min and max over densities per algorithm at one n.
fn over_densities(v: &View<'_>, alg: Algorithm) -> Option<(f64, f64, f64)> {
    let t: Vec<f64> = v.of(alg).iter().filter(|r| r.element_bytes == 4).map(|r| r.median_ms).collect();
    if t.is_empty() {
        return None;
    }
    Some((mean(&t), t.iter().copied().fold(f64::INFINITY, f64::min), t.iter().copied().fold(0.0, f64::max)))
}

pub(super) fn table3(s: &mut String, v: &View<'_>) {
    let algs = v.algorithms();
    let best_b = algs
        .iter()
        .filter(|a| is_billeter(a))
        .filter_map(|a| over_densities(v, *a).map(|m| (*a, m.0)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let Some((best, base)) = best_b else {
        let _ = writeln!(s, "No Billeter variant was measured; nothing to relate to.\n");
        return;
    };
    header(s, &["algorithm", "mean ms", "min / max ms", "relative", "paper (GTX 280)", "paper relative"]);
    let paper = |alg: Algorithm, unit: &str| {
        published("000 §5.1 Table 3").find(|p| {
            p.unit == unit && (p.reap == Some(alg.name()) || (alg == best && p.reap == Some(POPC_SELECTIVE.name())))
        })
    };
    for &alg in &algs {
        if let Some((m, lo, hi)) = over_densities(v, alg) {
            let pm = paper(alg, "ms").filter(|_| alg != POPC_SELECTIVE || best == alg);
            let pr = paper(alg, "x").filter(|_| alg != POPC_SELECTIVE || best == alg);
            line(
                s,
                &[
                    format!("`{alg}`{}", if alg == best { " (fastest Billeter)" } else { "" }),
                    msf(m),
                    format!("{} / {}", msf(lo), msf(hi)),
                    format!("{:.2}x", m / base),
                    opt(pm.map(|p| p.value), |x| format!("{x} ms")),
                    opt(pr.map(|p| p.value), |x| format!("{x}x")),
                ],
            );
        }
    }
    let cub: Vec<f64> = v
        .cub
        .iter()
        .filter(|c| c.algorithm == RowAlgorithm::Cub(PeerOp::SelectIf) && c.element_bytes == 4)
        .map(|c| c.median_ms)
        .collect();
    if !cub.is_empty() {
        line(
            s,
            &[
                "CUB `DeviceSelect::If`".into(),
                msf(mean(&cub)),
                String::new(),
                format!("{:.2}x", mean(&cub) / base),
                "–".into(),
                "–".into(),
            ],
        );
    }
    for p in published("000 §5.1 Table 3").filter(|p| p.reap.is_none() && p.unit == "x") {
        line(
            s,
            &[
                format!("{} (not in reap)", p.contender),
                "–".into(),
                "–".into(),
                "–".into(),
                "–".into(),
                format!("{}x", p.value),
            ],
        );
    }
    let _ = writeln!(
        s,
        "\nMean over 0-100 % kept in steps of 10 % (the rows of 000-fig3), relative to the fastest Billeter variant.\n"
    );
    // The paper's order: Billeter < CUDPP (blelloch) < Roger.
    let rel = |a: Algorithm| over_densities(v, a).map(|m| m.0 / base);
    for (alg, paper_x) in [(Algorithm::Blelloch, 3.22), (Algorithm::Roger, 18.9)] {
        if let Some(x) = rel(alg) {
            if x < 1.0 {
                let _ = writeln!(
                    s,
                    "**On this GPU `{alg}` is faster than the fastest Billeter variant ({x:.2}x its time), reversing the \
                     paper's order ({paper_x}x slower).**\n"
                );
            } else if x < paper_x / 2.0 {
                let _ = writeln!(
                    s,
                    "The gap to `{alg}` shrinks from the paper's {paper_x}x to {x:.2}x: on this GPU the extra passes over \
                     memory cost relatively less than on a GTX 280.\n"
                );
            }
        }
    }
    if let (Some(b), Some(r)) = (rel(Algorithm::Blelloch), rel(Algorithm::Roger))
        && r < b
    {
        let _ = writeln!(
            s,
            "**`roger` is faster than `blelloch` here ({r:.2}x vs {b:.2}x), reversing the paper's order.**\n"
        );
    }
}

pub(super) fn table4(s: &mut String, v: &View<'_>) {
    let n = v.rows[0].n;
    header(s, &["algorithm", "ms", "% copy", "vs CUB", "paper (GTX 280)"]);
    let paper = |alg: &str| published("000 §5.2 Table 4").find(|p| p.reap == Some(alg));
    for r in &v.rows {
        line(
            s,
            &[
                format!("`{}`", r.algorithm.name()),
                msf(r.median_ms),
                format!("{:.1}", r.pct_of_copy),
                opt(r.vs_cub, |x| format!("{x:.2}")),
                opt(paper(r.algorithm.name()).map(|p| p.value), |x| format!("{x} ms")),
            ],
        );
    }
    if let Some(c) = v.cub(PeerOp::Scan, 4, n, 1.0) {
        line(
            s,
            &[
                "CUB `DeviceScan::ExclusiveSum`".into(),
                msf(c.median_ms),
                format!("{:.1}", c.pct_of_copy),
                "1.00".into(),
                "–".into(),
            ],
        );
    }
    let _ = writeln!(s, "\nExclusive scan of {} 32-bit elements.\n", size(n));
    let t = |a: Algorithm| v.rows.iter().find(|r| r.catalog() == Some(a)).map(|r| r.median_ms);
    if let (Some(b), Some(c)) = (t(Algorithm::BILLETER_SCAN), t(Algorithm::Blelloch)) {
        if b > c {
            let _ = writeln!(
                s,
                "**On this GPU the Blelloch scan (the CUDPP approach) is faster than Billeter's ({} vs {} ms), reversing the \
                 paper's order (3.7 vs 5.3 ms).**\n",
                msf(c),
                msf(b)
            );
        } else {
            let _ = writeln!(
                s,
                "As in the paper, Billeter's scan beats the CUDPP approach: {:.2}x here, 1.43x in the paper.\n",
                c / b
            );
        }
    }
}

pub(super) fn table5(s: &mut String, v: &View<'_>) {
    let n = v.rows[0].n;
    header(s, &["algorithm", "keys ms", "key-value ms", "keys vs CUB", "pairs vs CUB"]);
    for alg in v.algorithms() {
        let k = v.get(alg, 4, n, 1.0);
        let p = v.get(alg, 8, n, 1.0);
        line(
            s,
            &[
                format!("`{alg}`"),
                opt(k.map(|r| r.median_ms), msf),
                opt(p.map(|r| r.median_ms), msf),
                opt(k.and_then(|r| r.vs_cub), |x| format!("{x:.2}")),
                opt(p.and_then(|r| r.vs_cub), |x| format!("{x:.2}")),
            ],
        );
    }
    let ck = v.cub(PeerOp::SortKeys, 4, n, 1.0);
    let cp = v.cub(PeerOp::SortPairs, 8, n, 1.0);
    if ck.is_some() || cp.is_some() {
        line(
            s,
            &[
                "CUB `DeviceRadixSort`".into(),
                opt(ck.map(|r| r.median_ms), msf),
                opt(cp.map(|r| r.median_ms), msf),
                "1.00".into(),
                "1.00".into(),
            ],
        );
    }
    for p in published("000 §5.3 Table 5") {
        line(
            s,
            &[
                format!("paper: {}", p.contender),
                format!("{} ms", p.value),
                String::new(),
                String::new(),
                String::new(),
            ],
        );
    }
    let _ = writeln!(
        s,
        "\nRadix sort of {} 32-bit keys (and 32-bit values, separate arrays) by one split per key bit.\n",
        size(n)
    );
    let best = v.rows.iter().filter(|r| r.element_bytes == 4).min_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
    if let (Some(b), Some(c)) = (best, ck) {
        let x = b.median_ms / c.median_ms;
        if x > 1.5 {
            let _ = writeln!(
                s,
                "**The paper found sort by split on par with the fastest radix sort of its day (28.2 vs 27.6 ms); on this \
                 GPU the fastest split sort (`{}`) takes {x:.1}x CUB's radix sort**: one split per bit reads and writes \
                 the keys 32 times, where CUB's multi-bit digits pass over them 4 times.\n",
                b.algorithm.name()
            );
        } else {
            let _ =
                writeln!(s, "As in the paper, sort by split stays close to the fastest radix sort ({x:.2}x CUB).\n");
        }
    }
}

pub(super) fn speedups(s: &mut String, v: &View<'_>, source: &str, hero: Algorithm, others: &[Algorithm]) {
    let mut ns: Vec<u64> = v.rows.iter().map(|r| r.n).collect();
    ns.sort();
    ns.dedup();
    let d = v.rows[0].density;
    let mut cols = vec!["n".to_string(), format!("`{hero}` ms")];
    for o in others {
        cols.push(format!("`{o}` ms"));
        cols.push(format!("speed-up vs `{o}`"));
        cols.push("paper".into());
    }
    header(s, &cols.iter().map(String::as_str).collect::<Vec<_>>());
    let mut reversals = Vec::new();
    for &n in &ns {
        let h = v.get(hero, 4, n, d).map(|r| r.median_ms);
        let mut cells = vec![size(n), opt(h, msf)];
        for o in others {
            let t = v.get(*o, 4, n, d).map(|r| r.median_ms);
            let x = h.zip(t).map(|(h, t)| t / h);
            let paper = published(source).find(|p| p.reap == Some(o.name()) && p.n == n).map(|p| p.value);
            cells.push(opt(t, msf));
            cells.push(opt(x, |x| format!("{x:.2}x")));
            cells.push(opt(paper, |p| format!("{p}x")));
            if let (Some(x), Some(_)) = (x, paper)
                && x < 1.0
            {
                reversals.push((format!("`{o}`"), size(n)));
            }
        }
        line(s, &cells);
    }
    let _ = writeln!(s, "\nSpeed-up = the other algorithm's time over `{hero}`'s, at {} kept.\n", pct(d));
    if !reversals.is_empty() {
        let _ = writeln!(
            s,
            "**On this GPU `{hero}` is slower than {}, reversing the paper's speed-up.**\n",
            grouped(&reversals)
        );
    } else {
        let _ = writeln!(
            s,
            "As in the paper, `{hero}` is faster than {} at every size measured.\n",
            others.iter().map(|o| format!("`{o}`")).collect::<Vec<_>>().join(" and ")
        );
    }
}
