//! `reap scene`: what can be done with a scene besides rendering it. `reap scene export` writes
//! one for other renderers (OBJ + MTL, Mitsuba 3, pbrt-v4; see `reap::scene::export`).

use std::path::PathBuf;

use anyhow::{Context, Result};

use reap::scene::{self, export::ExportFormat, export::ExportSettings};

#[derive(clap::Subcommand)]
pub enum SceneCommand {
    /// Write a scene (built-in or OBJ) as OBJ + MTL (reap loads it back to the same image), a
    /// Mitsuba 3 XML scene and a pbrt-v4 scene, with the camera, film and depth of a `reap render`.
    Export(ExportArgs),
}

#[derive(clap::Args)]
pub struct ExportArgs {
    /// A built-in scene's name or an .obj file, as for `reap render`.
    #[arg(long, default_value = "cornell")]
    pub scene: PathBuf,
    /// The folder to write into (created): scene.obj/.mtl, scene.xml, scene.pbrt, meshes/, textures/.
    #[arg(long)]
    pub out: PathBuf,
    /// Which formats, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "obj,mitsuba,pbrt",
          value_parser = |s: &str| s.parse::<ExportFormat>().map_err(|e| e.to_string()))]
    pub format: Vec<ExportFormat>,
    #[arg(long, default_value_t = 1280, value_parser = clap::value_parser!(u32).range(1..))]
    pub width: u32,
    #[arg(long, default_value_t = 720, value_parser = clap::value_parser!(u32).range(1..))]
    pub height: u32,
    /// Samples per pixel the exported renderer settings ask for.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub spp: u32,
    /// As `reap render --max-bounces` (pbrt-v4's maxdepth; Mitsuba's max_depth is one more).
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_bounces: u32,
}

pub fn run(command: SceneCommand) -> Result<bool> {
    match command {
        SceneCommand::Export(args) => export(args),
    }
}

fn export(args: ExportArgs) -> Result<bool> {
    let sc = scene::load(&args.scene).with_context(|| format!("loading scene `{}`", args.scene.display()))?;
    for w in &sc.warnings {
        eprintln!("warning: {w}");
    }
    let settings =
        ExportSettings { width: args.width, height: args.height, spp: args.spp, max_bounces: args.max_bounces };
    let mut formats: Vec<ExportFormat> = Vec::new();
    for f in args.format {
        if !formats.contains(&f) {
            formats.push(f);
        }
    }
    // Every format is staged before any file is in place; a first signal while staging asks to
    // stop (a second ends at once), and what was staged is then dropped: the folder keeps its
    // earlier export whole.
    crate::cli::interrupt::install();
    let staged = scene::export::stage(&sc, &formats, &settings, &args.out)
        .with_context(|| format!("exporting scene `{}`", sc.name))?;
    if let Some(signal) = crate::cli::interrupt::received() {
        eprintln!("stopped by signal {signal} before any file was replaced; {} is as it was", args.out.display());
        return Ok(false);
    }
    let mains = crate::cli::interrupt::while_writing(|| staged.commit())
        .with_context(|| format!("exporting scene `{}`", sc.name))?;
    for (format, main) in mains {
        println!("{format}: {}", main.display());
    }
    Ok(true)
}
