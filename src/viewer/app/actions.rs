//! What the overlays ask for, done: switching mode, changing the
//! configuration, the scene or the scenario, screenshots, rebuilding on
//! another backend.

use super::*;

impl App {
    /// Shows `mode`, making it first if it was never shown.
    pub(super) fn set_mode(&mut self, mode: Mode) {
        let kind = self.kind();
        let made = match mode {
            Mode::PathTracer if self.tracer.is_none() => {
                Tracer::open(&self.opts, kind, &self.backends, &self.display).map(|t| self.tracer = Some(t))
            }
            Mode::Collision if self.collide.is_none() => {
                let (scenario, bodies) = match self.opts.collide {
                    Some(c) => (c.scenario, c.bodies.unwrap_or(default_bodies(kind))),
                    None => (Scenario::Pile, default_bodies(kind)),
                };
                let gpus = self.opts.gpus;
                Collide::open(scenario, bodies, kind, gpus, &self.backends, &self.display)
                    .map(|c| self.collide = Some(c))
            }
            _ => Ok(()),
        };
        match made {
            Ok(()) => {
                self.mode = mode;
                let note = self.note.clone();
                match mode {
                    Mode::PathTracer => {
                        if let Some(t) = &mut self.tracer {
                            t.state.backend_note = t.state.backend_note.take().or(note);
                        }
                    }
                    Mode::Collision => {
                        if let Some(c) = &mut self.collide {
                            c.state.backend_note = c.state.backend_note.take().or(note);
                            c.dirty = true;
                        }
                    }
                }
            }
            Err(e) => self.say(true, format!("cannot open {}: {e}", mode.name())),
        }
    }

    pub(super) fn act(&mut self, action: Action) {
        let (w, h) = self.render_size();
        if let Action::SetMode(m) = action {
            return self.set_mode(m);
        }
        let Some(tr) = &mut self.tracer else { return };
        let s = &mut tr.state;
        match action {
            // Only the other mode's panel asks for these.
            Action::SetMode(_) | Action::Reset => {}
            Action::ResetAccumulation => {
                if let Err(e) = tr.session.reset() {
                    s.message = Some((true, e.to_string()));
                }
                s.reset_accumulation();
            }
            Action::ResetCamera => {
                tr.orbit = Orbit::from_camera(&tr.session.home);
                tr.dirty = true;
            }
            Action::Rebuild => self.rebuild(self.kind()),
            Action::SetBackend(kind) => self.rebuild(kind),
            Action::OpenScene(spec) => {
                if spec.is_empty() {
                    s.message = Some((true, "type the path of an .obj file first".into()));
                    return;
                }
                let kind = tr.session.engine.kind();
                match Session::open(&spec, kind, w, h, s.workload.max_bounces, None, tr.session.gpus, &self.display) {
                    Ok(mut session) => {
                        session.descend = tr.session.descend;
                        tr.orbit = Orbit::from_camera(&session.home);
                        s.message =
                            Some((false, format!("opened {} ({} triangles)", session.scene_name, session.triangles)));
                        tr.session = session;
                        s.reset_accumulation();
                        s.cancel_compare();
                    }
                    // The old scene stays; the overlay says why the new one did not open.
                    Err(e) => s.message = Some((true, e.to_string())),
                }
            }
            Action::Screenshot(path) => self.screenshot = Some(PathBuf::from(path)),
            Action::ExportCsv(path) => {
                s.message = Some(match write_text(path.as_ref(), &s.timings_csv()) {
                    Ok(()) => (false, format!("wrote {} frames to {path}", s.history.len())),
                    Err(e) => (true, e.to_string()),
                });
            }
        }
    }

    pub(super) fn act_collide(&mut self, action: Action) {
        if let Action::SetMode(m) = action {
            return self.set_mode(m);
        }
        let Some(c) = &mut self.collide else { return };
        match action {
            // Only the other mode's panel asks for these.
            Action::SetMode(_) | Action::OpenScene(_) | Action::Rebuild | Action::ResetAccumulation => {}
            Action::SetBackend(kind) => match c.session.rebuild(kind, &self.display) {
                Ok(()) => {
                    c.state.set_offer(c.session.engine.choices(), c.session.engine.sorts());
                    c.state.set_workload(c.session.scenario, c.session.bodies);
                }
                Err(e) => c.state.message = Some((true, e.to_string())),
            },
            Action::Reset => {
                let kind = c.session.engine.kind();
                let (scenario, bodies, gpus) = (c.state.workload.scenario, c.state.workload.bodies, c.session.gpus);
                match CollideSession::open(scenario, bodies, kind, gpus, &self.display) {
                    Ok(session) => {
                        c.state.message =
                            Some((false, format!("built {} with {} bodies", session.scenario.name(), session.bodies)));
                        c.replace(session);
                    }
                    // The old scenario goes on; the overlay says why the new one did not build.
                    Err(e) => c.state.message = Some((true, e.to_string())),
                }
            }
            Action::ResetCamera => c.orbit = Orbit::from_camera(&home(&c.session)),
            Action::Screenshot(path) => self.screenshot = Some(PathBuf::from(path)),
            Action::ExportCsv(path) => {
                let s = &mut c.state;
                s.message = Some(match write_text(path.as_ref(), &s.timings_csv()) {
                    Ok(()) => (false, format!("wrote {} frames to {path}", s.history.len())),
                    Err(e) => (true, e.to_string()),
                });
            }
        }
    }

    pub(super) fn rebuild(&mut self, kind: BackendKind) {
        let (w, h) = self.render_size();
        let Some(tr) = &mut self.tracer else { return };
        let camera = tr.orbit.camera();
        let bounces = tr.state.workload.max_bounces;
        match tr.session.rebuild(kind, w, h, bounces, &camera, &self.display) {
            Ok(()) => {
                tr.state.set_available(tr.session.engine.choices());
                tr.state.reset_accumulation();
            }
            Err(e) => tr.state.message = Some((true, e.to_string())),
        }
    }
}
