//! The line checks of OBJ and MTL text that run before tobj parses it: tobj's errors carry no line
//! number, and a few malformed MTL lines (a `Kd` with two numbers) make it panic, so every line
//! tobj would reject (or mishandle) is checked here first and becomes [`SceneError::Malformed`]
//! naming `file:line`. An OBJ file is checked line by line as it streams to tobj
//! ([`ObjScan::scan_line`], called by [`ObjStream`](super::stream::ObjStream)), which also
//! collects what the loader warns about afterwards; an MTL file is small and checked whole.

use std::collections::HashSet;

use glam::Vec3;

use super::{Camera, SceneError};

/// What the line checks of an OBJ file learned so far.
#[derive(Debug, Default)]
pub(super) struct ObjScan {
    /// Each `usemtl` name with the line of its first use, in order of first use.
    pub used_materials: Vec<(String, usize)>,
    pub faces_with_normals: usize,
    pub faces_without_normals: usize,
    /// `l` statements, which the loader hides from tobj (it would fill them in as faces).
    pub polylines: usize,
    /// The last `# reap: camera …` directive, if any (see `obj.rs`).
    pub camera: Option<Camera>,
    /// The last `# reap: environment …` directive, if any.
    pub environment: Option<Vec3>,
    /// The names in `used_materials`, for a quick look-up.
    used: HashSet<String>,
    /// Whether the first `v` had a colour, and its line: tobj needs all or none to have one.
    first_vertex: Option<(bool, usize)>,
    /// Positions, texture coordinates and normals defined so far: OBJ references count back from these.
    counts: [usize; 3],
}

/// What a line that passed the checks is, as far as the stream that feeds tobj cares.
#[derive(Debug, PartialEq)]
pub(super) enum Statement<'a> {
    /// Blank, a comment, or a keyword that is not OBJ: passed on as it is.
    None,
    /// An OBJ statement passed on as it is.
    Other,
    /// A face `f`, which tobj cuts into this many triangles.
    Face { triangles: usize },
    /// A polyline `l`, hidden from tobj.
    Polyline,
    /// `o` or `g`: a new object, with the name tobj gives it.
    Object(&'a str),
    /// `mtllib` naming this library (whatever whitespace came before the name).
    Mtllib(&'a str),
}

/// Keywords of the OBJ format that reap has no use for but that make a file an OBJ file.
const OTHER_KEYWORDS: &[&str] = &[
    "vp",
    "p",
    "s",
    "cstype",
    "deg",
    "bmat",
    "step",
    "curv",
    "curv2",
    "surf",
    "parm",
    "trim",
    "hole",
    "scrv",
    "sp",
    "end",
    "con",
    "mg",
    "bevel",
    "c_interp",
    "d_interp",
    "lod",
    "usemap",
    "maplib",
    "shadow_obj",
    "trace_obj",
    "ctech",
    "stech",
    "call",
    "csh",
];

impl ObjScan {
    /// Checks one line (without its line ending) that tobj would reject, so the error can name
    /// it: `Err` holds what is wrong with line `number`.
    pub fn scan_line<'a>(&mut self, number: usize, line: &'a str) -> Result<Statement<'a>, String> {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("v") => {
                let coloured = check_position(words)?;
                let (first_coloured, first_line) = *self.first_vertex.get_or_insert((coloured, number));
                if coloured != first_coloured {
                    let (this, that) = if coloured { ("a", "none") } else { ("no", "one") };
                    return Err(format!(
                        "this vertex has {this} colour (`v x y z r g b`) but the vertex on line {first_line} has \
                         {that}; the OBJ parser needs a colour on every vertex or on none (reap does not use them)"
                    ));
                }
                self.counts[0] += 1;
                Ok(Statement::Other)
            }
            Some("vt") => {
                check_numbers(&mut words, 2).map_err(|w| format!("`vt` needs two numbers (u v), got `{w}`"))?;
                self.counts[1] += 1;
                Ok(Statement::Other)
            }
            Some("vn") => {
                check_numbers(&mut words, 3).map_err(|w| format!("`vn` needs three numbers (x y z), got `{w}`"))?;
                self.counts[2] += 1;
                Ok(Statement::Other)
            }
            Some(keyword @ ("f" | "l")) => {
                let (mut vertices, mut with_normals) = (0, 0);
                for word in words {
                    with_normals += usize::from(check_reference(word, self.counts)?);
                    vertices += 1;
                }
                if keyword == "l" {
                    self.polylines += 1;
                    return Ok(Statement::Polyline);
                }
                if vertices < 3 {
                    return Err(format!("a face needs at least 3 vertices, this one has {vertices}"));
                }
                if with_normals == vertices {
                    self.faces_with_normals += 1;
                } else {
                    self.faces_without_normals += 1;
                }
                Ok(Statement::Face { triangles: vertices - 2 })
            }
            Some("o" | "g") => {
                // As tobj names it: all after the line's first character, trimmed.
                let first = line.chars().next().map_or(0, char::len_utf8);
                let name = line[first..].trim();
                Ok(Statement::Object(if name.is_empty() { "unnamed_object" } else { name }))
            }
            Some("mtllib") => {
                // tobj takes the name after the first space; a tab would leave it none.
                let name = line.trim_start()["mtllib".len()..].trim();
                if name.is_empty() {
                    return Err("`mtllib` needs a file name".into());
                }
                Ok(Statement::Mtllib(name))
            }
            Some("usemtl") => {
                // The name as tobj takes it: everything after the first space.
                let name = line.split_once(' ').map_or("", |(_, rest)| rest.trim());
                if name.is_empty() {
                    return Err("`usemtl` needs a material name after a space".into());
                }
                if !self.used.contains(name) {
                    self.used.insert(name.to_owned());
                    self.used_materials.push((name.to_owned(), number));
                }
                Ok(Statement::Other)
            }
            Some("#") if line.split_whitespace().nth(1) == Some("reap:") => {
                reap_directive(line.split_whitespace().skip(2), self)?;
                Ok(Statement::None)
            }
            Some(keyword) if OTHER_KEYWORDS.contains(&keyword) => Ok(Statement::Other),
            _ => Ok(Statement::None),
        }
    }
}

/// A `# reap:` comment directive (what `reap scene export` writes for the camera and the sky):
/// `camera position X Y Z target X Y Z up X Y Z vfov DEGREES` or `environment R G B`.
fn reap_directive<'a>(mut words: impl Iterator<Item = &'a str>, scan: &mut ObjScan) -> Result<(), String> {
    let vec3 = |words: &mut dyn Iterator<Item = &'a str>, what: &str| -> Result<Vec3, String> {
        let mut xyz = [0.0; 3];
        for x in &mut xyz {
            *x = words
                .next()
                .and_then(|w| w.parse::<f32>().ok())
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("`# reap:` {what} needs three finite numbers"))?;
        }
        Ok(Vec3::from_array(xyz))
    };
    let keyword = |words: &mut dyn Iterator<Item = &'a str>, want: &str| match words.next() {
        Some(w) if w == want => Ok(()),
        got => Err(format!(
            "`# reap: camera` expects `position X Y Z target X Y Z up X Y Z vfov DEGREES`; found `{}` where `{want}` goes",
            got.unwrap_or("end of line")
        )),
    };
    match words.next() {
        Some("camera") => {
            keyword(&mut words, "position")?;
            let position = vec3(&mut words, "camera position")?;
            keyword(&mut words, "target")?;
            let target = vec3(&mut words, "camera target")?;
            keyword(&mut words, "up")?;
            let up = vec3(&mut words, "camera up")?;
            keyword(&mut words, "vfov")?;
            let vfov_deg =
                words.next().and_then(|w| w.parse::<f32>().ok()).filter(|v| *v > 0.0 && *v < 180.0).ok_or(
                    "`# reap: camera … vfov` needs a vertical field of view in degrees, above 0 and below 180",
                )?;
            if position == target {
                return Err("`# reap: camera` has its position on its target; it must look somewhere".into());
            }
            scan.camera = Some(Camera { position, target, up, vfov_deg });
        }
        Some("environment") => {
            let sky = vec3(&mut words, "environment")?;
            if sky.min_element() < 0.0 {
                return Err("`# reap: environment` needs a non-negative radiance R G B".into());
            }
            scan.environment = Some(sky);
        }
        other => {
            return Err(format!(
                "unknown `# reap:` directive `{}`: reap reads `camera` and `environment`",
                other.unwrap_or("")
            ));
        }
    }
    match words.next() {
        Some(extra) => Err(format!("`# reap:` directive has `{extra}` after its values")),
        None => Ok(()),
    }
}

/// `v x y z`, optionally followed by `w` (non-zero) or by a colour `r g b`, as tobj accepts it.
/// Returns whether it has a colour.
fn check_position(words: std::str::SplitWhitespace) -> Result<bool, String> {
    let usage = "expected `v x y z`, optionally followed by `w` or by a colour `r g b`";
    // Counted as they come, not collected: this runs for every vertex of a large file.
    let (mut count, mut fourth, mut not_number) = (0, "", None);
    for word in words {
        if not_number.is_none() && word.parse::<f32>().is_err() {
            not_number = Some(word);
        }
        if count == 3 {
            fourth = word;
        }
        count += 1;
    }
    if count < 3 {
        return Err(format!("{usage}; got {count} values"));
    }
    // A colour that is not numbers would leave tobj with fewer colours than vertices.
    if let Some(w) = not_number {
        return Err(format!("`{w}` is not a number; {usage}"));
    }
    match count - 3 {
        0 => Ok(false),
        3 => Ok(true),
        1 if fourth.parse::<f32>() == Ok(0.0) => {
            Err("the weight `w` is 0, which would divide the position by zero".into())
        }
        1 => Ok(false),
        _ => Err(format!("{usage}; got {count} values")),
    }
}

/// The first `n` words must be numbers; on failure returns the offending word (or "end of line").
fn check_numbers<'a>(words: &mut impl Iterator<Item = &'a str>, n: usize) -> Result<(), String> {
    for _ in 0..n {
        match words.next() {
            Some(w) if w.parse::<f32>().is_ok() => {}
            Some(w) => return Err(w.to_owned()),
            None => return Err("end of line".to_owned()),
        }
    }
    Ok(())
}

/// One face vertex `v`, `v/vt`, `v//vn` or `v/vt/vn`, each index in range of what is defined so
/// far (1-based; negative counts back from the last). Returns whether it names a normal.
fn check_reference(word: &str, counts: [usize; 3]) -> Result<bool, String> {
    const WHAT: [&str; 3] = ["position", "texture coordinate", "normal"];
    let usage = "expected v, v/vt, v//vn or v/vt/vn";
    // On the stack: this runs for every corner of every face of a large file.
    let mut parts = [""; 3];
    let mut count = 0;
    for part in word.split('/') {
        if count == parts.len() {
            return Err(format!("`{word}` is not a face vertex; {usage}"));
        }
        parts[count] = part;
        count += 1;
    }
    let parts = &parts[..count];
    if parts[0].is_empty() {
        return Err(format!("`{word}` is not a face vertex; {usage}"));
    }
    for (k, part) in parts.iter().enumerate().filter(|(_, p)| !p.is_empty()) {
        let index: isize = part.parse().map_err(|_| format!("`{word}` is not a face vertex; {usage}"))?;
        let in_range = index != 0 && index.unsigned_abs() <= counts[k];
        if !in_range {
            return Err(format!(
                "{} index {index} in `{word}` is out of range: {} defined so far \
                 (indices start at 1; negative ones count back from the last)",
                WHAT[k], counts[k]
            ));
        }
    }
    Ok(parts.len() == 3 && !parts[2].is_empty())
}

/// Checks every MTL line that tobj would reject (or panic on), so the error can name it.
pub(super) fn scan_mtl(file: &str, text: &str) -> Result<(), SceneError> {
    for (i, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        let Some(keyword) = words.next() else { continue };
        let mut number = || words.next().and_then(|w| w.parse::<f32>().ok()).filter(|x| x.is_finite());
        let problem = match keyword {
            "Ka" | "Kd" | "Ks" | "Ke" | "Tf" => {
                let valid = [number(), number(), number()].iter().all(|c| c.is_some_and(|c| c >= 0.0));
                (!valid).then(|| format!("`{keyword}` needs three non-negative numbers (r g b)"))
            }
            "Ns" | "Ni" | "d" | "Tr" | "Pr" => number().is_none().then(|| format!("`{keyword}` needs a number")),
            "illum" => line
                .split_whitespace()
                .nth(1)
                .and_then(|w| w.parse::<u8>().ok())
                .is_none()
                .then(|| "`illum` needs an illumination model number (0 to 10)".to_owned()),
            "newmtl" | "map_Ka" | "map_Kd" | "map_Ks" | "map_Bump" | "map_bump" | "map_Ns" | "map_ns" | "map_NS"
            | "bump" | "map_d" => {
                let what = if keyword == "newmtl" { "material" } else { "file" };
                (line.split_whitespace().count() < 2).then(|| format!("`{keyword}` needs a {what} name"))
            }
            _ => None,
        };
        if let Some(what) = problem {
            return Err(SceneError::Malformed { file: file.to_owned(), line: i + 1, what });
        }
    }
    Ok(())
}
