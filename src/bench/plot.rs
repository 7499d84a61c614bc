//! The run's figures, as PNG and SVG (plotters): time vs density, time vs n,
//! % of the copy rate, and Redzone vs k/n. Text uses an embedded font
//! (assets/fonts/DejaVuSansMono.ttf), so no system fonts are needed.

use std::path::{Path, PathBuf};
use std::sync::Once;

use plotters::prelude::*;

use crate::bench::cub::PeerOp;
use crate::bench::{BenchError, BenchResult, Named, Row, RowOperation};
use crate::files::write_atomically;

const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSansMono.ttf");
const SIZE: (u32, u32) = (1000, 640);

fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The font is embedded and known good; a failure would only lose text.
        let _ = plotters::style::register_font("sans-serif", FontStyle::Normal, FONT);
    });
}

/// An axis drawn as log2 (sizes) or log10 (times) of the data, or plain.
#[derive(Clone, Copy, PartialEq)]
enum Axis {
    Linear,
    Percent,
    Log2Count,
    Log10Ms,
}

impl Axis {
    fn map(self, v: f64) -> f64 {
        match self {
            Axis::Linear | Axis::Percent => v,
            Axis::Log2Count => v.max(1.0).log2(),
            Axis::Log10Ms => v.max(1e-6).log10(),
        }
    }
    fn label(self, v: f64) -> String {
        match self {
            Axis::Linear => format!("{v:.2}"),
            Axis::Percent => format!("{v:.0}%"),
            Axis::Log2Count => {
                let n = 2f64.powf(v).round() as u64;
                if n >= 1 << 20 {
                    format!("{}M", n >> 20)
                } else if n >= 1 << 10 {
                    format!("{}k", n >> 10)
                } else {
                    n.to_string()
                }
            }
            Axis::Log10Ms => {
                let t = 10f64.powf(v);
                if t >= 1.0 {
                    format!("{t:.1}")
                } else if t >= 0.01 {
                    format!("{t:.3}")
                } else {
                    format!("{t:.1e}")
                }
            }
        }
    }
}

struct Chart {
    stem: String,
    title: String,
    x: (&'static str, Axis),
    y: (&'static str, Axis),
    series: Vec<(String, Vec<(f64, f64)>)>,
}

fn draw<DB: DrawingBackend>(root: DrawingArea<DB, plotters::coord::Shift>, c: &Chart) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let pts: Vec<(f64, f64)> =
        c.series.iter().flat_map(|(_, v)| v.iter().map(|(x, y)| (c.x.1.map(*x), c.y.1.map(*y)))).collect();
    let (mut x0, mut x1, mut y0, mut y1) = pts.iter().fold((f64::MAX, f64::MIN, f64::MAX, f64::MIN), |a, p| {
        (a.0.min(p.0), a.1.max(p.0), a.2.min(p.1), a.3.max(p.1))
    });
    if pts.is_empty() {
        (x0, x1, y0, y1) = (0.0, 1.0, 0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let pad = ((y1 - y0).abs() * 0.08).max(1e-3);
    if c.y.1 == Axis::Linear || c.y.1 == Axis::Percent {
        y0 = y0.min(0.0);
    } else {
        y0 -= pad;
    }
    y1 += pad;
    let mut chart = ChartBuilder::on(&root)
        .caption(&c.title, ("sans-serif", 20))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(err)?;
    let (xa, ya) = (c.x.1, c.y.1);
    chart
        .configure_mesh()
        .x_desc(c.x.0)
        .y_desc(c.y.0)
        .x_label_formatter(&|v| xa.label(*v))
        .y_label_formatter(&|v| ya.label(*v))
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    for (i, (name, v)) in c.series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let data: Vec<(f64, f64)> = v.iter().map(|(x, y)| (xa.map(*x), ya.map(*y))).collect();
        chart
            .draw_series(LineSeries::new(data.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color.stroke_width(2)));
        chart.draw_series(data.into_iter().map(|p| Circle::new(p, 3, color.filled()))).map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font(("sans-serif", 12))
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}

/// A chart whose every series is one point at the same x (a single-density or
/// single-size run) would collapse to a vertical line: draw it as horizontal
/// bars, one per series, instead.
fn is_single_x(c: &Chart) -> bool {
    let mut xs = c.series.iter().flat_map(|(_, v)| v.iter().map(|p| p.0));
    match xs.next() {
        Some(x) => xs.all(|o| o == x) && c.series.iter().all(|(_, v)| v.len() == 1),
        None => false,
    }
}

fn draw_bars<DB: DrawingBackend>(root: DrawingArea<DB, plotters::coord::Shift>, c: &Chart) -> Result<(), String> {
    let err = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(err)?;
    let mut bars: Vec<(String, f64)> = c.series.iter().map(|(n, v)| (n.clone(), v[0].1)).collect();
    bars.sort_by(|a, b| b.1.total_cmp(&a.1));
    let at = c.x.1.label(c.series[0].1[0].0);
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9) * 1.15;
    let names: Vec<String> = bars.iter().map(|b| b.0.clone()).collect();
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("{} (at {} = {at})", c.title, c.x.0), ("sans-serif", 18))
        .margin(14)
        .x_label_area_size(44)
        .y_label_area_size(230)
        .build_cartesian_2d(0.0..top, -0.5..(bars.len() as f64 - 0.5))
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc(c.y.0.replace(", log", ""))
        .y_labels(bars.len())
        .y_label_formatter(&|v| {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                names.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .disable_y_mesh()
        .label_style(("sans-serif", 13))
        .draw()
        .map_err(err)?;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let y = i as f64;
            Rectangle::new([(0.0, y - 0.38), (*v, y + 0.38)], Palette99::pick(i).to_rgba().filled())
        }))
        .map_err(err)?;
    let fmt = c.y.1;
    chart
        .draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
            let text = if fmt == Axis::Log10Ms { Axis::Log10Ms.label(v.max(1e-12).log10()) } else { format!("{v:.1}") };
            Text::new(text, (*v, i as f64 - 0.2), ("sans-serif", 12))
        }))
        .map_err(err)?;
    root.present().map_err(err)
}

fn render<DB: DrawingBackend>(root: DrawingArea<DB, plotters::coord::Shift>, c: &Chart) -> Result<(), String> {
    if is_single_x(c) { draw_bars(root, c) } else { draw(root, c) }
}

fn write(dir: &Path, c: &Chart) -> BenchResult<Vec<PathBuf>> {
    let fail = |path: &Path, why: String| BenchError::Plot { path: path.display().to_string(), why };
    let svg_path = dir.join(format!("{}.svg", c.stem));
    let mut svg = String::new();
    render(SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(), c).map_err(|e| fail(&svg_path, e))?;
    write_atomically(&svg_path, svg.as_bytes())?;

    let png_path = dir.join(format!("{}.png", c.stem));
    let mut rgb = vec![0u8; (SIZE.0 * SIZE.1 * 3) as usize];
    render(BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area(), c).map_err(|e| fail(&png_path, e))?;
    let mut png_bytes = Vec::new();
    {
        let mut enc = png::Encoder::new(&mut png_bytes, SIZE.0, SIZE.1);
        enc.set_color(png::ColorType::Rgb);
        enc.set_depth(png::BitDepth::Eight);
        let mut w = enc.write_header().map_err(|e| fail(&png_path, e.to_string()))?;
        w.write_image_data(&rgb).map_err(|e| fail(&png_path, e.to_string()))?;
    }
    write_atomically(&png_path, &png_bytes)?;
    Ok(vec![png_path, svg_path])
}

fn series_by<'a>(
    rows: impl Iterator<Item = &'a Row>,
    name: impl Fn(&Row) -> String,
    point: impl Fn(&Row) -> (f64, f64),
) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    for r in rows {
        let key = name(r);
        match out.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => v.push(point(r)),
            None => out.push((key, vec![point(r)])),
        }
    }
    for (_, v) in out.iter_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Means of y over equal x (e.g. time over densities at one n).
fn mean_by_x(mut s: Vec<(String, Vec<(f64, f64)>)>) -> Vec<(String, Vec<(f64, f64)>)> {
    for (_, v) in s.iter_mut() {
        let mut m: Vec<(f64, f64, u32)> = Vec::new();
        for &(x, y) in v.iter() {
            match m.iter_mut().find(|e| e.0 == x) {
                Some(e) => {
                    e.1 += y;
                    e.2 += 1;
                }
                None => m.push((x, y, 1)),
            }
        }
        *v = m.into_iter().map(|(x, y, c)| (x, y / c as f64)).collect();
    }
    s
}

/// Draws every figure the rows support into `dir`; returns the files written.
pub fn all(dir: &Path, rows: &[Row]) -> BenchResult<Vec<PathBuf>> {
    register_font();
    let mut files = Vec::new();
    let device = rows.first().map(|r| r.device.clone()).unwrap_or_default();
    // Compaction rows (with CUB's select): per-density figures at the most measured (n, element size).
    let compaction = |r: &&Row| {
        matches!(r.operation, RowOperation::Select | RowOperation::Partition | RowOperation::Peer(PeerOp::SelectIf))
    };
    let mut groups: Vec<(u64, usize, usize)> = Vec::new();
    for r in rows.iter().filter(compaction) {
        match groups.iter_mut().find(|g| g.0 == r.n && g.1 == r.element_bytes) {
            Some(g) => g.2 += 1,
            None => groups.push((r.n, r.element_bytes, 1)),
        }
    }
    groups.sort_by_key(|g| std::cmp::Reverse(g.2));
    if let Some(&(n, es, _)) = groups.first() {
        let at = || rows.iter().filter(compaction).filter(move |r| r.n == n && r.element_bytes == es);
        let title = format!("{} x {}-bit, {device}", Axis::Log2Count.label((n as f64).log2()), es * 8);
        // The same points twice: as times, and as shares of the copy rate.
        let per_density: [(&str, &str, (&'static str, Axis), fn(&Row) -> f64); 2] = [
            ("time_vs_density", "Compaction time vs fraction kept", ("median time (ms, log)", Axis::Log10Ms), |r| {
                r.median_ms
            }),
            ("pct_of_copy", "Share of the copy rate", ("% of device-to-device copy rate", Axis::Linear), |r| {
                r.pct_of_copy
            }),
        ];
        for (stem, what, y, value) in per_density {
            let chart = Chart {
                stem: stem.into(),
                title: format!("{what}: {title}"),
                x: ("fraction kept (%)", Axis::Percent),
                y,
                series: series_by(at(), |r| r.algorithm.name().to_string(), |r| (r.density * 100.0, value(r))),
            };
            files.extend(write(dir, &chart)?);
        }
    }
    // Time vs n: every (algorithm, element size) measured at several sizes, mean over densities.
    let multi: Vec<&Row> = rows.iter().filter(compaction).collect();
    let by_n = mean_by_x(series_by(
        multi.iter().copied(),
        |r| format!("{} {}b", r.algorithm.name(), r.element_bytes * 8),
        |r| (r.n as f64, r.median_ms),
    ));
    let by_n: Vec<_> = by_n.into_iter().filter(|(_, v)| v.len() > 1).collect();
    if !by_n.is_empty() {
        files.extend(write(
            dir,
            &Chart {
                stem: "time_vs_n".into(),
                title: format!("Compaction time vs n (mean over densities), {device}"),
                x: ("n (elements, log)", Axis::Log2Count),
                y: ("median time (ms, log)", Axis::Log10Ms),
                series: by_n,
            },
        )?);
    }
    // Redzone vs k/n at the largest n measured.
    let remove: Vec<&Row> =
        rows.iter().filter(|r| matches!(r.operation, RowOperation::Remove | RowOperation::MarkSelect)).collect();
    if let Some(n) = remove.iter().map(|r| r.n).max() {
        files.extend(write(
            dir,
            &Chart {
                stem: "redzone_vs_k".into(),
                title: format!(
                    "Removing k of {} elements: Redzone vs mark + select and thrust::remove, {device}",
                    Axis::Log2Count.label((n as f64).log2())
                ),
                x: ("k/n removed (%)", Axis::Percent),
                y: ("median time (ms, log)", Axis::Log10Ms),
                series: series_by(
                    remove.iter().copied().filter(|r| r.n == n),
                    |r| r.algorithm.name().to_string(),
                    |r| (r.density * 100.0, r.median_ms),
                ),
            },
        )?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(points: &[(&str, &[(f64, f64)])]) -> Chart {
        Chart {
            stem: "t".into(),
            title: "t".into(),
            x: ("fraction kept (%)", Axis::Percent),
            y: ("median time (ms, log)", Axis::Log10Ms),
            series: points.iter().map(|(n, v)| (n.to_string(), v.to_vec())).collect(),
        }
    }

    #[test]
    fn one_density_is_drawn_as_bars_and_several_as_lines() {
        register_font();
        let single = chart(&[("lookback", &[(50.0, 0.02)]), ("horn", &[(50.0, 0.3)]), ("atomic", &[(50.0, 0.05)])]);
        assert!(is_single_x(&single));
        let mut svg = String::new();
        render(SVGBackend::with_string(&mut svg, SIZE).into_drawing_area(), &single).unwrap();
        // One filled bar per algorithm, each named on the axis.
        assert!(svg.matches("<rect").count() > 3, "{svg}");
        assert!(svg.contains("lookback") && svg.contains("horn") && svg.contains("atomic"));

        let lines = chart(&[("lookback", &[(0.0, 0.02), (50.0, 0.03)]), ("horn", &[(0.0, 0.2), (50.0, 0.3)])]);
        assert!(!is_single_x(&lines));
        let mixed = chart(&[("lookback", &[(0.0, 0.02)]), ("horn", &[(50.0, 0.3)])]);
        assert!(!is_single_x(&mixed));
    }
}
