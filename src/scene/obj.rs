//! OBJ + MTL loading through tobj, with the checks tobj does not make.
//!
//! The OBJ file streams to tobj through [`ObjStream`], which checks each line as it passes
//! (`scan.rs`) against the rules tobj applies, so the first bad line becomes
//! [`SceneError::Malformed`] naming `file:line`, and a file that is not text is refused at its
//! first NUL byte or after a megabyte with no OBJ statement. The file is never held whole: memory
//! is bounded by the mesh being built, and tobj's meshes move into the scene one array at a time
//! ([`fill_triangles`]). Every file is opened through [`crate::input`], which opens only regular
//! files of bounded size; MTL files are small and read whole. A missing MTL file or an undefined
//! material is only a warning: its faces get [`Material::fallback`], the grey diffuse. A UTF-8
//! byte-order mark is skipped; polylines (`l`) are skipped with a warning, since tobj would fill
//! those of three or four points in as faces.
//!
//! # From MTL to [`Material`]
//!
//! The path tracer has four kinds of surface; an MTL material maps to the first that matches:
//!
//! | MTL | kind | parameters |
//! | --- | --- | --- |
//! | `illum` 4, 6 or 7, or `d` < 1, or `Tr` > 0 | [`Glass`](MaterialKind::Glass) | ior = `Ni` (1.5 if absent), albedo = `Tf` (1 if absent) |
//! | `illum` 3 or 5 | [`Mirror`](MaterialKind::Mirror) | albedo = `Ks` (1 if absent or zero) |
//! | `Ks` non-zero, `Ns` present, `illum` 2 or absent, `Kd` dark (no component above 0.1) | [`Glossy`](MaterialKind::Glossy) | albedo = `Ks`, roughness = `Pr` (PBR MTL) in [0.001, 1] where present, else √(2 / (`Ns` + 2)) in [0.01, 1] |
//! | anything else | [`Diffuse`](MaterialKind::Diffuse) | albedo = `Kd` (0.8 if absent), or `map_Kd` |
//!
//! Every kind emits `Ke` (a light when non-zero). Albedos are clamped to [0, 1] so no surface
//! creates energy.
//!
//! A diffuse material's `map_Kd` (PNG, JPEG or EXR, relative to its MTL file) replaces `Kd`, as
//! pbrt's and Mitsuba's importers do, read through the faces' `vt` (zero where a face has none).
//! One that cannot be read, is too large ([`MAX_TEXELS`](super::MAX_TEXELS)) or sits on another
//! kind is a warning, and `Kd` stays. Other maps (`map_Ka`, `map_Ks`, `map_Bump`…) are ignored.
//!
//! # Camera and sky: `# reap:` directives
//!
//! OBJ has no camera, so reap reads two comment lines that other tools ignore (`reap scene
//! export` writes both): `# reap: camera position X Y Z target X Y Z up X Y Z vfov DEGREES` (vfov
//! is vertical) and `# reap: environment R G B` (the uniform sky's radiance). Without them the
//! camera looks at the model's bounds from +Z and the sky is white for an unlit model, black for
//! a lit one. A malformed directive is [`SceneError::Malformed`] naming its line.
//!
//! File normals are normalised, except one already of unit length (|len² − 1| ≤ 1e-6), which is
//! kept bit for bit, so an exported scene loads back to the same normals.

use std::cell::RefCell;
use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use glam::Vec3;

use super::meshes::{Part, fill_triangles};
use super::scan::scan_mtl;
use super::stream::{ObjStream, checked};
use super::texture::attach_textures;
use super::{Camera, Material, MaterialKind, Scene, SceneError};
use crate::input::{self, InputError, InputKind};

/// Finds the text of an MTL library named by `mtllib`: `Ok((name for messages, text))`.
pub(super) type MtlLookup<'a> = dyn Fn(&Path) -> Result<(String, String), SceneError> + 'a;

/// Loads an OBJ file and the MTL files it names (looked up next to it).
pub fn load_obj(path: &Path) -> Result<Scene, SceneError> {
    let (file, _) = input::open(path, InputKind::Obj)?;
    // One byte past the limit tells a file that grew after `open` checked its size.
    let limit = InputKind::Obj.limit();
    let obj = BufReader::with_capacity(1 << 16, file.take(limit + 1));
    let dir = path.parent().unwrap_or(Path::new(""));
    let libraries = std::cell::RefCell::new(Vec::new());
    let mtl = |lib: &Path| {
        let file = dir.join(lib);
        let read = read_text(&file, InputKind::Mtl).map(|text| (file.display().to_string(), text));
        libraries.borrow_mut().push(file);
        read
    };
    let mut scene = parse(&path.display().to_string(), obj, limit, &mtl, &|_| true)?;
    if let Some(stem) = path.file_stem() {
        scene.name = stem.to_string_lossy().into_owned();
    }
    let textures = scene.textures.iter().map(|t| PathBuf::from(&t.name));
    scene.sources = std::iter::once(path.to_owned()).chain(libraries.into_inner()).chain(textures).collect();
    Ok(scene)
}

/// Loads OBJ text held in memory. `name` stands for the file in messages; `mtl_files` holds the MTL
/// libraries as `(name used by mtllib, text)`.
pub fn load_obj_str(name: &str, obj: &str, mtl_files: &[(&str, &str)]) -> Result<Scene, SceneError> {
    parse(name, obj.as_bytes(), u64::MAX, &in_memory(mtl_files), &|_| true)
}

/// An [`MtlLookup`] over MTL texts held in memory.
pub(super) fn in_memory<'a>(
    mtl_files: &'a [(&'a str, &'a str)],
) -> impl Fn(&Path) -> Result<(String, String), SceneError> + 'a {
    move |lib: &Path| {
        mtl_files
            .iter()
            .find(|(name, _)| Path::new(name) == lib)
            .map(|&(name, text)| (name.to_owned(), text.to_owned()))
            .ok_or_else(|| InputError::Io { path: lib.to_owned(), source: std::io::ErrorKind::NotFound.into() }.into())
    }
}

/// Reads a text file as `kind`; bytes that are not UTF-8 are reported with their line.
fn read_text(path: &Path, kind: InputKind) -> Result<String, SceneError> {
    String::from_utf8(input::read(path, kind)?).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = 1 + valid.iter().filter(|&&b| b == b'\n').count();
        SceneError::Malformed { file: path.display().to_string(), line, what: "this line is not UTF-8 text".into() }
    })
}

/// Builds a scene from OBJ text read from `obj` (refused past `limit` bytes). Objects (`o`/`g`
/// names) for which `keep_object` is false are left out, so a built-in can reuse part of an asset.
pub(super) fn parse(
    file: &str,
    obj: impl BufRead + Send,
    limit: u64,
    mtl: &MtlLookup,
    keep_object: &dyn Fn(&str) -> bool,
) -> Result<Scene, SceneError> {
    // tobj calls the loader from inside its parse and wants a tobj result back, so what we learn
    // there waits in these cells.
    let mtl_warnings = RefCell::new(Vec::new());
    let mtl_error = RefCell::new(None);
    // Each MTL file read, with the materials it defines: their textures are relative to it.
    let mtl_files = RefCell::new(Vec::<(String, Vec<String>)>::new());
    let options =
        tobj::LoadOptions { triangulate: true, ignore_points: true, ignore_lines: true, ..Default::default() };
    let stream = ObjStream::new(file, obj, limit);
    let (loaded, scan) = checked(stream, |lines| {
        tobj::load_obj_buf(lines, &options, |lib| match mtl(lib) {
            Ok((name, mtl_text)) => match scan_mtl(&name, without_bom(&mtl_text)) {
                Ok(()) => tobj::load_mtl_buf(&mut without_bom(&mtl_text).as_bytes()).inspect(|(defined, _)| {
                    mtl_files.borrow_mut().push((name, defined.iter().map(|m| m.name.clone()).collect()));
                }),
                Err(e) => {
                    mtl_error.borrow_mut().get_or_insert(e);
                    Err(tobj::LoadError::MaterialParseError)
                }
            },
            // A missing or unreadable library leaves a renderable scene; one that is a device, a FIFO
            // or too large is a mistake worth stopping for.
            Err(e @ SceneError::Read(InputError::Io { .. })) => {
                mtl_warnings.borrow_mut().push(format!("{file}: {e}; faces using its materials are grey diffuse"));
                Err(tobj::LoadError::OpenFileFailed)
            }
            Err(e) => {
                mtl_error.borrow_mut().get_or_insert(e);
                Err(tobj::LoadError::MaterialParseError)
            }
        })
    });
    // The OBJ line that ended the stream comes first, as it did when the whole file was checked
    // before tobj ran; tobj's own error, without a line, comes last.
    let scan = scan?;
    if let Some(e) = mtl_error.into_inner() {
        return Err(e);
    }
    let mut warnings = Vec::new();
    if scan.polylines > 0 {
        warnings.push(format!(
            "{file}: {} polylines (`l`) skipped: the path tracer renders faces (`f`) only",
            scan.polylines
        ));
    }
    warnings.extend(mtl_warnings.into_inner());
    let (models, mtl_materials) =
        loaded.map_err(|e| SceneError::Parse { file: file.to_owned(), what: e.to_string() })?;
    // An Err here is a missing MTL, already warned about above.
    let mtl_materials = mtl_materials.unwrap_or_default();

    let mut materials: Vec<Material> =
        mtl_materials.iter().map(|m| material_from_mtl(file, m, &mut warnings)).collect();
    let textures = attach_textures(file, &mut materials, &mtl_materials, &mtl_files.into_inner(), &mut warnings);
    let defined: HashSet<&str> = mtl_materials.iter().map(|m| m.name.as_str()).collect();
    let undefined: Vec<&(String, usize)> =
        scan.used_materials.iter().filter(|(name, _)| !defined.contains(name.as_str())).collect();
    match undefined.as_slice() {
        [] => {}
        [(name, line)] => warnings.push(format!(
            "{file}:{line}: material `{name}` is not defined in any MTL file; its faces are grey diffuse"
        )),
        // One line, however many: a file with 20,000 of them must not bury everything else.
        many => {
            const SHOWN: usize = 3;
            let first: Vec<String> = many.iter().take(SHOWN).map(|(n, l)| format!("`{n}` (line {l})")).collect();
            let more = many.len().saturating_sub(SHOWN);
            let more = if more > 0 { format!(" and {more} more") } else { String::new() };
            warnings.push(format!(
                "{file}: {} materials are not defined in any MTL file: {}{more}; their faces are grey diffuse",
                many.len(),
                first.join(", ")
            ));
        }
    }

    let file_normals = if scan.faces_with_normals > 0 && scan.faces_without_normals > 0 {
        warnings.push(format!(
            "{file}: {} faces have normals and {} do not; using geometric normals everywhere",
            scan.faces_with_normals, scan.faces_without_normals
        ));
        false
    } else {
        scan.faces_with_normals > 0
    };

    let mut scene = Scene {
        name: file.to_owned(),
        triangles: Vec::new(),
        normals: Vec::new(),
        uvs: Vec::new(),
        material_of: Vec::new(),
        materials: Vec::new(),
        textures,
        camera: Camera::fit(Vec3::ZERO, Vec3::ONE),
        environment: Vec3::ZERO,
        skipped_triangles: 0,
        warnings: Vec::new(),
        sources: Vec::new(),
    };
    let mut fallback = None;
    let parts: Vec<Part> = models
        .into_iter()
        .filter(|model| keep_object(&model.name))
        .map(|model| {
            let mesh = model.mesh;
            let material = match mesh.material_id {
                Some(id) if id < mtl_materials.len() => id as u32,
                _ => *fallback.get_or_insert_with(|| {
                    materials.push(Material::fallback());
                    materials.len() as u32 - 1
                }),
            };
            let has_normals =
                file_normals && !mesh.normals.is_empty() && mesh.normal_indices.len() == mesh.indices.len();
            let has_uvs = !mesh.texcoords.is_empty() && mesh.texcoord_indices.len() == mesh.indices.len();
            Part::new(mesh, material, has_normals, has_uvs)
        })
        .collect();
    fill_triangles(file, &mut scene, parts)?;
    if scene.triangles.is_empty() {
        return Err(SceneError::Empty { file: file.to_owned(), skipped: scene.skipped_triangles });
    }

    scene.materials = materials;
    let (min, max) = scene.bounds();
    scene.camera = scan.camera.unwrap_or_else(|| Camera::fit(min, max));
    // An unlit model would render black; a white sky shows it, and a lit scene keeps its own light.
    let default_sky = if scene.emitters().is_empty() { Vec3::ONE } else { Vec3::ZERO };
    scene.environment = scan.environment.unwrap_or(default_sky);
    scene.warnings = warnings;
    Ok(scene)
}

/// Text without its UTF-8 byte-order mark: tobj would take it as part of the first keyword and
/// drop that line. The mark sits on line 1, so line numbers stay right.
fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{FEFF}').unwrap_or(text)
}

/// Applies the table in the module documentation.
fn material_from_mtl(file: &str, m: &tobj::Material, warnings: &mut Vec<String>) -> Material {
    let param = |key: &str| -> Option<Vec<f32>> {
        m.unknown_param.get(key).map(|v| v.split_whitespace().filter_map(|w| w.parse().ok()).collect())
    };
    let rgb = |v: Vec<f32>| (v.len() >= 3).then(|| Vec3::new(v[0], v[1], v[2]));
    let kd = m.diffuse.map_or(Vec3::splat(0.8), Vec3::from_array);
    let ks = m.specular.map(Vec3::from_array).filter(|ks| ks.max_element() > 0.0);
    // Older tobj releases leave `Ke` among the unknown parameters.
    let emission = m.emissive.map(Vec3::from_array).or_else(|| param("Ke").and_then(rgb)).unwrap_or(Vec3::ZERO);
    let transmission = param("Tf").and_then(rgb);
    let tr = param("Tr").and_then(|v| v.first().copied());
    let illum = m.illumination_model;

    let glass = matches!(illum, Some(4 | 6 | 7)) || m.dissolve.is_some_and(|d| d < 1.0) || tr.is_some_and(|t| t > 0.0);
    let (kind, albedo, roughness) = if glass {
        (MaterialKind::Glass, transmission.unwrap_or(Vec3::ONE), 0.0)
    } else if matches!(illum, Some(3 | 5)) {
        (MaterialKind::Mirror, ks.unwrap_or(Vec3::ONE), 0.0)
    } else {
        match (ks, m.shininess, illum) {
            (Some(ks), Some(ns), None | Some(2)) if kd.max_element() <= 0.1 => {
                // PBR MTL's `Pr` is the roughness itself; Ns goes through Phong's exponent.
                let pr = param("Pr").and_then(|v| v.first().copied());
                let roughness = match pr {
                    Some(pr) => pr.clamp(crate::trace::bsdf::ALPHA_MIN, 1.0),
                    None => (2.0 / (ns.max(0.0) + 2.0)).sqrt().clamp(0.01, 1.0),
                };
                (MaterialKind::Glossy, ks, roughness)
            }
            _ => (MaterialKind::Diffuse, kd, 1.0),
        }
    };

    let ior = match m.optical_density {
        Some(ni) if ni > 0.0 => ni,
        Some(ni) => {
            warnings.push(format!("{file}: material `{}` has Ni {ni}; using 1.5", m.name));
            1.5
        }
        None => 1.5,
    };
    if albedo.max_element() > 1.0 {
        warnings.push(format!(
            "{file}: material `{}` reflects more light than it receives (albedo {albedo}); clamped to 1",
            m.name
        ));
    }
    // map_Kd is resolved by the caller, which knows the MTL file's folder.
    let textures = [
        ("map_Ka", &m.ambient_texture),
        ("map_Ks", &m.specular_texture),
        ("map_Bump", &m.normal_texture),
        ("map_Ns", &m.shininess_texture),
        ("map_d", &m.dissolve_texture),
    ];
    for (keyword, texture) in textures {
        if let Some(texture) = texture {
            warnings.push(format!(
                "{file}: material `{}`: textures are not supported; {keyword} `{texture}` is ignored",
                m.name
            ));
        }
    }

    Material {
        name: m.name.clone(),
        kind,
        albedo: albedo.clamp(Vec3::ZERO, Vec3::ONE),
        emission,
        roughness,
        ior: if kind == MaterialKind::Glass { ior } else { 1.0 },
        texture: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const QUAD: &str = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n";

    fn load(obj: &str, mtl: &str) -> Result<Scene, SceneError> {
        load_obj_str("test.obj", obj, &[("test.mtl", mtl)])
    }

    fn malformed_line(result: Result<Scene, SceneError>) -> (usize, String) {
        match result {
            Err(e @ SceneError::Malformed { line, .. }) => (line, e.to_string()),
            other => panic!("expected a malformed-line error, got {other:?}"),
        }
    }

    #[test]
    fn quad_is_two_triangles_with_geometric_normals_and_a_white_sky() {
        let scene = load(&format!("{QUAD}f 1 2 3 4\n"), "").unwrap();
        assert_eq!(scene.triangles.len(), 2);
        assert_eq!(scene.normals[0], [Vec3::Z; 3]);
        assert_eq!(scene.materials, vec![Material::fallback()]);
        assert_eq!(scene.environment, Vec3::ONE, "an unlit OBJ must stay visible");
        assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
    }

    #[test]
    fn malformed_lines_are_reported_with_their_number() {
        let cases = [
            ("v 0 0 0\nv 1 x 0\n", 2, "`x` is not a number"),
            ("v 0 0 0\nv 1 0 0\nvn 0 0\n", 3, "`vn` needs three numbers"),
            (&format!("{QUAD}f 1 2 5\n"), 5, "position index 5"),
            (&format!("{QUAD}f 1 2 -5\n"), 5, "position index -5"),
            (&format!("{QUAD}f 1 0 3\n"), 5, "position index 0"),
            (&format!("{QUAD}f 1 2\n"), 5, "at least 3 vertices"),
            (&format!("{QUAD}f 1//1 2//1 3//1\n"), 5, "normal index 1"),
            (&format!("{QUAD}f 1/a 2 3\n"), 5, "not a face vertex"),
            (&format!("{QUAD}\nusemtl\nf 1 2 3\n"), 6, "`usemtl` needs a material name"),
        ];
        for (obj, line, what) in cases {
            let (got, message) = malformed_line(load(obj, ""));
            assert_eq!(got, line, "{message}");
            assert!(message.starts_with(&format!("test.obj:{line}: ")), "{message}");
            assert!(message.contains(what), "{message} should say {what}");
        }
    }

    #[test]
    fn relative_indices_and_normals_are_used() {
        let obj = format!("{QUAD}vn 0 0 -2\nf -4//1 -3//1 -2//1\n");
        let scene = load(&obj, "").unwrap();
        assert_eq!(scene.triangles[0], [Vec3::ZERO, Vec3::X, Vec3::new(1.0, 1.0, 0.0)]);
        assert_eq!(scene.normals[0], [Vec3::NEG_Z; 3], "the file's normals, normalised");
    }

    #[test]
    fn malformed_mtl_is_an_error_naming_the_mtl_line_not_a_panic() {
        let obj = format!("mtllib test.mtl\n{QUAD}usemtl a\nf 1 2 3\n");
        let (line, message) = malformed_line(load(&obj, "newmtl a\nKd 0.5 0.5\n"));
        assert_eq!(line, 2);
        assert!(message.starts_with("test.mtl:2: `Kd` needs three"), "{message}");
    }

    #[test]
    fn missing_mtl_and_material_are_warnings_with_the_grey_default() {
        let obj = format!("mtllib nowhere.mtl\n{QUAD}usemtl red\nf 1 2 3\n");
        let scene = load(&obj, "").unwrap();
        assert_eq!(scene.materials, vec![Material::fallback()]);
        assert_eq!(scene.warnings.len(), 2, "{:?}", scene.warnings);
        assert!(scene.warnings[0].contains("nowhere.mtl"), "{:?}", scene.warnings);
        assert!(scene.warnings[1].contains("test.obj:6: material `red` is not defined"), "{:?}", scene.warnings);

        let obj = format!("mtllib test.mtl\n{QUAD}usemtl blue\nf 1 2 3\n");
        let scene = load(&obj, "newmtl red\nKd 1 0 0\n").unwrap();
        assert_eq!(scene.material_of, vec![1]);
        assert_eq!(scene.materials[1], Material::fallback());
        assert!(scene.warnings[0].contains("`blue` is not defined"), "{:?}", scene.warnings);
    }

    #[test]
    fn missing_file_names_the_path() {
        let message = load_obj(Path::new("/no/such/dir/model.obj")).unwrap_err().to_string();
        assert!(message.contains("/no/such/dir/model.obj"), "{message}");
    }

    #[test]
    fn degenerate_and_non_finite_triangles_are_skipped_and_counted() {
        let obj = format!("{QUAD}v 2 0 0\nv nan 0 0\nf 1 2 3\nf 1 2 5\nf 1 2 6\nf 1 1 3\n");
        let scene = load(&obj, "").unwrap();
        assert_eq!(scene.triangles.len(), 1);
        assert_eq!(scene.skipped_triangles, 3);

        let err = load(&format!("{QUAD}f 1 1 2\n"), "").unwrap_err();
        assert!(matches!(err, SceneError::Empty { skipped: 1, .. }), "{err}");
    }

    #[test]
    fn mtl_maps_to_each_kind() {
        let mtl = "\
newmtl matte\nKd 0.5 0.25 0.125\n\
newmtl lamp\nKd 0 0 0\nKe 10 9 8\n\
newmtl chrome\nillum 3\nKs 0.9 0.9 0.9\n\
newmtl silver\nillum 5\n\
newmtl window\nillum 2\nd 0.5\nNi 1.33\nTf 0.9 1 0.9\n\
newmtl tr\nTr 0.2\n\
newmtl plastic\nillum 2\nKd 0.01 0.01 0.01\nKs 0.7 0.7 0.7\nNs 198\n\
newmtl painted\nKd 0.6 0.6 0.6\nKs 0.5 0.5 0.5\nNs 96\nmap_Kd wood.png\n";
        let names = ["matte", "lamp", "chrome", "silver", "window", "tr", "plastic", "painted"];
        let mut obj = format!("mtllib test.mtl\n{QUAD}");
        for name in names {
            obj += &format!("usemtl {name}\nf 1 2 3\n");
        }
        let scene = load(&obj, mtl).unwrap();
        let by_name = |n: &str| scene.materials.iter().find(|m| m.name == n).unwrap().clone();

        assert_eq!(by_name("matte").kind, MaterialKind::Diffuse);
        assert_eq!(by_name("matte").albedo, Vec3::new(0.5, 0.25, 0.125));
        assert_eq!(by_name("lamp").emission, Vec3::new(10.0, 9.0, 8.0));
        assert_eq!((by_name("chrome").kind, by_name("chrome").albedo), (MaterialKind::Mirror, Vec3::splat(0.9)));
        assert_eq!((by_name("silver").kind, by_name("silver").albedo), (MaterialKind::Mirror, Vec3::ONE));
        let window = by_name("window");
        assert_eq!((window.kind, window.ior, window.albedo), (MaterialKind::Glass, 1.33, Vec3::new(0.9, 1.0, 0.9)));
        assert_eq!(
            (by_name("tr").kind, by_name("tr").ior, by_name("tr").albedo),
            (MaterialKind::Glass, 1.5, Vec3::ONE)
        );
        let plastic = by_name("plastic");
        assert_eq!(plastic.kind, MaterialKind::Glossy);
        assert!((plastic.roughness - 0.1).abs() < 1e-6, "{}", plastic.roughness);
        assert_eq!(by_name("painted").kind, MaterialKind::Diffuse, "a bright Kd stays diffuse");
        assert_eq!(by_name("painted").texture, None, "wood.png does not exist");
        assert!(
            scene.warnings.iter().any(|w| w.contains("map_Kd `wood.png` is not used, cannot read it")),
            "{:?}",
            scene.warnings
        );
        assert_eq!(scene.environment, Vec3::ZERO, "a lit scene keeps its own light");
        assert_eq!(scene.emitters(), vec![1]);
    }
    #[test]
    fn item8_byte_order_mark_is_skipped_and_line_numbers_stay_right() {
        let scene = load("\u{FEFF}v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 3\n", "").unwrap();
        assert_eq!(scene.triangles.len(), 1, "the first vertex must not be dropped");
        let (line, message) = malformed_line(load("\u{FEFF}v 0 0 0\nv 1 x 0\n", ""));
        assert_eq!(line, 2, "{message}");

        let obj = format!("mtllib test.mtl\n{QUAD}usemtl red\nf 1 2 3\n");
        let scene = load(&obj, "\u{FEFF}newmtl red\nKd 1 0 0\n").unwrap();
        assert_eq!(scene.materials[0].name, "red");
        assert!(scene.warnings.is_empty(), "{:?}", scene.warnings);
    }

    #[test]
    fn item8_polylines_are_skipped_with_one_warning_not_filled_in() {
        let scene = load(&format!("{QUAD}f 1 2 3\nl 1 2 3\nl 1 2 3 4\nl 3 4\n"), "").unwrap();
        assert_eq!(scene.triangles.len(), 1, "only the face is drawn");
        assert_eq!(
            scene.warnings,
            vec!["test.obj: 3 polylines (`l`) skipped: the path tracer renders faces (`f`) only".to_owned()]
        );
        // The polylines are still checked, and a line after them is still named right.
        let (line, _) = malformed_line(load(&format!("{QUAD}l 1 9\n"), ""));
        assert_eq!(line, 5);
        let (line, _) = malformed_line(load(&format!("{QUAD}l 1 2 3\nf 1 2 7\n"), ""));
        assert_eq!(line, 6);
    }

    #[test]
    fn item8_vertex_colours_on_some_vertices_name_the_line() {
        let (line, message) = malformed_line(load("v 0 0 0 1 0 0\nv 1 0 0 0 1 0\nv 1 1 0\nf 1 2 3\n", ""));
        assert_eq!(line, 3, "{message}");
        assert_eq!(
            message,
            "test.obj:3: this vertex has no colour (`v x y z r g b`) but the vertex on line 1 has one; the OBJ \
             parser needs a colour on every vertex or on none (reap does not use them); fix or remove that line"
        );
        let (line, message) = malformed_line(load("v 0 0 0\nv 1 0 0 0 1 0\nv 1 1 0\nf 1 2 3\n", ""));
        assert_eq!(line, 2, "{message}");
        let (line, message) = malformed_line(load("v 0 0 0 1 0 x\n", ""));
        assert_eq!(line, 1, "{message}");
        // All or none is fine; reap does not use the colours.
        let scene = load("v 0 0 0 1 0 0\nv 1 0 0 0 1 0\nv 1 1 0 0 0 1\nf 1 2 3\n", "").unwrap();
        assert_eq!(scene.triangles.len(), 1);
    }

    #[test]
    fn item8_twenty_thousand_undefined_materials_are_one_warning() {
        let mut obj = String::from(QUAD);
        for m in 0..20_000 {
            obj += &format!("usemtl m{m}\nf 1 2 3\n");
        }
        let scene = load(&obj, "").unwrap();
        assert_eq!(scene.warnings.len(), 1, "{:?}", &scene.warnings[..scene.warnings.len().min(3)]);
        let warning = &scene.warnings[0];
        assert!(
            warning
                .starts_with("test.obj: 20000 materials are not defined in any MTL file: `m0` (line 5), `m1` (line 7)"),
            "{warning}"
        );
        assert!(warning.contains("and 19997 more; their faces are grey diffuse"), "{warning}");
    }

    #[cfg(unix)]
    #[test]
    fn item1_mtllib_dev_zero_is_refused() {
        let dir = std::env::temp_dir().join(format!("reap-obj-test-{}-devzero", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let obj = dir.join("zero.obj");
        std::fs::write(&obj, format!("mtllib /dev/zero\n{QUAD}f 1 2 3\n")).unwrap();
        let message = load_obj(&obj).unwrap_err().to_string();
        assert_eq!(
            message,
            "cannot read /dev/zero: it is a character device, not a regular file; \
             give the path of an MTL material library file"
        );
    }
}
