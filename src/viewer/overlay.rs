//! The egui overlay, one panel for either workload: a panel at the window's
//! right with the mode switch, the header, the pickers, "compare all" and its
//! ranking, the comparison table, the charts (per-frame time stacked by stage
//! or part, then the workload's own last-frame charts), and the files. It
//! edits a [`State`] directly; what needs the engine or the GPU comes back as
//! [`Action`]s. What differs per workload is a [`Panel`]: the path tracer's
//! in `trace_overlay.rs`, the collision demo's in `collide_overlay.rs`.

use egui::{Color32, RichText};
use egui_plot::{Bar, BarChart, Legend, Plot};

use super::session::BackendKind;
use super::state::{Mode, ROLLING_WINDOW, Ranked, State, Workload};

/// The panel's width in points.
pub const PANEL_WIDTH: f32 = 400.0;

/// The most height a comparison table takes before it scrolls.
pub const TABLE_HEIGHT: f32 = 240.0;

/// What an overlay asks of the frame loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    SetMode(Mode),
    OpenScene(String),
    SetBackend(BackendKind),
    /// Bounces or resolution scale changed: a new engine for the same scene.
    Rebuild,
    ResetAccumulation,
    ResetCamera,
    /// Build the collision state's scenario with its body count again.
    Reset,
    Screenshot(String),
    ExportCsv(String),
}

/// Overlay state that only the widgets need.
pub struct OverlayState {
    /// The path tracer's scene picker and OBJ path (unused by the collision demo).
    pub scene_field: String,
    pub obj_field: String,
    pub screenshot_field: String,
    pub csv_field: String,
    pub backends: Vec<BackendKind>,
}

/// Facts about the session the overlay shows but does not edit.
pub struct Facts<'a, F> {
    pub backend: BackendKind,
    pub device: String,
    pub adapter: &'a str,
    pub fps: f64,
    /// The workload's own.
    pub of: F,
}

/// How the comparison table of a workload is laid out.
pub struct TableLayout {
    /// The first column's heading.
    pub config: &'static str,
    /// A "frames" column; without one, the frames show on hover.
    pub frames_column: bool,
    /// Narrower columns than egui's default.
    pub column_gap: Option<f32>,
}

/// What one workload's panel shows that the other's does not.
pub trait Panel: Workload {
    type Facts<'a>;
    const MODE: Mode;
    /// Prefix of widget ids, so that each mode keeps its own widget state.
    const ID: &'static str;
    const HEADING: &'static str;
    const TABLE: TableLayout;
    /// The timing chart's title and id.
    const TIMING_CHART: (&'static str, &'static str);
    const COMPARE_HOVER: Option<&'static str>;
    const FILES_TITLE: &'static str;

    /// The header's line about the workload and its lines about the last frame.
    fn header(ui: &mut egui::Ui, s: &State<Self>, f: &Self::Facts<'_>);
    fn last_frame_lines(ui: &mut egui::Ui, stats: &Self::Stats);
    /// The picker grid's rows after the backend.
    fn picker_rows(ui: &mut egui::Ui, s: &mut State<Self>, actions: &mut Vec<Action>);
    /// Buttons between "pause" and "reset camera".
    fn buttons(_ui: &mut egui::Ui, _actions: &mut Vec<Action>) {}
    /// The charts of the last frame, under the timing chart.
    fn last_frame_charts(ui: &mut egui::Ui, stats: &Self::Stats);
    /// Rows of the files section before screenshot and export.
    fn file_rows(_ui: &mut egui::Ui, _o: &mut OverlayState, _actions: &mut Vec<Action>) {}
    /// Shown on hover in the ranking after the frame time.
    fn rank_detail(r: &Ranked) -> String;
}

pub fn ui<W: Panel>(
    ui: &mut egui::Ui,
    s: &mut State<W>,
    o: &mut OverlayState,
    f: &Facts<'_, W::Facts<'_>>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    egui::Panel::right("reap overlay").exact_size(PANEL_WIDTH).resizable(false).show(ui, |ui| {
        egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
            if let Some(m) = mode_switch(ui, W::MODE) {
                actions.push(Action::SetMode(m));
            }
            header(ui, s, f);
            pickers(ui, s, o, f, &mut actions);
            compare(ui, s);
            // The table before the charts: it is what the comparison is about,
            // and a screenshot of a short window should still show it.
            egui::CollapsingHeader::new("table").default_open(true).show(ui, |ui| table(ui, s));
            egui::CollapsingHeader::new("charts").default_open(true).show(ui, |ui| charts(ui, s));
            egui::CollapsingHeader::new(W::FILES_TITLE)
                .default_open(true)
                .show(ui, |ui| files::<W>(ui, o, &mut actions));
        });
    });
    actions
}

fn header<W: Panel>(ui: &mut egui::Ui, s: &State<W>, f: &Facts<'_, W::Facts<'_>>) {
    ui.heading(W::HEADING);
    W::header(ui, s, &f.of);
    ui.label(format!("{:.1} frames/s; compute: {}; display: {}", f.fps, f.device, f.adapter));
    if let Some(note) = &s.backend_note {
        ui.label(RichText::new(note).color(Color32::from_rgb(230, 180, 60)));
    }
    if let Some(last) = s.history.back() {
        W::last_frame_lines(ui, &last.stats);
    }
    message(ui, &s.message);
}

/// A combo box over `options`, each shown by `name`.
pub fn combo<T: PartialEq + Copy>(
    ui: &mut egui::Ui,
    id: &str,
    value: &mut T,
    options: &[T],
    name: impl Fn(T) -> String,
) {
    egui::ComboBox::from_id_salt(id).selected_text(name(*value)).show_ui(ui, |ui| {
        for o in options {
            ui.selectable_value(value, *o, name(*o));
        }
    });
}

fn pickers<W: Panel>(
    ui: &mut egui::Ui,
    s: &mut State<W>,
    o: &OverlayState,
    f: &Facts<'_, W::Facts<'_>>,
    actions: &mut Vec<Action>,
) {
    ui.separator();
    egui::Grid::new(format!("{}pickers", W::ID)).num_columns(2).show(ui, |ui| {
        ui.label("backend");
        let mut backend = f.backend;
        combo(ui, &format!("{}backend", W::ID), &mut backend, &o.backends, |b| b.name().to_string());
        if backend != f.backend {
            actions.push(Action::SetBackend(backend));
        }
        ui.end_row();
        W::picker_rows(ui, s, actions);
    });
    ui.horizontal(|ui| {
        let label = if s.paused { "paused" } else { "pause" };
        ui.toggle_value(&mut s.paused, label);
        W::buttons(ui, actions);
        if ui.button("reset camera").clicked() {
            actions.push(Action::ResetCamera);
        }
    });
}

fn compare<W: Panel>(ui: &mut egui::Ui, s: &mut State<W>) {
    ui.separator();
    ui.horizontal(|ui| {
        match &s.compare {
            None => {
                let button = ui.button("compare all");
                let button = match W::COMPARE_HOVER {
                    Some(why) => button.on_hover_text(why),
                    None => button,
                };
                if button.clicked() {
                    s.start_compare();
                }
            }
            Some(c) => {
                let (i, n) = c.progress();
                ui.label(format!("comparing {} ({}/{n})", c.algorithms[i].name(), i + 1));
                if ui.button("cancel").clicked() {
                    s.cancel_compare();
                }
            }
        }
        ui.label("frames each");
        ui.add(egui::DragValue::new(&mut s.compare_frames).range(1..=1000));
    });
    if s.ranking.is_empty() {
        return;
    }
    ui.label("compare all: mean frame ms, fastest on top (compaction share darker)");
    let bars: Vec<RankBar<'_>> = s
        .ranking
        .iter()
        .map(|r| RankBar {
            algorithm: r.algorithm.name(),
            frame_ms: r.frame_ms,
            compaction_ms: r.compaction_ms,
            detail: W::rank_detail(r),
        })
        .collect();
    ranking_chart(ui, &format!("{}ranking", W::ID), &bars);
}

fn charts<W: Panel>(ui: &mut egui::Ui, s: &State<W>) {
    let (title, id) = W::TIMING_CHART;
    ui.label(title);
    let names = s.stage_names();
    let frames: Vec<_> = s.chart_frames().collect();
    let series = names
        .iter()
        .map(|name| {
            let points = frames
                .iter()
                .map(|r| (r.frame as f64, r.by_stage.iter().find(|(n, _)| n == name).map_or(0.0, |(_, t)| *t)))
                .collect();
            (name.to_string(), points)
        })
        .collect();
    stacked_chart(ui, id, series);
    if let Some(last) = frames.last() {
        W::last_frame_charts(ui, &last.stats);
    }
}

fn table<W: Panel>(ui: &mut egui::Ui, s: &State<W>) {
    ui.label(format!("per configuration, mean of the last {ROLLING_WINDOW} frames (hover: min-max)"));
    let current = W::label(&s.plan().choices);
    // Many rows scroll inside the table so that the charts stay on screen;
    // the columns are sized to fit the panel, so nothing scrolls sideways.
    egui::ScrollArea::vertical()
        .id_salt(format!("{}table scroll", W::ID))
        .max_height(TABLE_HEIGHT)
        .show(ui, |ui| table_grid(ui, s, &current));
}

/// The widest the configuration column may grow before its labels wrap:
/// the panel less what the numeric columns need.
const CONFIG_COLUMN: f32 = 150.0;

fn table_grid<W: Panel>(ui: &mut egui::Ui, s: &State<W>, current: &str) {
    let layout = &W::TABLE;
    if let Some(gap) = layout.column_gap {
        ui.spacing_mut().item_spacing.x = gap;
    }
    egui::Grid::new(format!("{}table", W::ID)).striped(true).num_columns(5).show(ui, |ui| {
        let frames = layout.frames_column.then_some("frames");
        let fixed = [Some(layout.config), frames, Some("compact ms"), Some("frame ms")];
        for h in fixed.into_iter().flatten().chain(W::METRICS.iter().map(|m| m.column)) {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for (label, row) in &s.table {
            let text = if *label == current { RichText::new(label).strong() } else { RichText::new(label) };
            // A long configuration wraps inside its column rather than pushing the numbers off the panel.
            let cell = ui.scope(|ui| {
                ui.set_max_width(CONFIG_COLUMN);
                ui.add(egui::Label::new(text).wrap())
            });
            if layout.frames_column {
                ui.label(row.frames.to_string());
            } else {
                cell.inner.on_hover_text(format!("{} frames", row.frames));
            }
            let r = &row.compaction_ms;
            ui.label(format!("{:.2}", r.mean())).on_hover_text(format!("{:.3}-{:.3} ms", r.min(), r.max()));
            let r = &row.frame_ms;
            ui.label(format!("{:.1}", r.mean())).on_hover_text(format!("{:.2}-{:.2} ms", r.min(), r.max()));
            for (m, r) in W::METRICS.iter().zip(&row.metrics) {
                ui.label(format!("{:.*}", m.decimals, r.mean()));
            }
            ui.end_row();
        }
    });
}

fn files<W: Panel>(ui: &mut egui::Ui, o: &mut OverlayState, actions: &mut Vec<Action>) {
    W::file_rows(ui, o, actions);
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut o.screenshot_field).desired_width(220.0));
        if ui.button("save screenshot").clicked() {
            actions.push(Action::Screenshot(o.screenshot_field.clone()));
        }
    });
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut o.csv_field).desired_width(220.0));
        if ui.button("export timings").clicked() {
            actions.push(Action::ExportCsv(o.csv_field.clone()));
        }
    });
    ui.label("mouse: drag orbits, right/middle drag pans, wheel zooms; WASD (Q/E down/up) flies");
}

/// The switch between the viewer's modes, at the top of either panel.
pub fn mode_switch(ui: &mut egui::Ui, current: Mode) -> Option<Mode> {
    let mut mode = current;
    ui.horizontal(|ui| {
        for m in Mode::ALL {
            ui.selectable_value(&mut mode, m, m.name());
        }
    });
    (mode != current).then_some(mode)
}

/// The overlay's one message line: red for errors, green for news.
pub fn message(ui: &mut egui::Ui, msg: &Option<(bool, String)>) {
    if let Some((error, msg)) = msg {
        let color = if *error { Color32::from_rgb(255, 90, 90) } else { Color32::from_rgb(120, 200, 120) };
        ui.label(RichText::new(msg).color(color));
    }
}

/// Bars per frame, one series stacked on the other in the given order:
/// `series` is (name, [(frame, ms)]).
pub fn stacked_chart(ui: &mut egui::Ui, id: &str, series: Vec<(String, Vec<(f64, f64)>)>) {
    Plot::new(id)
        .height(170.0)
        .legend(Legend::default().text_style(egui::TextStyle::Small))
        .allow_scroll(false)
        .allow_drag(false)
        .include_y(0.0)
        .show(ui, |p| {
            let mut below: Vec<BarChart> = Vec::new();
            for (name, points) in series {
                let bars = points.into_iter().map(|(x, ms)| Bar::new(x, ms).width(1.0)).collect();
                let refs: Vec<&BarChart> = below.iter().collect();
                let chart = BarChart::new(name, bars).stack_on(&refs);
                below.push(chart);
            }
            for c in below {
                p.bar_chart(c);
            }
        });
}

/// One algorithm in a "compare all" ranking.
pub struct RankBar<'a> {
    pub algorithm: &'a str,
    pub frame_ms: f64,
    pub compaction_ms: f64,
    /// Shown on hover after the frame time.
    pub detail: String,
}

/// Horizontal bars, fastest on top: compaction's share, then the rest of the frame.
pub fn ranking_chart(ui: &mut egui::Ui, id: &str, ranking: &[RankBar<'_>]) {
    let n = ranking.len();
    Plot::new(id)
        .height(13.0 * n as f32 + 30.0)
        .allow_scroll(false)
        .allow_drag(false)
        .show_axes([true, false])
        .include_x(0.0)
        .show(ui, |p| {
            let y = |i: usize| (n - i) as f64;
            let compaction: Vec<Bar> = ranking
                .iter()
                .enumerate()
                .map(|(i, r)| Bar::new(y(i), r.compaction_ms).name(r.algorithm).width(0.7).horizontal())
                .collect();
            let rest: Vec<Bar> = ranking
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    Bar::new(y(i), (r.frame_ms - r.compaction_ms).max(0.0))
                        .name(format!("{} {:.2} ms, {}", r.algorithm, r.frame_ms, r.detail))
                        .width(0.7)
                        .horizontal()
                })
                .collect();
            let a = BarChart::new("compaction", compaction).color(Color32::from_rgb(200, 90, 40)).horizontal();
            let b = BarChart::new("rest", rest).color(Color32::from_rgb(80, 130, 200)).horizontal().stack_on(&[&a]);
            p.bar_chart(a);
            p.bar_chart(b);
            for (i, r) in ranking.iter().enumerate() {
                p.text(
                    egui_plot::Text::new(
                        r.algorithm.to_string(),
                        egui_plot::PlotPoint::new(0.0, y(i)),
                        RichText::new(format!("{}. {}", i + 1, r.algorithm)).color(Color32::WHITE),
                    )
                    .anchor(egui::Align2::LEFT_CENTER),
                );
            }
        });
}
