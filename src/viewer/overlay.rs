//! The egui overlay: a panel at the window's right with the compaction
//! pickers, the charts (per-frame time stacked by stage, live paths per
//! bounce, frontier size per level), the comparison table and "compare all",
//! and the scene, camera and output controls. It edits [`ViewerState`]
//! directly; what needs the engine or the GPU comes back as [`Action`]s.
//! The widgets both modes share (mode switch, message line, stacked timing
//! chart, ranking chart) are here too; `collide_overlay.rs` is the collision
//! mode's panel.

use egui::{Color32, RichText};
use egui_plot::{Bar, BarChart, Legend, Line, Plot};

use super::session::BackendKind;
use super::state::{Mode, ViewerState};
use crate::trace::Traversal;

/// The panel's width in points.
pub const PANEL_WIDTH: f32 = 400.0;

/// What the overlay asks of the frame loop.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    SetMode(Mode),
    OpenScene(String),
    SetBackend(BackendKind),
    /// Bounces or resolution scale changed: a new engine for the same scene.
    Rebuild,
    ResetAccumulation,
    ResetCamera,
    Screenshot(String),
    ExportCsv(String),
}

/// Overlay state that only the widgets need.
pub struct OverlayState {
    pub scene_field: String,
    pub obj_field: String,
    pub screenshot_field: String,
    pub csv_field: String,
    pub backends: Vec<BackendKind>,
}

/// Facts about the session the overlay shows but does not edit.
pub struct Facts<'a> {
    pub backend: BackendKind,
    pub device: &'a str,
    pub adapter: &'a str,
    pub scene: &'a str,
    pub triangles: usize,
    pub width: u32,
    pub height: u32,
    pub fps: f64,
}

pub fn ui(ui: &mut egui::Ui, s: &mut ViewerState, o: &mut OverlayState, f: &Facts<'_>) -> Vec<Action> {
    let mut actions = Vec::new();
    egui::Panel::right("reap overlay").exact_size(PANEL_WIDTH).resizable(false).show(ui, |ui| {
        egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
            if let Some(m) = mode_switch(ui, Mode::PathTracer) {
                actions.push(Action::SetMode(m));
            }
            header(ui, s, f);
            compaction(ui, s, o, f, &mut actions);
            compare(ui, s);
            // The table before the charts: it is what the comparison is about,
            // and a screenshot of a short window should still show it.
            egui::CollapsingHeader::new("table").default_open(true).show(ui, |ui| table(ui, s));
            egui::CollapsingHeader::new("charts").default_open(true).show(ui, |ui| charts(ui, s));
            egui::CollapsingHeader::new("scene and files")
                .default_open(true)
                .show(ui, |ui| scene_controls(ui, s, o, &mut actions));
        });
    });
    actions
}

fn header(ui: &mut egui::Ui, s: &ViewerState, f: &Facts<'_>) {
    ui.heading("reap viewer");
    ui.label(format!(
        "{}: {} triangles, {}x{}, {} spp accumulated",
        f.scene, f.triangles, f.width, f.height, s.accumulated
    ));
    ui.label(format!("{:.1} frames/s; compute: {}; display: {}", f.fps, f.device, f.adapter));
    if let Some(note) = &s.backend_note {
        ui.label(RichText::new(note).color(Color32::from_rgb(230, 180, 60)));
    }
    if let Some(last) = s.history.back() {
        let st = &last.stats;
        ui.label(format!("last frame {:.2} ms by wall clock, {:.1} Mrays/s", st.wall_ms, st.wall_mrays_per_s()));
        ui.label(format!(
            "its stages {:.2} ms, {:.1} Mrays/s (wall clock {}); compaction {:.2} ms",
            st.frame_ms,
            st.mrays_per_s(),
            crate::clocks::gap_cell(st.wall_ms, st.frame_ms),
            st.compaction_ms()
        ));
    }
    message(ui, &s.message);
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

fn compaction(ui: &mut egui::Ui, s: &mut ViewerState, o: &OverlayState, f: &Facts<'_>, actions: &mut Vec<Action>) {
    ui.separator();
    egui::Grid::new("pickers").num_columns(2).show(ui, |ui| {
        ui.label("backend");
        let mut backend = f.backend;
        egui::ComboBox::from_id_salt("backend").selected_text(backend.name()).show_ui(ui, |ui| {
            for b in &o.backends {
                ui.selectable_value(&mut backend, *b, b.name());
            }
        });
        if backend != f.backend {
            actions.push(Action::SetBackend(backend));
        }
        ui.end_row();
        let comparing = s.compare.is_some();
        for (label, site) in [("live paths", 0), ("traversal frontier", 1)] {
            ui.label(label);
            let available = s.available.clone();
            let value = if site == 0 { &mut s.choices.compact_paths } else { &mut s.choices.compact_frontier };
            ui.add_enabled_ui(!comparing, |ui| {
                egui::ComboBox::from_id_salt(label).selected_text(value.as_str()).show_ui(ui, |ui| {
                    for a in &available {
                        ui.selectable_value(value, a.clone(), a.as_str());
                    }
                });
            });
            ui.end_row();
        }
        ui.label("traversal");
        ui.add_enabled_ui(!comparing, |ui| {
            egui::ComboBox::from_id_salt("traversal").selected_text(s.choices.traversal.name()).show_ui(ui, |ui| {
                for t in Traversal::ALL {
                    ui.selectable_value(&mut s.choices.traversal, t, t.name());
                }
            });
        });
        ui.end_row();
        ui.label("spp per frame");
        ui.add(egui::DragValue::new(&mut s.spp_per_frame).range(1..=64));
        ui.end_row();
        ui.label("bounces");
        if ui.add(egui::DragValue::new(&mut s.max_bounces).range(1..=64)).changed() {
            actions.push(Action::Rebuild);
        }
        ui.end_row();
        ui.label("resolution scale");
        if ui.add(egui::Slider::new(&mut s.scale, 0.125..=1.0)).drag_stopped() {
            actions.push(Action::Rebuild);
        }
        ui.end_row();
    });
    ui.horizontal(|ui| {
        let label = if s.paused { "paused" } else { "pause" };
        ui.toggle_value(&mut s.paused, label);
        if ui.button("reset accumulation").clicked() {
            actions.push(Action::ResetAccumulation);
        }
        if ui.button("reset camera").clicked() {
            actions.push(Action::ResetCamera);
        }
    });
}

fn charts(ui: &mut egui::Ui, s: &ViewerState) {
    ui.label("frame time by stage (ms)");
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
    stacked_chart(ui, "stages", series);
    let Some(last) = frames.last() else { return };
    ui.label("paths per bounce (last frame)");
    Plot::new("paths").height(110.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(ui, |p| {
        let pts = |v: &[u64]| v.iter().enumerate().map(|(b, n)| [b as f64, *n as f64]).collect::<Vec<_>>();
        p.line(Line::new("queue", pts(&last.stats.queue)));
        p.line(Line::new("alive", pts(&last.stats.alive)));
    });
    if last.stats.frontier.iter().any(|l| !l.is_empty()) {
        ui.label("frontier items per level (last frame)");
        Plot::new("frontier").height(110.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(
            ui,
            |p| {
                for (b, levels) in last.stats.frontier.iter().enumerate().take(4) {
                    let pts: Vec<[f64; 2]> = levels.iter().enumerate().map(|(l, n)| [l as f64, *n as f64]).collect();
                    p.line(Line::new(format!("bounce {b}"), pts));
                }
            },
        );
    }
}

fn table(ui: &mut egui::Ui, s: &ViewerState) {
    ui.label(format!("per configuration, last {} frames: mean (min-max) ms", super::state::ROLLING_WINDOW));
    let current = s.frame_choices().label();
    // Many rows scroll inside the table so that the charts stay on screen.
    egui::ScrollArea::both()
        .id_salt("table scroll")
        .max_height(TABLE_HEIGHT)
        .show(ui, |ui| table_grid(ui, s, &current));
}

/// The most height a comparison table takes before it scrolls.
pub const TABLE_HEIGHT: f32 = 240.0;

fn table_grid(ui: &mut egui::Ui, s: &ViewerState, current: &str) {
    egui::Grid::new("table").striped(true).num_columns(5).show(ui, |ui| {
        for h in ["configuration", "frames", "compaction", "frame", "Mrays/s"] {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for (label, row) in &s.table {
            let text = if *label == current { RichText::new(label).strong() } else { RichText::new(label) };
            ui.label(text);
            ui.label(row.frames.to_string());
            let r = &row.compaction_ms;
            ui.label(format!("{:.2} ({:.2}-{:.2})", r.mean(), r.min(), r.max()));
            let r = &row.frame_ms;
            ui.label(format!("{:.1} ({:.1}-{:.1})", r.mean(), r.min(), r.max()));
            ui.label(format!("{:.1}", row.mrays.mean()));
            ui.end_row();
        }
    });
}

fn compare(ui: &mut egui::Ui, s: &mut ViewerState) {
    ui.separator();
    ui.horizontal(|ui| {
        match &s.compare {
            None => {
                if ui.button("compare all").clicked() {
                    s.start_compare();
                }
            }
            Some(c) => {
                let (i, n) = c.progress();
                ui.label(format!("comparing {} ({}/{n})", c.algorithms[i], i + 1));
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
            algorithm: &r.algorithm,
            frame_ms: r.frame_ms,
            compaction_ms: r.compaction_ms,
            detail: format!("{:.1} Mrays/s", r.mrays),
        })
        .collect();
    ranking_chart(ui, "ranking", &bars);
}

fn scene_controls(ui: &mut egui::Ui, s: &mut ViewerState, o: &mut OverlayState, actions: &mut Vec<Action>) {
    ui.horizontal(|ui| {
        ui.label("scene");
        let before = o.scene_field.clone();
        egui::ComboBox::from_id_salt("scene").selected_text(o.scene_field.as_str()).show_ui(ui, |ui| {
            for (name, _) in crate::scene::BUILTINS {
                ui.selectable_value(&mut o.scene_field, name.to_string(), *name);
            }
        });
        if o.scene_field != before {
            actions.push(Action::OpenScene(o.scene_field.clone()));
        }
    });
    ui.horizontal(|ui| {
        ui.label("OBJ");
        ui.add(egui::TextEdit::singleline(&mut o.obj_field).desired_width(220.0).hint_text("path/to/scene.obj"));
        if ui.button("open").clicked() {
            actions.push(Action::OpenScene(o.obj_field.trim().to_string()));
        }
    });
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
    let _ = s;
}
