//! Where the band boundaries go: the arithmetic of a split by rows,
//! apart from the frames and moves of `mod.rs`.

/// The band sizes that give every rank the same predicted time, each band's
/// measured time spread evenly over its rows; every band keeps a row.
pub(super) fn balance(rows: &[u32], times: &[f64]) -> Vec<u32> {
    let ranks = rows.len();
    let height: usize = rows.iter().map(|&r| r as usize).sum();
    let mut cost: Vec<f64> = Vec::with_capacity(height);
    for (&n, &t) in rows.iter().zip(times) {
        cost.extend(std::iter::repeat_n(t.max(1e-9) / n.max(1) as f64, n as usize));
    }
    let total: f64 = cost.iter().sum();
    let (mut out, mut at, mut acc) = (Vec::with_capacity(ranks), 0usize, 0.0);
    for r in 0..ranks {
        let start = at;
        if r + 1 == ranks {
            at = height;
        } else {
            let target = total * (r + 1) as f64 / ranks as f64;
            // Take rows while a row's middle stays under the target, leaving one for each later rank.
            while at < height - (ranks - r - 1) && (at == start || acc + cost[at] * 0.5 <= target) {
                acc += cost[at];
                at += 1;
            }
        }
        out.push((at - start) as u32);
    }
    out
}

#[cfg(test)]
mod tests {
    // The boundary arithmetic alone; whole split renders are in tests/shard.rs and tests/gpus.rs.
    #[test]
    fn balanced_rows_cover_the_image_and_favour_the_fast_rank() {
        let rows = vec![50u32, 50];
        let slow_first = balanced(&rows, &[3.0, 1.0]);
        assert_eq!(slow_first, vec![33, 67]);
        // Equal times keep equal bands; every band keeps a row.
        assert_eq!(balanced(&rows, &[1.0, 1.0]), vec![50, 50]);
        let tiny = balanced(&[1, 1, 1], &[100.0, 1.0, 1.0]);
        assert_eq!(tiny, vec![1, 1, 1]);
    }

    fn balanced(rows: &[u32], times: &[f64]) -> Vec<u32> {
        super::balance(rows, times)
    }
}
