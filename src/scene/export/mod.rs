//! `reap scene export`: any scene reap renders, written for other renderers, so reap can be timed
//! beside them on the same scene (issue 32) and a built-in scene can leave reap.
//!
//! Three formats, each a main file in one folder:
//!
//! - **OBJ + MTL** (`scene.obj`, `scene.mtl`): reap's own loader reads it back to the same scene, so
//!   it renders the same image hash. The camera and environment travel as `# reap:` comment
//!   directives (see `scene/obj.rs`), glossy roughness as `Pr` beside `Ns`.
//! - **Mitsuba 3** (`scene.xml`) and **pbrt-v4** (`scene.pbrt`): one binary PLY mesh per material
//!   in `meshes/` (shared by both), textures copied into `textures/`.
//!
//! An export is written all or nothing ([`stage`], then [`Staged::commit`]): re-exporting into an
//! earlier export's folder either replaces its whole set or, on an error or a signal, none of it.
//!
//! # How reap's model maps to each renderer
//!
//! Exact in both: geometry (every triangle, its per-vertex normals and uvs, f32 bits kept), diffuse
//! albedo and textures (bilinear, repeat, 8-bit images sRGB-decoded, v up as OBJ's), one-sided
//! area lights (emitting towards e1×e2, the counter-clockwise side), the uniform environment, the
//! pinhole camera, a box pixel filter of one pixel (reap jitters uniformly inside the pixel), and
//! the path depth (`--max-bounces N` = pbrt-v4 `maxdepth N` = Mitsuba `max_depth N + 1`, which
//! counts the camera segment). Approximations, also stated in a comment in each exported file:
//!
//! - **Glossy** (reap: GGX, alpha = roughness, Schlick Fresnel F0 = albedo, height-correlated Smith
//!   G2). Mitsuba: `principled` with metallic 1, base_color = albedo, roughness = √alpha (principled
//!   squares it); its metallic Fresnel is Schlick with F0 = base_color, as reap's, but its G2 is the
//!   separable G1·G1 (slightly darker at grazing angles). `roughconductor` was not chosen: its
//!   Fresnel is the full conductor one. pbrt-v4: `conductor` with `reflectance` = albedo and
//!   `roughness` = alpha (not remapped); its G2 is height-correlated as reap's, but its Fresnel is
//!   the exact conductor one whose normal-incidence reflectance is the albedo, not Schlick's.
//! - **Mirror** (reap: albedo times a perfect reflection, at every angle). Mitsuba: `conductor`
//!   with material `none` (Fresnel 1) and specular_reflectance = albedo: exact. pbrt-v4:
//!   `conductor` with `reflectance` = albedo and roughness 0, whose Fresnel rises to 1 at grazing.
//! - **Glass** (reap: Schlick Fresnel from the ior, albedo tints reflection and transmission, no
//!   1/eta² radiance scaling). Mitsuba: `dielectric` (exact Fresnel, scales by 1/eta² on
//!   transmission, which cancels for a closed object) with both reflectance and transmittance =
//!   albedo. pbrt-v4: `dielectric` `eta` = ior: exact Fresnel and no tint at all (pbrt-v4's
//!   dielectric has none); a tinted glass is exported untinted.
//! - Every surface is two-sided in reap: Mitsuba's non-dielectric BSDFs are wrapped in `twosided`.
//! - Russian roulette: reap starts it after the 4th surface (bounce index 3), with probability
//!   max(throughput) ≤ 0.95. Mitsuba: `rr_depth` 4 starts it at the same vertex (its probability
//!   also has an eta² factor). pbrt-v4 has no such setting: its own rule applies (from depth 2).
//!   Roulette is unbiased, so only the noise differs.
//! - Next-event estimation: reap never samples the environment; both renderers do. Same expectation.
//! - Spectra: pbrt-v4 renders spectrally; its `rgb` values are upsampled (Mitsuba's `scalar_rgb`
//!   and `*_rgb` variants render in RGB as reap does).
//! - Textures on EXR files: reap clamps texels to [0, 1]; the renderers read them unclamped.
//! - Handedness: Mitsuba's lookat camera shows the image as reap does; pbrt-v4's is mirrored
//!   left-right, so the pbrt file starts with `Scale -1 1 1`.

mod mitsuba;
mod obj;
mod pbrt;
mod ply;

use std::collections::HashSet;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use super::Scene;
use crate::files::{self, OutputError};

/// What the exported scene renders at: the arguments of `reap render` that the file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExportSettings {
    pub width: u32,
    pub height: u32,
    pub spp: u32,
    /// As `reap render --max-bounces`.
    pub max_bounces: u32,
}

/// Which renderer's scene format to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    /// OBJ + MTL, which reap loads back (`scene.obj`).
    Obj,
    /// Mitsuba 3 XML with PLY meshes (`scene.xml`).
    Mitsuba,
    /// pbrt-v4 with PLY meshes (`scene.pbrt`).
    Pbrt,
}

impl ExportFormat {
    pub const ALL: [ExportFormat; 3] = [ExportFormat::Obj, ExportFormat::Mitsuba, ExportFormat::Pbrt];

    /// The name `FromStr` takes.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Obj => "obj",
            ExportFormat::Mitsuba => "mitsuba",
            ExportFormat::Pbrt => "pbrt",
        }
    }

    /// The main file's name in the export folder.
    pub fn main_file(self) -> &'static str {
        match self {
            ExportFormat::Obj => "scene.obj",
            ExportFormat::Mitsuba => "scene.xml",
            ExportFormat::Pbrt => "scene.pbrt",
        }
    }
}

impl fmt::Display for ExportFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for ExportFormat {
    type Err = ExportError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ExportFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ExportError::UnknownFormat(s.to_owned()))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("unknown export format `{0}`: give obj, mitsuba or pbrt")]
    UnknownFormat(String),

    #[error(transparent)]
    Output(#[from] OutputError),

    #[error(
        "cannot copy the texture {path} into the export: {why}; it must still exist where the scene was loaded from"
    )]
    Texture { path: String, why: String },

    #[error("the scene has no triangles; there is nothing to export")]
    Empty,
}

/// Writes `scene` into folder `dir` as `format`: [`stage`] then [`Staged::commit`]; returns the
/// main file (scene.obj / scene.xml / scene.pbrt).
pub fn export(
    scene: &Scene,
    format: ExportFormat,
    settings: &ExportSettings,
    dir: &Path,
) -> Result<PathBuf, ExportError> {
    stage(scene, &[format], settings, dir)?.commit()?;
    Ok(dir.join(format.main_file()))
}

/// An export whose every file is written whole beside its place, none of them in place yet.
pub struct Staged {
    files: files::FileSet,
    mains: Vec<(ExportFormat, PathBuf)>,
}

impl Staged {
    /// Renames every file into place together; returns each format's main file. An earlier
    /// export in the folder is replaced as a whole or, on a failure, kept as a whole: a new
    /// scene.mtl never lands beside an old scene.obj.
    pub fn commit(self) -> Result<Vec<(ExportFormat, PathBuf)>, ExportError> {
        self.files.commit()?;
        Ok(self.mains)
    }
}

/// Writes `scene` in every format of `formats` into folder `dir` (created), all staged and none in
/// place until [`Staged::commit`]: an error here, or a signal before the commit, leaves the folder
/// as it was (the temporaries are removed when the `Staged` is dropped). Refuses before writing
/// anything an output name that is an input of the scene (`scene.sources`), a pipe or a device.
pub fn stage(
    scene: &Scene,
    formats: &[ExportFormat],
    settings: &ExportSettings,
    dir: &Path,
) -> Result<Staged, ExportError> {
    if scene.triangles.is_empty() {
        return Err(ExportError::Empty);
    }
    files::check_output_folder(dir)?;
    let names = Names::of(scene);
    // Every file is checked before the first is written, so a refusal costs no work.
    let mut planned: Vec<String> = names.textures.clone();
    for format in formats {
        match format {
            ExportFormat::Obj => planned.push("scene.mtl".into()),
            _ => planned.extend(ply::files(scene, &names).into_iter().map(|(_, file)| file)),
        }
        planned.push(format.main_file().into());
    }
    for file in &planned {
        let path = dir.join(file);
        // meshes/ and textures/ are made now: the check writes a probe where the file will go.
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| files::fail(parent, e))?;
        }
        files::check_output(&path, &scene.sources)?;
    }
    let mut out = Output { dir, files: files::FileSet::new(), staged: HashSet::new() };
    // Every format names its textures by the same copies.
    copy_textures(scene, &names, &mut out)?;
    let mut mains = Vec::new();
    for &format in formats {
        let main = match format {
            ExportFormat::Obj => {
                out.write("scene.mtl", obj::mtl(scene, &names).as_bytes())?;
                obj::obj(scene, &names)
            }
            ExportFormat::Mitsuba => {
                mitsuba::text(scene, settings, &names, &ply::write_meshes(scene, &names, &mut out)?)
            }
            ExportFormat::Pbrt => pbrt::text(scene, settings, &names, &ply::write_meshes(scene, &names, &mut out)?),
        };
        out.write(format.main_file(), main.as_bytes())?;
        mains.push((format, dir.join(format.main_file())));
    }
    Ok(Staged { files: out.files, mains })
}

/// The export folder and the files staged in it so far.
struct Output<'a> {
    dir: &'a Path,
    files: files::FileSet,
    /// The names staged, so a file two formats share (a mesh, a texture) is written once.
    staged: HashSet<String>,
}

impl Output<'_> {
    /// Stages `bytes` as `relative` (inside the folder; its subfolder made by [`stage`]), once.
    fn write(&mut self, relative: &str, bytes: &[u8]) -> Result<(), ExportError> {
        if !self.staged.insert(relative.to_owned()) {
            return Ok(());
        }
        self.files.stage(&self.dir.join(relative), bytes)?;
        Ok(())
    }
}

/// The names every format gives materials and textures: no whitespace or quotes (OBJ, XML and
/// pbrt all split or quote on them), no path separators, each unique.
struct Names {
    /// Per material of the scene.
    materials: Vec<String>,
    /// Per texture of the scene, its file inside the export (`textures/NAME.ext`).
    textures: Vec<String>,
}

impl Names {
    fn of(scene: &Scene) -> Names {
        let mut taken = HashSet::new();
        let materials = scene.materials.iter().map(|m| unique(&sanitise(&m.name), &mut taken)).collect();
        let mut taken = HashSet::new();
        let textures = scene
            .textures
            .iter()
            .map(|t| {
                let file = Path::new(&t.name);
                let stem = file.file_stem().map_or("texture".into(), |s| sanitise(&s.to_string_lossy()));
                let ext = file.extension().map(|e| format!(".{}", sanitise(&e.to_string_lossy()))).unwrap_or_default();
                format!("textures/{}{ext}", unique(&stem, &mut taken))
            })
            .collect();
        Names { materials, textures }
    }
}

/// `name` with every character that is not ASCII alphanumeric, `-`, `_` or `.` replaced by `_`.
fn sanitise(name: &str) -> String {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') { c } else { '_' }).collect();
    if clean.is_empty() { "unnamed".to_owned() } else { clean }
}

/// `name`, or `name_2`, `name_3`… if taken (compared without case: some file systems ignore it).
fn unique(name: &str, taken: &mut HashSet<String>) -> String {
    let mut candidate = name.to_owned();
    let mut k = 2;
    while !taken.insert(candidate.to_ascii_lowercase()) {
        candidate = format!("{name}_{k}");
        k += 1;
    }
    candidate
}

/// Copies each texture's source file into the export as `names.textures` says.
fn copy_textures(scene: &Scene, names: &Names, out: &mut Output) -> Result<(), ExportError> {
    for (texture, name) in scene.textures.iter().zip(&names.textures) {
        let fail = |why: String| ExportError::Texture { path: texture.name.clone(), why };
        let bytes = crate::input::read(Path::new(&texture.name), crate::input::InputKind::Texture)
            .map_err(|e| fail(e.to_string()))?;
        out.write(name, &bytes)?;
    }
    Ok(())
}

/// A direction or colour as three numbers that parse back to the same f32 bits.
fn xyz(v: glam::Vec3, separator: &str) -> String {
    format!("{}{separator}{}{separator}{}", v.x, v.y, v.z)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_sanitised_and_unique() {
        let mut taken = HashSet::new();
        assert_eq!(unique(&sanitise("flake gold"), &mut taken), "flake_gold");
        assert_eq!(unique(&sanitise("flake\tgold"), &mut taken), "flake_gold_2");
        assert_eq!(unique(&sanitise("Flake_Gold"), &mut taken), "Flake_Gold_3");
        assert_eq!(sanitise("a/b\"c<d>"), "a_b_c_d_");
        assert_eq!(sanitise(""), "unnamed");
    }

    const TRIANGLE: &str = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";

    fn malformed(obj: &str) -> (usize, String) {
        match crate::scene::load_obj_str("t.obj", obj, &[]) {
            Err(e @ crate::scene::SceneError::Malformed { line, .. }) => (line, e.to_string()),
            other => panic!("expected a malformed line, got {other:?}"),
        }
    }

    #[test]
    fn reap_directives_set_the_camera_and_sky_and_bad_ones_name_their_line() {
        use glam::Vec3;
        let obj = format!(
            "# reap: camera position 1 2 3 target 0 0.5 0 up 0 0 1 vfov 30.5\n# reap: environment 0.25 0 2\n{TRIANGLE}"
        );
        let scene = crate::scene::load_obj_str("t.obj", &obj, &[]).expect("loads");
        let want = super::super::Camera {
            position: Vec3::new(1.0, 2.0, 3.0),
            target: Vec3::new(0.0, 0.5, 0.0),
            up: Vec3::Z,
            vfov_deg: 30.5,
        };
        assert_eq!((scene.camera, scene.environment), (want, Vec3::new(0.25, 0.0, 2.0)));
        // Absent, the defaults: fitted camera, white sky for an unlit model.
        let plain = crate::scene::load_obj_str("t.obj", TRIANGLE, &[]).expect("loads");
        assert_eq!(plain.environment, Vec3::ONE);

        for (directive, what) in [
            ("# reap: camera position 1 2 target 0 0 0 up 0 1 0 vfov 40", "three finite numbers"),
            ("# reap: camera position 1 2 3 target 0 0 0 up 0 1 0 vfov 0", "vertical field of view"),
            ("# reap: camera position 1 2 3 target 1 2 3 up 0 1 0 vfov 40", "must look somewhere"),
            ("# reap: camera target 0 0 0", "`position` goes"),
            ("# reap: environment 1 -1 1", "non-negative"),
            ("# reap: environment 1 1 1 1", "after its values"),
            ("# reap: lens 35", "unknown `# reap:` directive `lens`"),
        ] {
            let (line, message) = malformed(&format!("{TRIANGLE}{directive}\n"));
            assert_eq!(line, 5, "{message}");
            assert!(message.starts_with("t.obj:5: ") && message.contains(what), "{message}");
        }
    }

    #[test]
    fn pr_gives_the_glossy_roughness_exactly_and_unit_normals_stay_as_written() {
        let mtl = "newmtl g\nillum 2\nKd 0 0 0\nKs 0.5 0.5 0.5\nNs 10\nPr 0.12345679\n";
        // A unit normal whose normalisation would change its last bit is kept.
        let n = (1..100)
            .map(|k| {
                let a = k as f32 / 100.0;
                glam::Vec3::new(a, 0.0, (1.0 - a * a).sqrt())
            })
            .find(|n| n.normalize() != *n && (n.length_squared() - 1.0).abs() <= 1e-6)
            .expect("a unit normal that normalising changes");
        let obj = format!(
            "mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 0 1 0\nvn {} {} {}\nusemtl g\nf 1//1 2//1 3//1\n",
            n.x, n.y, n.z
        );
        let scene = crate::scene::load_obj_str("t.obj", &obj, &[("m.mtl", mtl)]).expect("loads");
        let glossy = scene.materials.iter().find(|m| m.name == "g").expect("g");
        assert_eq!((glossy.kind, glossy.roughness), (crate::scene::MaterialKind::Glossy, 0.12345679));
        assert_eq!(scene.normals[0], [n; 3]);
        let (line, message) = match crate::scene::load_obj_str("t.obj", &obj, &[("m.mtl", "newmtl g\nPr x\n")]) {
            Err(e @ crate::scene::SceneError::Malformed { line, .. }) => (line, e.to_string()),
            other => panic!("expected a malformed line, got {other:?}"),
        };
        assert_eq!(line, 2, "{message}");
    }

    #[test]
    fn formats_parse_by_name() {
        assert_eq!("Mitsuba".parse::<ExportFormat>().ok(), Some(ExportFormat::Mitsuba));
        assert_eq!(" pbrt".parse::<ExportFormat>().ok(), Some(ExportFormat::Pbrt));
        assert!("gltf".parse::<ExportFormat>().unwrap_err().to_string().contains("obj, mitsuba or pbrt"));
    }
}
