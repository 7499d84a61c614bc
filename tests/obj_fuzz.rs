//! The OBJ/MTL loader against hostile input (issue 15): a proptest run over structured OBJ and MTL
//! text mixing valid statements with garbage, huge or negative indices, NaN and infinities,
//! byte-order marks, missing libraries and long faces; and a committed corpus of small nasty files
//! (`tests/fuzz-corpus/`), each named for what it must give: `ok-*` loads, `err-*` is refused.
//! Either way the loader returns, never panics, and a loaded scene is one the tracer can use.

use std::path::Path;

use proptest::prelude::*;
use reap::scene::{Scene, SceneError, load_obj, load_obj_str};

/// What every successful load must hold, whatever the input.
fn check_scene(scene: &Scene) {
    assert!(!scene.triangles.is_empty());
    let n = scene.triangles.len();
    assert_eq!((scene.normals.len(), scene.uvs.len(), scene.material_of.len()), (n, n, n));
    for (tri, normals) in scene.triangles.iter().zip(&scene.normals) {
        assert!(tri.iter().all(|v| v.is_finite()), "{tri:?}");
        assert!(normals.iter().all(|v| v.is_finite() && (v.length() - 1.0).abs() < 1e-3), "{normals:?}");
    }
    assert!(scene.uvs.iter().flatten().all(|uv| uv.is_finite()));
    assert!(scene.material_of.iter().all(|&m| (m as usize) < scene.materials.len()));
    assert!(scene.camera.position.is_finite() && scene.camera.target.is_finite());
}

/// What every refusal must hold: a message, and a line that exists.
fn check_error(e: &SceneError, lines: usize) {
    assert!(!e.to_string().is_empty());
    if let SceneError::Malformed { line, .. } = e {
        assert!((1..=lines.max(1)).contains(line), "line {line} of {lines}: {e}");
    }
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (-10.0f32..10.0).prop_map(|x| x.to_string()),
        1 => Just("nan".to_owned()),
        1 => Just("inf".to_owned()),
        1 => Just("-inf".to_owned()),
        1 => Just("1e39".to_owned()),
        1 => Just("3e38".to_owned()),
        1 => Just("-3e38".to_owned()),
        1 => Just("0".to_owned()),
        1 => Just("x".to_owned()),
        1 => Just("".to_owned()),
    ]
}

fn index() -> impl Strategy<Value = String> {
    let one = prop_oneof![
        6 => (1i64..8).prop_map(|i| i.to_string()),
        2 => (-8i64..0).prop_map(|i| i.to_string()),
        1 => Just("0".to_owned()),
        1 => Just("99999999999999999999999".to_owned()),
        1 => Just(i64::MIN.to_string()),
        1 => Just("".to_owned()),
    ];
    (one.clone(), prop::option::of(one.clone()), prop::option::of(one)).prop_map(|(v, t, n)| match (t, n) {
        (None, None) => v,
        (Some(t), None) => format!("{v}/{t}"),
        (t, Some(n)) => format!("{v}/{}/{n}", t.unwrap_or_default()),
    })
}

fn obj_line() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::collection::vec(number(), 3..=3).prop_map(|n| format!("v {}", n.join(" "))),
        2 => prop::collection::vec(number(), 4..=7).prop_map(|n| format!("v {}", n.join(" "))),
        2 => prop::collection::vec(number(), 2..=2).prop_map(|n| format!("vt {}", n.join(" "))),
        2 => prop::collection::vec(number(), 3..=3).prop_map(|n| format!("vn {}", n.join(" "))),
        8 => prop::collection::vec(index(), 0..6).prop_map(|i| format!("f {}", i.join(" "))),
        1 => prop::collection::vec(index(), 60..200).prop_map(|i| format!("f {}", i.join(" "))),
        2 => prop::collection::vec(index(), 1..5).prop_map(|i| format!("l {}", i.join(" "))),
        1 => prop::collection::vec(index(), 1..3).prop_map(|i| format!("p {}", i.join(" "))),
        2 => "[a-c ]{0,3}".prop_map(|m| format!("usemtl {m}")),
        1 => prop_oneof![Just("a.mtl"), Just("missing.mtl"), Just(""), Just("a.mtl missing.mtl")]
            .prop_map(|l| format!("mtllib {l}")),
        1 => "[og] [a-z ]{0,4}",
        1 => Just("# comment".to_owned()),
        1 => Just(String::new()),
        1 => Just("\u{FEFF}v 0 0 0".to_owned()),
        2 => prop::collection::vec(any::<u8>(), 0..16).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn mtl_line() -> impl Strategy<Value = String> {
    let key = prop_oneof![
        Just("Ka"),
        Just("Kd"),
        Just("Ks"),
        Just("Ke"),
        Just("Tf"),
        Just("Ns"),
        Just("Ni"),
        Just("d"),
        Just("Tr"),
        Just("illum")
    ];
    prop_oneof![
        3 => "[a-c]{0,2}".prop_map(|m| format!("newmtl {m}")),
        6 => (key, prop::collection::vec(number(), 0..4)).prop_map(|(k, n)| format!("{k} {}", n.join(" "))),
        1 => (0u32..300).prop_map(|i| format!("illum {i}")),
        1 => prop_oneof![Just("missing.png"), Just("-s 2 2 1 missing.png"), Just("/dev/zero"), Just("")]
            .prop_map(|f| format!("map_Kd {f}")),
        1 => prop::collection::vec(any::<u8>(), 0..16).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

fn text(line: impl Strategy<Value = String>, max_lines: usize) -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(line, 0..max_lines), any::<bool>()).prop_map(|(bom, lines, crlf)| {
        let end = if crlf { "\r\n" } else { "\n" };
        format!("{}{}", if bom { "\u{FEFF}" } else { "" }, lines.join(end))
    })
}

proptest! {
    // 256 cases of at most 40 OBJ and 20 MTL lines: a few seconds, every CI run.
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fuzz_obj_and_mtl_load_or_refuse_without_panicking(obj in text(obj_line(), 40), mtl in text(mtl_line(), 20)) {
        match load_obj_str("fuzz.obj", &obj, &[("a.mtl", &mtl)]) {
            Ok(scene) => check_scene(&scene),
            Err(e) => check_error(&e, obj.lines().count().max(mtl.lines().count())),
        }
    }
}

#[test]
fn fuzz_corpus_files_load_or_are_refused_as_named() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz-corpus");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("the corpus") {
        let path = entry.expect("a corpus entry").path();
        if path.extension().is_none_or(|e| e != "obj") {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let result = load_obj(&path);
        match (name.starts_with("ok-"), result) {
            (true, Ok(scene)) => check_scene(&scene),
            (false, Err(e)) => {
                let message = e.to_string();
                assert!(message.contains(&*dir.to_string_lossy()), "{name}: the message must name the file: {message}");
            }
            (true, Err(e)) => panic!("{name} should load: {e}"),
            (false, Ok(_)) => panic!("{name} should be refused"),
        }
        seen += 1;
    }
    assert!(seen >= 20, "the corpus has {seen} OBJ files");
}
