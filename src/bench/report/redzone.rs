//! Seed 004's Fig. 4 in the report: Redzone's in-place removal beside the
//! O(n) competitors (reap's marking + select, and marking + CUB's select), and
//! beside the paper's own peer, marking + `thrust::remove` in place (the CUB
//! peer's `remove` job); then how close Redzone's `fill holes` phase comes to
//! the random-write limit.

use std::fmt::Write as _;

use super::papers::densities;
use super::*;
use crate::bench::cub::PeerOp;
use crate::compaction::Consumes;

/// Whether an algorithm is one of seed 004's Redzone removals (the ones that
/// take a list of indices to remove).
fn is_redzone(a: &Algorithm) -> bool {
    a.consumes() == Consumes::RemovalIndices
}

/// A sector is the DRAM's unit of transfer: a random write of one element
/// (4 to 32 bytes, aligned) costs one whole sector.
const SECTOR_BYTES: f64 = 32.0;

fn phase(r: &Row, name: &str) -> Option<f64> {
    r.phases.iter().find(|(p, _)| p == name).map(|(_, t)| *t)
}

pub(super) fn fig4(s: &mut String, v: &View<'_>) {
    let mut ns: Vec<u64> = v.rows.iter().map(|r| r.n).collect();
    ns.sort();
    ns.dedup();
    let ks = densities(v);
    let competitors: Vec<Algorithm> = v.algorithms().into_iter().filter(|a| !is_redzone(a)).collect();
    header(
        s,
        &[
            "n",
            "k/n",
            "redzone-grid ms (phases)",
            "redzone-block ms",
            "fastest competitor: mark + select",
            "speed-up",
            "mark + CUB select ms",
            "mark + thrust::remove ms (phases)",
            "grid vs thrust",
            "block vs thrust",
            "paper",
        ],
    );
    let mut notes = Vec::new();
    for &n in &ns {
        for &k in &ks {
            let rz = v.get(Algorithm::RedzoneGrid, 4, n, k);
            let rb = v.get(Algorithm::RedzoneBlock, 4, n, k);
            let comp = competitors
                .iter()
                .filter_map(|a| v.get(*a, 4, n, k))
                .min_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
            let x = rz.zip(comp).map(|(r, c)| c.median_ms / r.median_ms);
            let thrust = v.cub(PeerOp::Remove, 4, n, k);
            let vs_thrust =
                |r: Option<&Row>| opt(r.zip(thrust).map(|(r, t)| t.median_ms / r.median_ms), |x| format!("{x:.2}x"));
            let paper = published("004 §6")
                .chain(published("004 §5.1"))
                .find(|p| p.contender.contains(&format!("= {:.0} %", k * 100.0)));
            line(
                s,
                &[
                    size(n),
                    pct(k),
                    opt(rz.map(|r| r.median_ms), msf) + &rz.map(phase_list).unwrap_or_default(),
                    opt(rb.map(|r| r.median_ms), msf),
                    comp.map(|c| {
                        format!(
                            "`{}` {} (mark {})",
                            c.algorithm.name(),
                            msf(c.median_ms),
                            c.phases.first().map(|p| msf(p.1)).unwrap_or_default()
                        )
                    })
                    .unwrap_or_else(|| "–".into()),
                    opt(x, |x| format!("{x:.2}x")),
                    opt(rz.and_then(|r| r.cub_ms), msf),
                    thrust.map(|t| format!("{}{}", msf(t.median_ms), phase_list(t))).unwrap_or_else(|| "–".into()),
                    vs_thrust(rz),
                    vs_thrust(rb),
                    opt(paper.map(|p| p.value), |p| format!("{p}x")),
                ],
            );
            // The paper measured against thrust::remove: compare with it when it ran.
            let against = rz.zip(thrust).map(|(r, t)| t.median_ms / r.median_ms).or(x);
            if n == *ns.last().unwrap_or(&0)
                && let (Some(x), Some(p)) = (against, paper)
            {
                notes.push((k, x, p.value));
            }
        }
    }
    let _ = writeln!(
        s,
        "\nk/n is the fraction removed. Every competitor first marks the k removed elements (seed 004 §5 adds this \
         phase 1 to all of them), then selects the rest; Redzone removes in place from the index list. \
         Speed-up = the fastest competitor's time over `redzone-grid`'s. The paper's own peer is \
         `thrust::remove` in place (the CUB peer's `remove` job): it marks k indices drawn as a uniform random \
         sample DELETED, then removes them; \"vs thrust\" is its mark + remove time over Redzone's, above 1 = \
         Redzone faster.\n"
    );
    for (k, x, paper) in notes {
        let reversed = (paper > 1.0 && x < 1.0) || (paper <= 1.0 && x > 2.0);
        let far = paper >= 5.0 && x < paper / 3.0;
        if reversed || far {
            let _ = writeln!(
                s,
                "**At k/n = {} and n = {}, Redzone is {x:.2}x the speed of {} here, where the paper \
                 reports {paper}x**: on this GPU {}.\n",
                pct(k),
                size(*ns.last().unwrap_or(&0)),
                if v.cub.iter().any(|c| c.algorithm == RowAlgorithm::Cub(PeerOp::Remove)) {
                    "mark + `thrust::remove`"
                } else {
                    "the fastest competitor"
                },
                if x < 1.0 {
                    "a full O(n) single-pass select streams at close to copy speed, so Redzone's scattered O(k) writes \
                     no longer win"
                } else if x < paper {
                    "Redzone still wins, by less: each of its O(k) moves is a random 4-byte access that costs a whole \
                     32-byte DRAM sector, while the O(n) select streams at close to copy speed (and the competitors' \
                     marking pass is as random as Redzone's moves)"
                } else {
                    "the O(k) scattered work pays off more than the paper measured: today's O(n) competitors must \
                     first mark k random flags, which costs as much as Redzone's moves"
                }
            );
        }
    }
    fill_holes(s, v, &ns, &ks);
}

/// " (phase t, phase t)": a row's phases after its time.
fn phase_list(r: &Row) -> String {
    let list: Vec<String> = r.phases.iter().map(|(p, t)| format!("{p} {}", msf(*t))).collect();
    if list.is_empty() { String::new() } else { format!(" ({})", list.join(", ")) }
}

/// `redzone-grid`'s `fill holes` phase as a rate of random sector writes,
/// beside two limits measured in the same run.
fn fill_holes(s: &mut String, v: &View<'_>, ns: &[u64], ks: &[f64]) {
    let g = |x: f64| format!("{:.2}", x / 1e9);
    let share = |a: f64, b: Option<f64>| opt(b.filter(|b| *b > 0.0), |b| format!("{:.0} %", 100.0 * a / b));
    let mut lines = Vec::new();
    for &n in ns {
        for &d in ks {
            let Some(r) = v.get(Algorithm::RedzoneGrid, 4, n, d) else { continue };
            let Some(fill) = phase(r, "fill holes").filter(|t| *t > 0.0) else { continue };
            let k = ((d * n as f64).round() as u64).min(n) as f64;
            // Removed indices before the red zone [n - k, n): each is a hole one survivor fills.
            let holes = k * (n as f64 - k) / n as f64;
            let achieved = holes / (fill / 1e3);
            let copy =
                (r.copy_ms > 0.0).then(|| (2 * n * r.element_bytes as u64) as f64 / (r.copy_ms / 1e3) / SECTOR_BYTES);
            let scatter = v
                .cub(PeerOp::Remove, 4, n, d)
                .and_then(|t| phase(t, "mark"))
                .filter(|m| *m > 0.0 && k > 0.0)
                .map(|m| k / (m / 1e3));
            lines.push(vec![
                size(n),
                pct(d),
                format!("{:.2}M", holes / 1e6),
                msf(fill),
                g(achieved),
                opt(copy, g),
                share(achieved, copy),
                opt(scatter, g),
                share(achieved, scatter),
            ]);
        }
    }
    if lines.is_empty() {
        return;
    }
    let _ = writeln!(s, "### `redzone-grid`'s fill holes against the random-write limit\n");
    header(
        s,
        &[
            "n",
            "k/n",
            "holes filled",
            "fill holes ms",
            "achieved G sectors/s",
            "copy limit G sectors/s",
            "of copy limit",
            "random-write rate G/s",
            "of random-write rate",
        ],
    );
    for l in &lines {
        line(s, l);
    }
    let _ = writeln!(
        s,
        "\nEach hole before the red zone is filled by one random element write, and a random write of up to 32 \
         bytes costs one whole 32-byte DRAM sector, so the achieved rate is holes x 1 sector / fill-holes time. \
         Holes filled is k(n-k)/n, the expected number of removed indices below n - k for a uniform random \
         removal list; it includes the orphans that `process orphans` moves, so the rate is an upper bound for \
         this phase. Copy limit: the device-to-device copy in the same run (bytes read + written per second) / 32 \
         bytes, the sector rate DRAM streams. Random-write rate: the `thrust::remove` peer's mark phase in the \
         same run, k random element writes per mark time (a measured random-scatter rate; – where the peer did \
         not run).\n"
    );
}
