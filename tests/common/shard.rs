//! Split-frame rendering, one test body for every backend: engines that each
//! trace one band of rows ([`Shard`]), their sums added, give the single
//! engine's image bit for bit, also when a band's edge moves between samples
//! and the moved rows' sums move with it. Each engine's sums are zero outside
//! the pixels it traced, and 0.0 + x is x exactly, so plain addition
//! assembles the image.

use std::ops::Range;

use reap::trace::{Engine, RenderSettings, Shard, TraceError, render};

/// The sums' bits: equal bits, equal renders.
pub fn bits(image: &[[f32; 4]]) -> Vec<[u32; 4]> {
    image.iter().map(|p| p.map(f32::to_bits)).collect()
}

/// The engines' images added pixel by pixel.
pub fn summed<E: Engine>(engines: &[E]) -> Vec<[f32; 4]> {
    let images: Vec<Vec<[f32; 4]>> = engines.iter().map(|e| e.image().expect("the sums read back")).collect();
    (0..images[0].len())
        .map(|p| {
            let mut sum = [0.0f32; 4];
            for image in &images {
                for k in 0..4 {
                    sum[k] += image[p][k];
                }
            }
            sum
        })
        .collect()
}

/// Consecutive bands of `rows` rows each, from the top.
pub fn bands(width: u32, rows: &[u32]) -> Vec<Shard> {
    let mut first = 0;
    rows.iter()
        .map(|&n| {
            let shard = Shard::rows(width, first, n);
            first += n;
            shard
        })
        .collect()
}

/// Per bounce, the paths alive and the shadow rays cast, summed over a render's frames.
fn counts(frames: &[reap::trace::FrameStats]) -> (Vec<u64>, Vec<u64>) {
    let (mut alive, mut shadows) = (Vec::new(), Vec::new());
    for f in frames {
        add(&mut alive, &f.alive);
        add(&mut shadows, &f.shadow_rays);
    }
    (alive, shadows)
}

/// `into += from` element by element, `into` grown with zeros (a band whose
/// paths all ended early reports fewer bounces).
fn add(into: &mut Vec<u64>, from: &[u64]) {
    into.resize(into.len().max(from.len()), 0);
    into.iter_mut().zip(from).for_each(|(a, b)| *a += b);
}

/// `s` rendered whole by one engine, and split into bands of each of
/// `splits`' row counts with one engine per band: the summed sums are the
/// whole image's bits, and the bands' per-bounce counts add up to the whole's.
pub fn split_frames_sum_to_the_whole_image<E: Engine>(make: impl Fn() -> E, s: &RenderSettings, splits: &[&[u32]]) {
    let what = format!("{} {} {}", s.traversal.name(), s.compact_paths.name(), s.compact_frontier.name());
    let mut whole = make();
    let frames = render(&mut whole, s, |_| {}).unwrap_or_else(|e| panic!("{what}: the whole image: {e}"));
    let want = bits(&whole.image().expect("the sums read back"));
    let want_counts = counts(&frames);
    assert!(want.iter().all(|p| p[3] == (s.spp as f32).to_bits()), "{what}: every pixel got every sample");
    for rows in splits {
        assert_eq!(rows.iter().sum::<u32>(), s.height, "the bands cover the image");
        let mut engines = Vec::new();
        let mut got_counts = (Vec::new(), Vec::new());
        for shard in bands(s.width, rows) {
            let mut e = make();
            e.set_shard(shard).expect("a band inside the image");
            assert_eq!((e.shard(), e.pixels(), e.image_pixels()), (shard, shard.count, s.pixels()));
            let frames = render(&mut e, s, |_| {}).unwrap_or_else(|e| panic!("{what} {rows:?}: {shard:?}: {e}"));
            assert!(frames.iter().all(|f| f.queue[0] == shard.count), "{what} {rows:?}: one camera ray a pixel");
            let (alive, shadows) = counts(&frames);
            add(&mut got_counts.0, &alive);
            add(&mut got_counts.1, &shadows);
            engines.push(e);
        }
        assert!(bits(&summed(&engines)) == want, "{what}: bands of {rows:?} rows sum to another image");
        assert_eq!(got_counts, want_counts, "{what}: bands of {rows:?} rows: other per-bounce counts");
    }
}

/// Two engines split the image at a row that moves between samples: at
/// `edges[0]` for the first sample, `edges[1]` for the second, and so on. At
/// each move, `move_sums(from, to, pixels)` hands the rows that change owner
/// to their new engine (copied there, zeroed at the old one). The summed
/// sums are the whole image's bits. An edge that moves back and forth makes
/// each engine's band outgrow the state it was made with.
pub fn a_moving_band_edge_keeps_the_image<E: Engine>(
    make: impl Fn() -> E,
    s: &RenderSettings,
    edges: &[u32],
    move_sums: impl Fn(&mut E, &mut E, Range<u64>),
) {
    let what = format!("{} {}", s.traversal.name(), s.compact_paths.name());
    let spp = edges.len() as u32;
    let whole_settings = RenderSettings { spp, first_sample: 0, ..s.clone() };
    let mut whole = make();
    render(&mut whole, &whole_settings, |_| {}).unwrap_or_else(|e| panic!("{what}: the whole image: {e}"));
    let want = bits(&whole.image().expect("the sums read back"));
    let (mut top, mut bottom) = (make(), make());
    let pixel = |row: u32| row as u64 * s.width as u64;
    let mut edge = None;
    for (sample, &row) in edges.iter().enumerate() {
        match edge {
            Some(old) if row < old => move_sums(&mut top, &mut bottom, pixel(row)..pixel(old)),
            Some(old) if row > old => move_sums(&mut bottom, &mut top, pixel(old)..pixel(row)),
            _ => {}
        }
        edge = Some(row);
        top.set_shard(Shard::rows(s.width, 0, row)).expect("the top band");
        bottom.set_shard(Shard::rows(s.width, row, s.height - row)).expect("the bottom band");
        let one = RenderSettings { spp: 1, first_sample: sample as u32, ..s.clone() };
        for e in [&mut top, &mut bottom] {
            render(e, &one, |_| {}).unwrap_or_else(|err| panic!("{what}: sample {sample}, edge at row {row}: {err}"));
        }
    }
    let engines = [top, bottom];
    assert!(bits(&summed(&engines)) == want, "{what}: an edge moving through rows {edges:?} changes the image");
}

/// A shard past the image, or empty, is a typed error, and the engine keeps
/// the shard it had; the sums are not touched by a new shard, only by `reset`.
pub fn bad_shards_are_typed_errors<E: Engine>(mut e: E, s: &RenderSettings) {
    let (w, h) = (s.width, s.height);
    for bad in [
        Shard::rows(w, h - 1, 2),
        Shard::rows(w, h, 1),
        Shard { base: 0, count: 0 },
        Shard { base: 1, count: u64::MAX },
    ] {
        match e.set_shard(bad) {
            Err(err @ TraceError::ShardOutsideImage { .. }) => {
                assert!(err.to_string().contains("band inside the image"), "{err}")
            }
            other => panic!("{bad:?}: expected ShardOutsideImage, got {other:?}"),
        }
        assert_eq!(e.shard(), Shard::whole(s.pixels()), "a refused shard leaves the engine's");
    }
    render(&mut e, s, |_| {}).expect("the whole image renders");
    let before = bits(&e.image().expect("sums"));
    e.set_shard(Shard::rows(w, 1, 1)).expect("one row");
    assert!(bits(&e.image().expect("sums")) == before, "a new shard leaves the sums as they were");
    e.reset().expect("reset");
    assert!(e.image().expect("sums").iter().all(|p| *p == [0.0; 4]), "reset clears every pixel, not only the shard's");
}

/// A [`Split`] of `ranks` engines against one engine, `s.spp` frames each:
/// the bands follow the measured time between frames, and are then set by
/// hand to `bands` for as many frames again; then `s.spp` samples split by
/// samples, and `s.spp` frames in bands again. The gathered sums must be the
/// one engine's bits after each.
pub fn split_renders_the_whole_image<E: reap::trace::split::SplitEngine>(
    make: impl Fn(usize) -> E,
    s: &RenderSettings,
    ranks: usize,
    bands: Vec<u32>,
) {
    use reap::trace::split::{Renderer, Split, SplitBy};
    // `make(r)`: an engine on rank r's device; the whole image on rank 0's.
    let mut whole = make(0);
    let spp = s.spp;
    let mut want = Vec::new();
    for _ in 0..4 {
        let next = RenderSettings { first_sample: s.first_sample + want.len() as u32 * spp, ..s.clone() };
        reap::trace::render(&mut whole, &next, |_| {}).expect("whole render");
        want.push(bits(&whole.image().expect("whole sums")));
    }
    let from = |part: u32| RenderSettings { first_sample: s.first_sample + part * spp, ..s.clone() };
    let what = format!("{ranks} ranks, {}", s.traversal.name());
    let mut split = Split::new((0..ranks).map(&make).collect(), s.width, s.height).expect("split");
    let first = split.render_frames(s, &mut |_| {}).expect("split render");
    split.set_bands(bands).expect("bands");
    let second = split.render_frames(&from(1), &mut |_| {}).expect("split render, moved bands");
    assert_eq!(bits(&split.sums().expect("gathered")), want[1], "{what}");
    let rays: u64 = first.iter().chain(&second).map(|f| f.rays).sum();
    assert!(rays > 0);
    // Bands that leave a rank without rows, or miss rows, are refused.
    assert!(split.set_bands(vec![0; ranks]).is_err());

    // By samples: rounds of one sample a rank, the last one short where the ranks do not divide spp.
    split.set_by(SplitBy::Samples).expect("split by samples");
    assert_eq!(split.samples_per_frame(), ranks as u32);
    let rounds = split.render_frames(&from(2), &mut |_| {}).expect("split render by samples");
    assert_eq!(rounds.len(), spp.div_ceil(ranks as u32) as usize, "{what}: rounds");
    assert_eq!(rounds.iter().map(|f| f.samples()).sum::<u32>(), spp, "{what}: samples");
    assert!(rounds.iter().all(|f| f.rays > 0));
    assert_eq!(bits(&split.sums().expect("rank 0's sums")), want[2], "{what}, by samples");
    assert!(split.set_bands(vec![1; ranks]).is_err(), "a split by samples has no bands");
    // And back to bands of rows: rank 0's sums go back to the bands' ranks.
    split.set_by(SplitBy::Rows).expect("split by rows");
    split.render_frames(&from(3), &mut |_| {}).expect("split render, rows again");
    assert_eq!(bits(&split.sums().expect("gathered")), want[3], "{what}, rows after samples");
}
