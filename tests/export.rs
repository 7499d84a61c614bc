//! `reap scene export` (issue 32): the OBJ form loads back in reap to the same scene and the same
//! image hash (cornell, sphereflake, a textured OBJ); the Mitsuba XML and the pbrt-v4 file pass
//! small validating readers (no renderer in CI: well-formed, known plugins and directives, every
//! file they name exists, PLY meshes valid and holding every triangle); cornell's text files match
//! golden copies in tests/golden/cornell/ (`REAP_BLESS=1` rewrites them); the CLI refuses to
//! replace an input and names a bad format.

mod binary;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use glam::Vec3;

use reap::compaction::CpuBackend;
use reap::scene::export::{ExportFormat, ExportSettings, export};
use reap::scene::{MaterialKind, Scene};
use reap::trace::layout::{CameraLayout, Packed};
use reap::trace::{Compaction, DESCEND, Engine, Estimator, RenderSettings, Traversal, cpu::CpuEngine, render};

fn temp(name: &str) -> PathBuf {
    binary::temp_dir("export", name)
}

/// The image hash of a CPU render, as `reap render --backend cpu` prints it.
fn image_hash(scene: &Scene, width: u32, height: u32, spp: u32, max_bounces: u32) -> u64 {
    let bvh = reap::bvh::build(&scene.triangles);
    let packed = Packed::new(scene, &bvh);
    let camera = CameraLayout::new(&scene.camera, width, height);
    let mut e = CpuEngine::new(CpuBackend::new(), packed, camera, width, height, 1, max_bounces);
    let s = RenderSettings {
        width,
        height,
        spp,
        max_bounces,
        estimator: Estimator::Mis,
        traversal: Traversal::DepthFirst,
        compact_paths: Compaction::None,
        compact_frontier: Compaction::None,
        seed: 1,
        first_sample: 0,
        max_frontier: 1 << 24,
        fusion: Default::default(),
        descend: DESCEND,
        block_levels: reap::trace::BlockLevels::Auto,
        group_levels: 0,
        bvh: reap::trace::BVH,
    };
    render(&mut e, &s, |_| {}).expect("the scene renders");
    reap::trace::output::hash(&e.image().expect("the image reads back"))
}

/// What a material means to the tracer: its kind and the parameters that kind reads.
fn meaning(m: &reap::scene::Material) -> (MaterialKind, Vec3, Vec3, Option<f32>, Option<f32>, Option<u32>) {
    let roughness = (m.kind == MaterialKind::Glossy).then_some(m.roughness);
    let ior = (m.kind == MaterialKind::Glass).then_some(m.ior);
    (m.kind, m.albedo, m.emission, roughness, ior, m.texture.map(|t| t.0))
}

/// Exports `scene` as OBJ, loads it back, and checks that every triangle, material, the camera,
/// the sky and the rendered image are the same.
fn round_trip(scene: &Scene, name: &str, size: (u32, u32), spp: u32, max_bounces: u32) {
    let dir = temp(name);
    let settings = ExportSettings { width: size.0, height: size.1, spp, max_bounces };
    let main = export(scene, ExportFormat::Obj, &settings, &dir).expect("the scene exports");
    let back = reap::scene::load(&main).expect("the export loads");
    assert!(back.warnings.is_empty(), "{:?}", back.warnings);
    assert_eq!(back.skipped_triangles, 0);
    assert_eq!(back.triangles.len(), scene.triangles.len());
    let first_difference = |what: &str, same: &dyn Fn(usize) -> bool| {
        if let Some(t) = (0..scene.triangles.len()).find(|&t| !same(t)) {
            panic!("{name}: triangle {t}'s {what} differs after the round trip");
        }
    };
    first_difference("positions", &|t| back.triangles[t] == scene.triangles[t]);
    first_difference("normals", &|t| back.normals[t] == scene.normals[t]);
    first_difference("uvs", &|t| back.uvs[t] == scene.uvs[t]);
    first_difference("material", &|t| back.material_of[t] == scene.material_of[t]);
    let meanings = |s: &Scene| s.materials.iter().map(meaning).collect::<Vec<_>>();
    assert_eq!(meanings(&back), meanings(scene), "{name}: materials");
    assert_eq!(back.camera, scene.camera);
    assert_eq!(back.environment, scene.environment);
    assert_eq!(back.textures.len(), scene.textures.len());
    for (a, b) in back.textures.iter().zip(&scene.textures) {
        assert!((a.width, a.height) == (b.width, b.height) && a.texels == b.texels, "{name}: texture {}", b.name);
    }
    assert_eq!(
        image_hash(&back, size.0, size.1, spp, max_bounces),
        image_hash(scene, size.0, size.1, spp, max_bounces),
        "{name}: the exported scene must render the same image"
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn cornell_round_trips_to_the_same_image() {
    let scene = reap::scene::builtin("cornell").expect("cornell");
    round_trip(&scene, "cornell", (64, 48), 4, 5);
}

#[test]
fn sphereflake_round_trips_to_the_same_image() {
    let scene = reap::scene::builtin("sphereflake").expect("sphereflake");
    round_trip(&scene, "sphereflake", (32, 24), 1, 4);
}

/// A square textured by a 2x1 PNG (two colours, so a v or u flip would show) under a white sky.
fn write_textured_obj(dir: &Path) -> PathBuf {
    let obj = "mtllib square.mtl\nv -1 -1 0\nv 2 -1 0\nv 2 2 0\nv -1 2 0\n\
               vt -1 -1\nvt 2 -1\nvt 2 2\nvt -1 2\nusemtl two colours\nf 1/1 2/2 3/3 4/4\n";
    std::fs::write(dir.join("square.obj"), obj).expect("write the OBJ");
    std::fs::write(dir.join("square.mtl"), "newmtl two colours\nKd 0.5 0.5 0.5\nmap_Kd two.png\n").expect("the MTL");
    let png = image::RgbImage::from_fn(2, 1, |x, _| image::Rgb(if x == 0 { [204, 51, 26] } else { [26, 77, 230] }));
    png.save(dir.join("two.png")).expect("write the PNG");
    dir.join("square.obj")
}

#[test]
fn a_textured_obj_round_trips_to_the_same_image() {
    let dir = temp("textured-source");
    let scene = reap::scene::load(write_textured_obj(&dir)).expect("the square loads");
    assert_eq!(scene.textures.len(), 1, "{:?}", scene.warnings);
    round_trip(&scene, "textured", (48, 48), 2, 3);
    std::fs::remove_dir_all(dir).ok();
}

/// A PLY written by the export: its vertex and face counts after checking its header (the
/// `x y z nx ny nz u v` floats, `uchar int` face lists), its length and its indices.
fn check_ply(path: &Path) -> (usize, usize) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let end = bytes.windows(11).position(|w| w == b"end_header\n").expect("a PLY header") + 11;
    let header = std::str::from_utf8(&bytes[..end]).expect("an ASCII header");
    let lines: Vec<&str> = header.lines().filter(|l| !l.starts_with("comment")).collect();
    let count = |element: &str| -> usize {
        let line = lines.iter().find(|l| l.starts_with(&format!("element {element} "))).expect(element);
        line.rsplit(' ').next().and_then(|n| n.parse().ok()).expect("a count")
    };
    let (vertices, faces) = (count("vertex"), count("face"));
    let mut want = vec!["ply", "format binary_little_endian 1.0", ""];
    let vertex_line = format!("element vertex {vertices}");
    want[2] = &vertex_line;
    let props: Vec<String> =
        ["x", "y", "z", "nx", "ny", "nz", "u", "v"].iter().map(|p| format!("property float {p}")).collect();
    want.extend(props.iter().map(String::as_str));
    let face_line = format!("element face {faces}");
    want.extend([face_line.as_str(), "property list uchar int vertex_indices", "end_header"]);
    assert_eq!(lines, want, "{}: header", path.display());
    assert_eq!(bytes.len(), end + 32 * vertices + 13 * faces, "{}: size", path.display());
    let body = &bytes[end + 32 * vertices..];
    for face in body.chunks_exact(13) {
        assert_eq!(face[0], 3, "{}: a triangle", path.display());
        for i in face[1..].chunks_exact(4) {
            let i = i32::from_le_bytes(i.try_into().expect("4 bytes"));
            assert!(i >= 0 && (i as usize) < vertices, "{}: index {i} of {vertices}", path.display());
        }
    }
    (vertices, faces)
}

/// Validates a Mitsuba 3 scene: returns (faces in all meshes, emitters on shapes, constant emitters).
fn check_mitsuba(xml: &Path, max_depth: u32) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(xml).expect("the XML");
    let doc = roxmltree::Document::parse(&text).expect("well-formed XML");
    let root = doc.root_element();
    assert_eq!((root.tag_name().name(), root.attribute("version")), ("scene", Some("3.0.0")));
    let known: HashMap<&str, &[&str]> = HashMap::from([
        ("integrator", &["path"][..]),
        ("sensor", &["perspective"][..]),
        ("sampler", &["independent"][..]),
        ("film", &["hdrfilm"][..]),
        ("rfilter", &["box"][..]),
        ("bsdf", &["twosided", "diffuse", "conductor", "dielectric", "principled"][..]),
        ("texture", &["bitmap"][..]),
        ("shape", &["ply"][..]),
        ("emitter", &["area", "constant"][..]),
    ]);
    let values = ["integer", "float", "string", "boolean", "rgb", "transform", "lookat", "ref"];
    let mut ids = HashSet::new();
    let (mut faces, mut area, mut constant) = (0, 0, 0);
    let dir = xml.parent().expect("a folder");
    for node in root.descendants().filter(|n| n.is_element()) {
        let tag = node.tag_name().name();
        if let Some(types) = known.get(tag) {
            let ty = node.attribute("type").unwrap_or_else(|| panic!("<{tag}> without a type"));
            assert!(types.contains(&ty), "unknown <{tag} type=\"{ty}\">");
            if let Some(id) = node.attribute("id") {
                assert!(ids.insert(id.to_owned()), "id {id} twice");
            }
            match (tag, ty) {
                ("emitter", "area") => area += 1,
                ("emitter", "constant") => constant += 1,
                _ => {}
            }
        } else {
            assert!(values.contains(&tag) || tag == "scene", "unknown element <{tag}>");
        }
        if tag == "rgb" {
            let v = node.attribute("value").expect("an rgb value");
            let parts: Vec<f32> = v.split(',').map(|x| x.trim().parse().expect("a number")).collect();
            assert!(parts.len() == 3 && parts.iter().all(|x| x.is_finite() && *x >= 0.0), "rgb {v}");
        }
        if matches!(tag, "integer" | "float") {
            let v = node.attribute("value").expect("a value");
            assert!(v.parse::<f64>().is_ok_and(f64::is_finite), "<{tag} value=\"{v}\">");
        }
        if tag == "integer" && node.attribute("name") == Some("max_depth") {
            assert_eq!(node.attribute("value"), Some(max_depth.to_string().as_str()));
        }
        if tag == "string" && node.attribute("name") == Some("filename") {
            let file = dir.join(node.attribute("value").expect("a file name"));
            assert!(file.is_file(), "{} is named but missing", file.display());
            if node.parent_element().is_some_and(|p| p.attribute("type") == Some("ply")) {
                faces += check_ply(&file).1;
            }
        }
    }
    for r in root.descendants().filter(|n| n.has_tag_name("ref")) {
        let id = r.attribute("id").expect("a ref id");
        assert!(ids.contains(id), "ref to an undefined id {id}");
    }
    (faces, area, constant)
}

/// pbrt-v4's scene file as tokens: quoted strings (quotes kept), brackets, and bare words.
fn pbrt_tokens(text: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    for line in text.lines() {
        let mut rest = line.trim_start();
        while !rest.is_empty() {
            if rest.starts_with('#') {
                break;
            }
            let end = if let Some(quoted) = rest.strip_prefix('"') {
                1 + quoted.find('"').expect("a closed string") + 1
            } else if rest.starts_with('[') || rest.starts_with(']') {
                1
            } else {
                rest.find(|c: char| c.is_whitespace() || c == '[' || c == ']' || c == '"').unwrap_or(rest.len())
            };
            tokens.push(rest[..end].to_owned());
            rest = rest[end..].trim_start();
        }
    }
    tokens
}

/// Validates a pbrt-v4 scene: returns (faces in all meshes, area lights, infinite lights).
fn check_pbrt(file: &Path, max_depth: u32) -> (usize, usize, usize) {
    let text = std::fs::read_to_string(file).expect("the pbrt file");
    let tokens = pbrt_tokens(&text);
    let dir = file.parent().expect("a folder");
    // Each directive with the number of its positional arguments (numbers or quoted strings).
    let directives: HashMap<&str, usize> = HashMap::from([
        ("Scale", 3),
        ("LookAt", 9),
        ("Camera", 1),
        ("Sampler", 1),
        ("Integrator", 1),
        ("Film", 1),
        ("PixelFilter", 1),
        ("WorldBegin", 0),
        ("LightSource", 1),
        ("Texture", 3),
        ("MakeNamedMaterial", 1),
        ("NamedMaterial", 1),
        ("AttributeBegin", 0),
        ("AttributeEnd", 0),
        ("AreaLightSource", 1),
        ("Shape", 1),
    ]);
    let types = ["integer", "float", "rgb", "string", "bool", "texture", "spectrum", "point3", "normal"];
    let (mut faces, mut area, mut infinite, mut world, mut depth_open) = (0, 0, 0, false, 0i32);
    let mut materials = HashSet::new();
    let mut i = 0;
    while i < tokens.len() {
        let directive = tokens[i].as_str();
        let positional = *directives.get(directive).unwrap_or_else(|| panic!("unknown directive `{directive}`"));
        let args = &tokens[i + 1..i + 1 + positional];
        i += 1 + positional;
        match directive {
            "WorldBegin" => world = true,
            "AttributeBegin" => depth_open += 1,
            "AttributeEnd" => depth_open -= 1,
            "Camera" | "Film" | "Sampler" | "Integrator" | "PixelFilter" | "Scale" | "LookAt" => {
                assert!(!world, "{directive} after WorldBegin")
            }
            "MakeNamedMaterial" => assert!(materials.insert(args[0].clone()), "material {} twice", args[0]),
            "NamedMaterial" => assert!(materials.contains(&args[0]), "undefined material {}", args[0]),
            "AreaLightSource" => area += 1,
            "LightSource" => infinite += usize::from(args[0] == "\"infinite\""),
            _ => {}
        }
        assert!(depth_open >= 0, "AttributeEnd without AttributeBegin");
        // Parameters: "type name" then [ values ].
        while i < tokens.len() && tokens[i].starts_with('"') {
            let decl = tokens[i].trim_matches('"');
            let (ty, _name) = decl.split_once(' ').unwrap_or_else(|| panic!("`{decl}` is not \"type name\""));
            assert!(types.contains(&ty), "unknown parameter type in `{decl}`");
            assert_eq!(tokens.get(i + 1).map(String::as_str), Some("["), "`{decl}` needs [ values ]");
            let close = tokens[i + 2..].iter().position(|t| t == "]").expect("a closing ]") + i + 2;
            let values = &tokens[i + 2..close];
            match ty {
                "integer" => assert!(values.iter().all(|v| v.parse::<i64>().is_ok()), "{decl}: {values:?}"),
                "float" | "rgb" => {
                    assert!(values.iter().all(|v| v.parse::<f64>().is_ok_and(f64::is_finite)), "{decl}: {values:?}")
                }
                "bool" => assert!(values.iter().all(|v| v == "true" || v == "false"), "{decl}: {values:?}"),
                _ => assert!(values.iter().all(|v| v.starts_with('"')), "{decl}: {values:?}"),
            }
            assert!(!values.is_empty() && (ty != "rgb" || values.len() == 3), "{decl}: {values:?}");
            if decl == "integer maxdepth" {
                assert_eq!(values, [max_depth.to_string()]);
            }
            if decl == "string filename" && directive != "Film" {
                let path = dir.join(values[0].trim_matches('"'));
                assert!(path.is_file(), "{} is named but missing", path.display());
                if directive == "Shape" {
                    assert_eq!(args[0], "\"plymesh\"");
                    faces += check_ply(&path).1;
                }
            }
            i = close + 1;
        }
    }
    assert!(world, "no WorldBegin");
    assert_eq!(depth_open, 0, "unbalanced AttributeBegin");
    (faces, area, infinite)
}

/// Emissive materials that have triangles: one area emitter each.
fn emissive_meshes(scene: &Scene) -> usize {
    let used: HashSet<u32> = scene.material_of.iter().copied().collect();
    used.iter().filter(|&&m| scene.materials[m as usize].is_emissive()).count()
}

#[test]
fn mitsuba_and_pbrt_files_are_valid_and_hold_every_triangle() {
    let dir = temp("peers");
    let source = temp("peers-source");
    let textured = reap::scene::load(write_textured_obj(&source)).expect("the square loads");
    let sphereflake = reap::scene::builtin("sphereflake").expect("sphereflake");
    let cornell = reap::scene::builtin("cornell").expect("cornell");
    for (name, scene) in [("cornell", &cornell), ("textured", &textured), ("sphereflake", &sphereflake)] {
        let out = dir.join(name);
        let settings = ExportSettings { width: 40, height: 30, spp: 8, max_bounces: 6 };
        let xml = export(scene, ExportFormat::Mitsuba, &settings, &out).expect("Mitsuba export");
        let pbrt = export(scene, ExportFormat::Pbrt, &settings, &out).expect("pbrt export");
        let lit = emissive_meshes(scene);
        let sky = usize::from(scene.environment != Vec3::ZERO);
        assert_eq!(check_mitsuba(&xml, 7), (scene.triangles.len(), lit, sky), "{name}: Mitsuba");
        assert_eq!(check_pbrt(&pbrt, 6), (scene.triangles.len(), lit, sky), "{name}: pbrt");
    }
    // Every kind of material appears in the sphereflake; the textured square names its texture.
    let xml = std::fs::read_to_string(dir.join("sphereflake/scene.xml")).expect("the XML");
    for kind in ["\"principled\"", "\"conductor\"", "\"dielectric\"", "\"diffuse\""] {
        assert!(xml.contains(kind), "{kind} missing");
    }
    let xml = std::fs::read_to_string(dir.join("textured/scene.xml")).expect("the XML");
    assert!(xml.contains("textures/two.png"), "{xml}");
    std::fs::remove_dir_all(dir).ok();
    std::fs::remove_dir_all(source).ok();
}

/// Cornell's exported text files, compared byte for byte with tests/golden/cornell/ (the PLYs
/// are checked by the readers above). `REAP_BLESS=1` rewrites the golden copies.
#[test]
fn cornell_exports_match_the_golden_files() {
    let dir = temp("golden");
    let scene = reap::scene::builtin("cornell").expect("cornell");
    let settings = ExportSettings { width: 64, height: 48, spp: 16, max_bounces: 8 };
    for format in ExportFormat::ALL {
        export(&scene, format, &settings, &dir).expect("the export");
    }
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/cornell");
    let bless = std::env::var_os("REAP_BLESS").is_some_and(|v| v == "1");
    for file in ["scene.obj", "scene.mtl", "scene.xml", "scene.pbrt"] {
        let got = std::fs::read_to_string(dir.join(file)).expect("the export");
        if bless {
            std::fs::create_dir_all(&golden).expect("the golden folder");
            std::fs::write(golden.join(file), &got).expect("bless");
            continue;
        }
        let want = std::fs::read_to_string(golden.join(file))
            .unwrap_or_else(|e| panic!("{}: {e}; run with REAP_BLESS=1 to write it", golden.join(file).display()));
        assert!(got == want, "{file} differs from tests/golden/cornell/{file}; if the change is meant, REAP_BLESS=1");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn cli_exports_every_format_and_refuses_to_replace_an_input() {
    let dir = temp("cli");
    let out = binary::reap()
        .args(["scene", "export", "--scene", "cornell", "--width", "32", "--height", "24", "--out"])
        .arg(dir.join("all"))
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    for file in ["scene.obj", "scene.mtl", "scene.xml", "scene.pbrt", "meshes/light.ply"] {
        assert!(dir.join("all").join(file).is_file(), "{file} missing");
    }

    // An OBJ scene named scene.obj, exported into its own folder, would be replaced.
    let input = dir.join("all/scene.obj");
    let before = std::fs::read(&input).expect("the input");
    let out = binary::reap()
        .args(["scene", "export", "--format", "obj", "--scene"])
        .arg(&input)
        .arg("--out")
        .arg(dir.join("all"))
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "replacing the input must fail");
    assert!(stderr.contains("writing it would replace it"), "{stderr}");
    assert_eq!(std::fs::read(&input).expect("the input"), before, "the input is untouched");

    let out =
        binary::reap().args(["scene", "export", "--format", "obj,gltf", "--out"]).arg(&dir).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("give obj, mitsuba or pbrt"), "{stderr}");
    std::fs::remove_dir_all(dir).ok();
}
