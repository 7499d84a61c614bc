//! The collision mode's egui panel, laid out as the path tracer's: the
//! pickers (backend, pair compaction, sort), scenario and body count with a
//! reset, "compare all" and its ranking, the charts (per-frame time stacked
//! by part, frontier size per level), the comparison table, and the files.
//! It edits [`CollideState`] directly; what needs the engine or the GPU
//! comes back as [`CollideAction`]s.

use egui::RichText;
use egui_plot::{Legend, Line, Plot};

use super::collide_state::CollideState;
use super::overlay::{PANEL_WIDTH, RankBar, message, mode_switch, ranking_chart, stacked_chart};
use super::session::BackendKind;
use super::state::{Mode, ROLLING_WINDOW};
use crate::collide::{Part, Scenario};

/// What the collision overlay asks of the frame loop.
#[derive(Clone, Debug, PartialEq)]
pub enum CollideAction {
    SetMode(Mode),
    SetBackend(BackendKind),
    /// Build the state's scenario with its body count again.
    Reset,
    ResetCamera,
    Screenshot(String),
    ExportCsv(String),
}

/// Overlay state that only the widgets need.
pub struct CollideOverlayState {
    pub screenshot_field: String,
    pub csv_field: String,
    pub backends: Vec<BackendKind>,
}

/// Facts about the session the overlay shows but does not edit.
pub struct CollideFacts<'a> {
    pub backend: BackendKind,
    pub device: &'a str,
    pub adapter: &'a str,
    pub scenario: Scenario,
    pub bodies: u32,
    pub frame: u32,
    pub time: f32,
    pub fps: f64,
}

pub fn ui(
    ui: &mut egui::Ui,
    s: &mut CollideState,
    o: &mut CollideOverlayState,
    f: &CollideFacts<'_>,
) -> Vec<CollideAction> {
    let mut actions = Vec::new();
    egui::Panel::right("reap overlay").exact_size(PANEL_WIDTH).resizable(false).show(ui, |ui| {
        egui::ScrollArea::vertical().auto_shrink(false).show(ui, |ui| {
            if let Some(m) = mode_switch(ui, Mode::Collision) {
                actions.push(CollideAction::SetMode(m));
            }
            header(ui, s, f);
            pickers(ui, s, o, f, &mut actions);
            compare(ui, s);
            egui::CollapsingHeader::new("table").default_open(true).show(ui, |ui| table(ui, s));
            egui::CollapsingHeader::new("charts").default_open(true).show(ui, |ui| charts(ui, s));
            egui::CollapsingHeader::new("files").default_open(true).show(ui, |ui| files(ui, o, &mut actions));
        });
    });
    actions
}

fn header(ui: &mut egui::Ui, s: &CollideState, f: &CollideFacts<'_>) {
    ui.heading("reap viewer: collision");
    ui.label(format!("{}: {} bodies, frame {}, t = {:.2} s", f.scenario.name(), f.bodies, f.frame, f.time));
    ui.label(format!("{:.1} frames/s; compute: {}; display: {}", f.fps, f.device, f.adapter));
    if let Some(note) = &s.backend_note {
        ui.label(RichText::new(note).color(egui::Color32::from_rgb(230, 180, 60)));
    }
    if let Some(last) = s.history.back() {
        ui.label(format!(
            "last frame {:.2} ms by wall clock; its stages {:.2} ms (wall clock {})",
            last.stats.wall_ms,
            last.stats.frame_ms,
            crate::clocks::gap_cell(last.stats.wall_ms, last.stats.frame_ms)
        ));
        ui.label(format!(
            "broad phase {:.2} ms, compaction {:.2} ms; {} levels",
            last.stats.broad_ms(),
            last.stats.part_ms(Part::Compact),
            last.stats.frontier.len()
        ));
        ui.label(format!(
            "{} pairs tested, {} candidates, {} contacts",
            last.stats.pairs_tested, last.stats.candidates, last.stats.contacts
        ));
    }
    message(ui, &s.message);
}

fn pickers(
    ui: &mut egui::Ui,
    s: &mut CollideState,
    o: &CollideOverlayState,
    f: &CollideFacts<'_>,
    actions: &mut Vec<CollideAction>,
) {
    ui.separator();
    let comparing = s.compare.is_some();
    egui::Grid::new("collide pickers").num_columns(2).show(ui, |ui| {
        ui.label("backend");
        let mut backend = f.backend;
        egui::ComboBox::from_id_salt("collide backend").selected_text(backend.name()).show_ui(ui, |ui| {
            for b in &o.backends {
                ui.selectable_value(&mut backend, *b, b.name());
            }
        });
        if backend != f.backend {
            actions.push(CollideAction::SetBackend(backend));
        }
        ui.end_row();
        ui.label("pair frontier");
        ui.add_enabled_ui(!comparing, |ui| {
            let value = &mut s.choices.compact_pairs;
            egui::ComboBox::from_id_salt("compact pairs").selected_text(value.as_str()).show_ui(ui, |ui| {
                for a in &s.available {
                    ui.selectable_value(value, a.clone(), a.as_str());
                }
            });
        });
        ui.end_row();
        ui.label("sort");
        ui.add_enabled_ui(!comparing, |ui| {
            let value = &mut s.choices.sort;
            egui::ComboBox::from_id_salt("sort").selected_text(value.as_str()).show_ui(ui, |ui| {
                for a in &s.sorts {
                    ui.selectable_value(value, a.clone(), a.as_str());
                }
            });
        });
        ui.end_row();
        ui.label("scenario");
        let before = s.scenario.clone();
        egui::ComboBox::from_id_salt("scenario").selected_text(s.scenario.as_str()).show_ui(ui, |ui| {
            for sc in Scenario::ALL {
                ui.selectable_value(&mut s.scenario, sc.name().to_string(), sc.name()).on_hover_text(sc.describe());
            }
        });
        if s.scenario != before {
            actions.push(CollideAction::Reset);
        }
        ui.end_row();
        ui.label("bodies");
        ui.horizontal(|ui| {
            ui.add(egui::DragValue::new(&mut s.bodies).range(2..=crate::collide::scenario::MAX_BODIES).speed(50.0));
            if ui.button("reset").on_hover_text("build the scenario again with this many bodies").clicked() {
                actions.push(CollideAction::Reset);
            }
        });
        ui.end_row();
    });
    ui.horizontal(|ui| {
        let label = if s.paused { "paused" } else { "pause" };
        ui.toggle_value(&mut s.paused, label);
        if ui.button("reset camera").clicked() {
            actions.push(CollideAction::ResetCamera);
        }
    });
}

fn compare(ui: &mut egui::Ui, s: &mut CollideState) {
    ui.separator();
    ui.horizontal(|ui| {
        match &s.compare {
            None => {
                if ui
                    .button("compare all")
                    .on_hover_text("every algorithm from the same bodies, then a ranking")
                    .clicked()
                {
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
            detail: format!("compaction {:.3} ms, {:.0} candidates", r.compaction_ms, r.candidates),
        })
        .collect();
    ranking_chart(ui, "collide ranking", &bars);
}

fn charts(ui: &mut egui::Ui, s: &CollideState) {
    ui.label("frame time by part (ms)");
    let frames: Vec<_> = s.chart_frames().collect();
    let series = Part::ALL
        .iter()
        .enumerate()
        .map(|(k, part)| (part.name().to_string(), frames.iter().map(|r| (r.frame as f64, r.parts[k])).collect()))
        .collect();
    stacked_chart(ui, "parts", series);
    let Some(last) = frames.last() else { return };
    ui.label("pair frontier per level (last frame): slots and live pairs");
    Plot::new("pair frontier").height(120.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(
        ui,
        |p| {
            let pts = |v: &[u64]| v.iter().enumerate().map(|(l, n)| [l as f64, *n as f64]).collect::<Vec<_>>();
            p.line(Line::new("slots", pts(&last.stats.frontier)));
            p.line(Line::new("live", pts(&last.stats.live)));
        },
    );
}

use super::overlay::TABLE_HEIGHT;

fn table(ui: &mut egui::Ui, s: &CollideState) {
    ui.label(format!("per configuration, last {ROLLING_WINDOW} frames: mean (min-max) ms"));
    let current = s.plan().choices.label();
    // Long sort names can make the rows wider than the panel.
    // Long sort names can make the rows wider than the panel; many rows
    // scroll inside the table so that the charts stay on screen.
    egui::ScrollArea::both()
        .id_salt("collide table scroll")
        .max_height(TABLE_HEIGHT)
        .show(ui, |ui| table_grid(ui, s, &current));
}

fn table_grid(ui: &mut egui::Ui, s: &CollideState, current: &str) {
    ui.spacing_mut().item_spacing.x = 6.0;
    egui::Grid::new("collide table").striped(true).num_columns(5).show(ui, |ui| {
        for h in ["pairs, sort", "compaction", "frame", "cand.", "cont."] {
            ui.label(RichText::new(h).strong());
        }
        ui.end_row();
        for (label, row) in &s.table {
            let text = if *label == current { RichText::new(label).strong() } else { RichText::new(label) };
            ui.label(text).on_hover_text(format!("{} frames", row.frames));
            let r = &row.compaction_ms;
            ui.label(format!("{:.2} ({:.2}-{:.2})", r.mean(), r.min(), r.max()));
            let r = &row.frame_ms;
            ui.label(format!("{:.1} ({:.1}-{:.1})", r.mean(), r.min(), r.max()));
            ui.label(format!("{:.0}", row.candidates.mean()));
            ui.label(format!("{:.0}", row.contacts.mean()));
            ui.end_row();
        }
    });
}

fn files(ui: &mut egui::Ui, o: &mut CollideOverlayState, actions: &mut Vec<CollideAction>) {
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut o.screenshot_field).desired_width(220.0));
        if ui.button("save screenshot").clicked() {
            actions.push(CollideAction::Screenshot(o.screenshot_field.clone()));
        }
    });
    ui.horizontal(|ui| {
        ui.add(egui::TextEdit::singleline(&mut o.csv_field).desired_width(220.0));
        if ui.button("export timings").clicked() {
            actions.push(CollideAction::ExportCsv(o.csv_field.clone()));
        }
    });
    ui.label("mouse: drag orbits, right/middle drag pans, wheel zooms; WASD (Q/E down/up) flies");
}
