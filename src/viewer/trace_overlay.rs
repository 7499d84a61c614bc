//! The path tracer's part of the overlay: its header lines, the compaction
//! and traversal pickers with samples, bounces and scale, the paths-per-bounce
//! and frontier charts, and the scene controls.

use egui_plot::{Legend, Line, Plot};

use super::overlay::{Action, OverlayState, Panel, TableLayout, combo};
use super::state::{Mode, Ranked};
use super::trace_state::{Tracing, ViewerState};
use crate::compaction::Fusion;
use crate::trace::{BlockLevels, BvhKind, FrameStats, Traversal};

/// The overlay's `block levels` menu.
const BLOCK_LEVEL_CHOICES: [BlockLevels; 5] =
    [BlockLevels::Auto, BlockLevels::Levels(1), BlockLevels::Levels(2), BlockLevels::Levels(3), BlockLevels::All];

/// What the path tracer's header shows about its session.
pub struct TraceFacts<'a> {
    pub scene: &'a str,
    pub triangles: usize,
    pub width: u32,
    pub height: u32,
    /// With `--gpus N`: the ranks' bands and their last frame times.
    pub split: Option<String>,
}

impl Panel for Tracing {
    type Facts<'a> = TraceFacts<'a>;
    const MODE: Mode = Mode::PathTracer;
    const ID: &'static str = "";
    const HEADING: &'static str = "reap viewer";
    const TABLE: TableLayout = TableLayout { config: "configuration", frames_column: true, column_gap: None };
    const TIMING_CHART: (&'static str, &'static str) = ("frame time by stage (ms)", "stages");
    const COMPARE_HOVER: Option<&'static str> = None;
    const FILES_TITLE: &'static str = "scene and files";

    fn header(ui: &mut egui::Ui, s: &ViewerState, f: &TraceFacts<'_>) {
        ui.label(format!(
            "{}: {} triangles, {}x{}, {} spp accumulated",
            f.scene, f.triangles, f.width, f.height, s.workload.accumulated
        ));
        if let Some(split) = &f.split {
            ui.label(split);
        }
    }

    fn last_frame_lines(ui: &mut egui::Ui, st: &FrameStats) {
        ui.label(format!("last frame {:.2} ms by wall clock, {:.1} Mrays/s", st.wall_ms, st.wall_mrays_per_s()));
        ui.label(format!(
            "its stages {:.2} ms, {:.1} Mrays/s (wall clock {}); compaction {:.2} ms",
            st.frame_ms,
            st.mrays_per_s(),
            crate::clocks::gap_cell(st.wall_ms, st.frame_ms),
            st.compaction_ms()
        ));
        let site = |p: Option<crate::compaction::SitePath>| p.map_or("none", |p| p.name());
        // How the frame reached the GPU: a still view replays one recorded CUDA graph a frame.
        let graph = st.graph.map_or(String::new(), |p| format!("; frame {}", p.name()));
        ui.label(format!(
            "sites: live paths {}, frontier {}{graph}",
            site(st.paths_site),
            if st.frontier_site.is_some() { site(st.frontier_site) } else { "-" }
        ));
        // Breadth-first: the steps its rays' bounces took and the items a step held (a block step of
        // several levels takes fewer, fuller ones).
        let runs: Vec<&Vec<u64>> = st.frontier.iter().filter(|r| !r.is_empty()).collect();
        if !runs.is_empty() {
            let steps: usize = runs.iter().map(|r| r.len()).sum();
            let items: u64 = runs.iter().flat_map(|r| r.iter()).sum();
            ui.label(format!(
                "frontier: {:.1} steps a bounce, {:.0} items a step",
                steps as f64 / runs.len() as f64,
                items as f64 / steps as f64
            ));
        }
    }

    fn picker_rows(ui: &mut egui::Ui, s: &mut ViewerState, actions: &mut Vec<Action>) {
        let comparing = s.compare.is_some();
        for (label, site) in [("live paths", 0), ("traversal frontier", 1)] {
            ui.label(label);
            let value = if site == 0 { &mut s.choices.compact_paths } else { &mut s.choices.compact_frontier };
            ui.add_enabled_ui(!comparing, |ui| combo(ui, label, value, &s.available, |a| a.name().to_string()));
            ui.end_row();
        }
        ui.label("traversal");
        ui.add_enabled_ui(!comparing, |ui| {
            combo(ui, "traversal", &mut s.choices.traversal, &Traversal::ALL, |t| t.name().to_string())
        });
        ui.end_row();
        ui.label("BVH");
        ui.add_enabled_ui(!comparing, |ui| {
            combo(ui, "BVH", &mut s.choices.bvh, &BvhKind::ALL, |b| b.name().to_string())
        });
        ui.end_row();
        // Wide breadth-first only: the levels a step descends per tile, its block keeping the rays.
        ui.label("block levels");
        ui.add_enabled_ui(!comparing && s.choices.bvh == BvhKind::Wide, |ui| {
            combo(ui, "block levels", &mut s.choices.block_levels, &BLOCK_LEVEL_CHOICES, |k| k.to_string())
        });
        ui.end_row();
        // Wide breadth-first, one level a step, a stable frontier algorithm: levels 1..=N sorted by node.
        ui.label("group levels");
        let groups = s.choices.bvh == BvhKind::Wide
            && matches!(s.choices.block_levels, BlockLevels::Auto | BlockLevels::Levels(1))
            && matches!(s.choices.compact_frontier, crate::compaction::Compaction::With(a) if a.stable());
        if !groups {
            s.choices.group_levels = 0;
        }
        ui.add_enabled_ui(!comparing && groups, |ui| {
            ui.add(egui::DragValue::new(&mut s.choices.group_levels).range(0..=crate::frontier::MAX_GROUPED as u32))
        });
        ui.end_row();
        // `auto` fuses lookback, chained and atomic into the kernels that make the items (CUDA and wgpu).
        ui.label("fuse sites");
        combo(ui, "fuse sites", &mut s.choices.fusion, &Fusion::ALL, |f| f.name().to_string());
        ui.end_row();
        let t = &mut s.workload;
        ui.label("spp per frame");
        ui.add(egui::DragValue::new(&mut t.spp_per_frame).range(1..=64));
        ui.end_row();
        ui.label("bounces");
        if ui.add(egui::DragValue::new(&mut t.max_bounces).range(1..=64)).changed() {
            actions.push(Action::Rebuild);
        }
        ui.end_row();
        ui.label("resolution scale");
        if ui.add(egui::Slider::new(&mut t.scale, 0.125..=1.0)).drag_stopped() {
            actions.push(Action::Rebuild);
        }
        ui.end_row();
    }

    fn buttons(ui: &mut egui::Ui, actions: &mut Vec<Action>) {
        if ui.button("reset accumulation").clicked() {
            actions.push(Action::ResetAccumulation);
        }
    }

    fn last_frame_charts(ui: &mut egui::Ui, stats: &FrameStats) {
        ui.label("paths per bounce (last frame)");
        Plot::new("paths").height(110.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(ui, |p| {
            let pts = |v: &[u64]| v.iter().enumerate().map(|(b, n)| [b as f64, *n as f64]).collect::<Vec<_>>();
            p.line(Line::new("queue", pts(&stats.queue)));
            p.line(Line::new("alive", pts(&stats.alive)));
        });
        if stats.frontier.iter().any(|l| !l.is_empty()) {
            ui.label("frontier items per level (last frame)");
            Plot::new("frontier").height(110.0).legend(Legend::default()).allow_scroll(false).include_y(0.0).show(
                ui,
                |p| {
                    for (b, levels) in stats.frontier.iter().enumerate().take(4) {
                        let pts: Vec<[f64; 2]> =
                            levels.iter().enumerate().map(|(l, n)| [l as f64, *n as f64]).collect();
                        p.line(Line::new(format!("bounce {b}"), pts));
                    }
                },
            );
        }
    }

    fn file_rows(ui: &mut egui::Ui, o: &mut OverlayState, actions: &mut Vec<Action>) {
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
    }

    fn rank_detail(r: &Ranked) -> String {
        format!("{:.1} Mrays/s", r.metrics[0])
    }
}
