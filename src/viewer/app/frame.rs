//! One window frame: the camera, one frame of the mode shown (a render or a
//! simulation step, uploaded to the GPU), the overlay, and presenting.

use super::*;

/// What one frame leaves for its caller: egui's platform output (for the
/// window), whether it was the last of a timed run, and an error that ends it.
pub(super) struct Drawn {
    pub(super) platform: Option<egui::PlatformOutput>,
    pub(super) last: bool,
    pub(super) error: Option<ViewerError>,
}

impl App {
    /// One window frame: egui's input from the window, [`App::frame`], then
    /// the window's part of egui's output.
    pub(super) fn redraw(&mut self, el: &ActiveEventLoop) {
        let (Some(window), Some(_)) = (self.window.clone(), self.gpu.as_ref()) else { return };
        let Some(egui_winit) = &mut self.egui_winit else { return };
        let raw = egui_winit.take_egui_input(&window);
        let size = window.inner_size();
        let drawn = self.frame(raw, (size.width, size.height));
        if let (Some(p), Some(egui_winit)) = (drawn.platform, &mut self.egui_winit) {
            egui_winit.handle_platform_output(&window, p);
        }
        if let Some(e) = drawn.error {
            return self.fail(el, e);
        }
        if drawn.last {
            el.exit();
        }
    }

    /// One frame, window or not: camera, one frame of the mode shown, the
    /// overlay, and the draw (presented, or into the offscreen texture).
    pub(super) fn frame(&mut self, raw: egui::RawInput, (width, height): (u32, u32)) -> Drawn {
        let mut drawn = Drawn { platform: None, last: false, error: None };
        let now = Instant::now();
        let dt = now.duration_since(self.last_frame).as_secs_f64();
        self.last_frame = now;
        if dt > 0.0 {
            self.fps = if self.fps == 0.0 { 1.0 / dt } else { 0.9 * self.fps + 0.1 / dt };
        }
        self.fly(dt as f32);
        let mut parts = [Duration::ZERO; 4];
        match self.mode {
            Mode::PathTracer => self.step_tracer(&mut parts),
            Mode::Collision => self.step_collide(&mut parts),
        }

        // The overlay.
        let t = Instant::now();
        let adapter = self.gpu.as_ref().map_or("", |g| g.adapter.as_str());
        let fps = self.fps;
        let mut actions = Actions::Tracer(Vec::new());
        let mut out = match (self.mode, &mut self.tracer, &mut self.collide) {
            (Mode::PathTracer, Some(t), _) => {
                let of = TraceFacts {
                    scene: &t.session.scene_name,
                    triangles: t.session.triangles,
                    width: t.session.width,
                    height: t.session.height,
                    split: t.session.split_line(),
                };
                let facts = facts(t.session.engine.kind(), 1, adapter, fps, of);
                let (state, ov) = (&mut t.state, &mut t.overlay);
                self.egui_ctx.run_ui(raw, |ui| actions = Actions::Tracer(overlay::ui::<Tracing>(ui, state, ov, &facts)))
            }
            (Mode::Collision, _, Some(c)) => {
                let of = CollideFacts {
                    scenario: c.session.scenario,
                    bodies: c.session.bodies,
                    frame: c.session.frame_index,
                    time: c.session.time(),
                };
                let facts = facts(c.session.engine.kind(), c.session.ranks(), adapter, fps, of);
                let (state, ov) = (&mut c.state, &mut c.overlay);
                self.egui_ctx.run_ui(raw, |ui| {
                    actions = Actions::Collide(overlay::ui::<Colliding>(ui, state, ov, &facts));
                })
            }
            _ => return drawn,
        };
        drawn.platform = Some(std::mem::take(&mut out.platform_output));
        let jobs = self.egui_ctx.tessellate(out.shapes, out.pixels_per_point);
        parts[2] = t.elapsed();

        self.window_frames += 1;
        let last = self.opts.frames.is_some_and(|n| self.window_frames >= n);
        let shot = if last { self.opts.screenshot.clone().or(self.screenshot.take()) } else { self.screenshot.take() };
        // The output check every writer goes through, against the files the scene was read from.
        let inputs = self.tracer.as_ref().map_or(&[][..], |t| &t.session.sources[..]);
        let shot = match shot.map(|p| crate::files::check_output(&p, inputs).map(|()| p)) {
            Some(Err(e)) if last => {
                out.textures_delta.clear(); // nothing is drawn: dropped on purpose
                drawn.error = Some(e.into());
                return drawn;
            }
            Some(Err(e)) => {
                self.say(true, e.to_string());
                None
            }
            Some(Ok(p)) => Some(p),
            None => None,
        };
        let content = self.content(width as f32, height as f32, out.pixels_per_point);
        let mut overlay =
            Overlay { jobs: &jobs, textures: &mut out.textures_delta, pixels_per_point: out.pixels_per_point };
        let t = Instant::now();
        let presented = self.gpu.as_mut().map(|gpu| gpu.present(content, &mut overlay, shot.as_deref()));
        parts[3] = t.elapsed();
        self.clock.record(Duration::from_secs_f64(dt), parts);
        // Whatever present did not apply (it failed early) is dropped on purpose.
        out.textures_delta.clear();
        if let Some(presented) = presented {
            match presented {
                Ok(()) => {
                    if let Some(p) = &shot {
                        self.say(false, format!("saved {}", p.display()));
                    }
                }
                Err(e) if last => {
                    drawn.error = Some(e);
                    return drawn;
                }
                Err(e) => self.say(true, e.to_string()),
            }
        }
        match actions {
            Actions::Tracer(a) => a.into_iter().for_each(|a| self.act(a)),
            Actions::Collide(a) => a.into_iter().for_each(|a| self.act_collide(a)),
        }
        drawn.last = last;
        drawn
    }

    /// The path tracer: camera, one render, the image to the GPU.
    pub(super) fn step_tracer(&mut self, parts: &mut [Duration; 4]) {
        let Some(tr) = &mut self.tracer else { return };
        if tr.dirty {
            tr.dirty = false;
            if let Err(e) = tr.session.set_camera(&tr.orbit.camera()) {
                tr.state.message = Some((true, e.to_string()));
            }
            tr.state.reset_accumulation();
        }
        if tr.state.paused {
            return;
        }
        let t = Instant::now();
        let choices = tr.state.plan().choices;
        let backend = tr.session.engine.kind().name();
        match tr.session.frame(&choices, tr.state.workload.spp_per_frame, tr.state.workload.accumulated) {
            Ok(frames) => {
                for f in frames {
                    self.clock.record_engine(f.frame_ms, f.wall_ms);
                    tr.state.record(backend, &choices, f);
                }
            }
            Err(e) => {
                // A configuration that cannot run (e.g. a frontier too large) pauses instead of crashing.
                tr.state.message = Some((true, e.to_string()));
                tr.state.paused = true;
                tr.state.cancel_compare();
            }
        }
        parts[0] = t.elapsed();
        // The hand-off: on wgpu the engine writes its 8-bit image straight
        // into the display texture (same device, nothing read back);
        // elsewhere the engine's image (converted and read back by the
        // engine) is uploaded to it.
        let t = Instant::now();
        let (w, h) = (tr.session.width, tr.session.height);
        let target = match (tr.session.engine.kind(), &mut self.gpu) {
            (BackendKind::Wgpu, Some(gpu)) => gpu.image_target(w, h),
            _ => None,
        };
        match target.and_then(|view| tr.session.tonemap_into(&view)) {
            Some(Ok(())) => {}
            Some(Err(e)) => tr.state.message = Some((true, e.to_string())),
            None => match tr.session.rgba8() {
                Ok(rgba) => {
                    if let Some(gpu) = &mut self.gpu {
                        gpu.upload(rgba, w, h);
                    }
                }
                Err(e) => tr.state.message = Some((true, e.to_string())),
            },
        }
        parts[1] = t.elapsed();
    }

    /// The collision demo: one step, the bodies to the GPU.
    pub(super) fn step_collide(&mut self, parts: &mut [Duration; 4]) {
        let Some(c) = &mut self.collide else { return };
        let t = Instant::now();
        if let Some((stages_ms, wall_ms)) = c.step() {
            self.clock.record_engine(stages_ms, wall_ms);
        }
        parts[0] = t.elapsed();
        if c.dirty {
            let t = Instant::now();
            c.dirty = false;
            let w = &c.session.world;
            let lines = world_lines(w, w.drum_omega * c.session.time());
            // A wgpu engine's bodies are grouped on the device; the others'
            // were read back by the frame.
            if let Some(gpu) = &mut self.gpu {
                let s = &mut c.session;
                match s.device_bodies() {
                    Some(buffer) => gpu.group_bodies(buffer, s.bodies, s.spheres, &lines),
                    None => match s.bodies() {
                        Ok(bodies) => gpu.upload_bodies(bodies, &lines),
                        Err(e) => c.state.message = Some((true, e.to_string())),
                    },
                }
            }
            parts[1] = t.elapsed();
        }
    }

    /// What goes left of the panel: the image fitted with its aspect
    /// kept, or the 3D view filling the area.
    pub(super) fn content(&self, w: f32, h: f32, ppp: f32) -> Content {
        let area_w = (w - PANEL_WIDTH * ppp).max(1.0);
        let background = [0.08, 0.08, 0.08, 1.0];
        match (self.mode, &self.collide) {
            (Mode::Collision, Some(c)) => {
                let camera = c.orbit.camera();
                let radius = (Vec3::from(c.session.world.max) - Vec3::from(c.session.world.min)).length() * 0.5;
                // Depth32Float keeps a 1e-3 near plane precise enough for any zoom here.
                let near = (radius * 1e-3).max(1e-4);
                let far = c.orbit.distance + 4.0 * radius;
                Content::Bodies(SceneFrame {
                    view_proj: view_proj(&camera, area_w / h.max(1.0), near, far),
                    viewport: [0.0, 0.0, area_w, h.max(1.0)],
                    background,
                    hot_speed: c.session.hot_speed,
                })
            }
            _ => {
                let aspect = self.opts.width as f32 / self.opts.height as f32;
                let (iw, ih) = if area_w / h > aspect { (h * aspect, h) } else { (area_w, area_w / aspect) };
                Content::Image(Layout {
                    rect: [(area_w - iw) * 0.5, (h - ih) * 0.5, iw.max(1.0), ih.max(1.0)],
                    background,
                })
            }
        }
    }
}

/// What both modes' overlays show of the session: the backend, the device it
/// names (with the CPU ranks or GPUs a collision scene is split over), the display
/// adapter and the frame rate, around the workload's own.
fn facts<F>(backend: BackendKind, ranks: usize, adapter: &str, fps: f64, of: F) -> Facts<'_, F> {
    let device = match backend {
        BackendKind::Cpu if ranks > 1 => format!("CPU (rayon), split over {ranks} ranks"),
        BackendKind::Cpu => "CPU (rayon)".into(),
        BackendKind::Cuda if ranks > 1 => format!("CUDA, split over {ranks} GPUs"),
        BackendKind::Cuda => "CUDA".into(),
        BackendKind::Wgpu => "wgpu".into(),
    };
    Facts { backend, device, adapter, fps, of }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_names_the_ranks_a_collision_scene_is_split_over() {
        let device = |backend, ranks| facts(backend, ranks, "", 0.0, ()).device;
        assert_eq!(device(BackendKind::Cpu, 3), "CPU (rayon), split over 3 ranks");
        assert_eq!(device(BackendKind::Cuda, 2), "CUDA, split over 2 GPUs");
        assert_eq!(device(BackendKind::Cuda, 1), "CUDA");
    }
}
