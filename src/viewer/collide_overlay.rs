//! The collision demo's part of the overlay: its header lines, the pair
//! compaction, sort, scenario and body pickers, and the pair-frontier chart.

use egui_plot::{Legend, Line, Plot};

use super::collide_state::{CollideState, Colliding};
use super::overlay::{Action, Panel, TableLayout, combo};
use super::state::{Mode, Ranked};
use crate::collide::{FrameStats, Part, Scenario};

/// What the collision header shows about its session.
pub struct CollideFacts {
    pub scenario: Scenario,
    pub bodies: u32,
    pub frame: u32,
    pub time: f32,
}

impl Panel for Colliding {
    type Facts<'a> = CollideFacts;
    const MODE: Mode = Mode::Collision;
    const ID: &'static str = "collide ";
    const HEADING: &'static str = "reap viewer: collision";
    const TABLE: TableLayout = TableLayout { config: "pairs, sort", frames_column: false, column_gap: Some(6.0) };
    const TIMING_CHART: (&'static str, &'static str) = ("frame time by part (ms)", "parts");
    const COMPARE_HOVER: Option<&'static str> = Some("every algorithm from the same bodies, then a ranking");
    const FILES_TITLE: &'static str = "files";

    fn header(ui: &mut egui::Ui, _s: &CollideState, f: &CollideFacts) {
        ui.label(format!("{}: {} bodies, frame {}, t = {:.2} s", f.scenario.name(), f.bodies, f.frame, f.time));
    }

    fn last_frame_lines(ui: &mut egui::Ui, st: &FrameStats) {
        ui.label(format!(
            "last frame {:.2} ms by wall clock; its stages {:.2} ms (wall clock {})",
            st.wall_ms,
            st.frame_ms,
            crate::clocks::gap_cell(st.wall_ms, st.frame_ms)
        ));
        ui.label(format!(
            "broad phase {:.2} ms, compaction {:.2} ms; {} levels",
            st.broad_ms(),
            st.part_ms(Part::Compact),
            st.frontier.len()
        ));
        ui.label(format!("{} pairs tested, {} candidates, {} contacts", st.pairs_tested, st.candidates, st.contacts));
    }

    fn picker_rows(ui: &mut egui::Ui, s: &mut CollideState, actions: &mut Vec<Action>) {
        let comparing = s.compare.is_some();
        ui.label("pair frontier");
        ui.add_enabled_ui(!comparing, |ui| {
            combo(ui, "compact pairs", &mut s.choices.compact_pairs, &s.available, |a| a.name().to_string())
        });
        ui.end_row();
        ui.label("sort");
        ui.add_enabled_ui(!comparing, |ui| combo(ui, "sort", &mut s.choices.sort, &s.workload.sorts, |m| m.name()));
        ui.end_row();
        let c = &mut s.workload;
        ui.label("scenario");
        let before = c.scenario;
        egui::ComboBox::from_id_salt("scenario").selected_text(c.scenario.name()).show_ui(ui, |ui| {
            for sc in Scenario::ALL {
                ui.selectable_value(&mut c.scenario, sc, sc.name()).on_hover_text(sc.describe());
            }
        });
        if c.scenario != before {
            actions.push(Action::Reset);
        }
        ui.end_row();
        ui.label("bodies");
        ui.horizontal(|ui| {
            ui.add(egui::DragValue::new(&mut c.bodies).range(2..=crate::collide::scenario::MAX_BODIES).speed(50.0));
            if ui.button("reset").on_hover_text("build the scenario again with this many bodies").clicked() {
                actions.push(Action::Reset);
            }
        });
        ui.end_row();
    }

    fn last_frame_charts(ui: &mut egui::Ui, stats: &FrameStats) {
        ui.label("pair frontier per level (last frame): slots and live pairs");
        Plot::new("pair frontier").height(120.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(
            ui,
            |p| {
                let pts = |v: &[u64]| v.iter().enumerate().map(|(l, n)| [l as f64, *n as f64]).collect::<Vec<_>>();
                p.line(Line::new("slots", pts(&stats.frontier)));
                p.line(Line::new("live", pts(&stats.live)));
            },
        );
    }

    fn rank_detail(r: &Ranked) -> String {
        format!("compaction {:.3} ms, {:.0} candidates", r.compaction_ms, r.metrics[0])
    }
}
