//! Why a scene could not be loaded. Each message names the file (and line, where there is one) and
//! says what to do; problems that still leave a renderable scene are warnings in
//! [`Scene::warnings`](super::Scene::warnings) instead.

use crate::input::InputError;
use thiserror::Error;

#[derive(Debug, Error)]
pub enum SceneError {
    /// The file could not be opened or read, is not a regular file, or is too large.
    #[error(transparent)]
    Read(#[from] InputError),

    #[error("{file}:{line}: {what}; fix or remove that line")]
    Malformed { file: String, line: usize, what: String },

    /// A NUL byte, or no OBJ statement in the first megabyte: a binary or some other kind of file.
    #[error("{file} is not OBJ text: {found}; give the path of an OBJ scene file")]
    NotText { file: String, found: String },

    /// tobj rejected something the line scan let through; tobj's errors carry no line number.
    #[error("{file}: the OBJ parser (tobj) reports: {what}")]
    Parse { file: String, what: String },

    #[error(
        "{file} has no usable triangles ({skipped} degenerate or non-finite ones were skipped); \
         the path tracer needs at least one `f` face with three distinct, finite vertices"
    )]
    Empty { file: String, skipped: usize },

    #[error("unknown scene `{name}`: give a path to an .obj file or one of the built-in scenes: {known}")]
    UnknownScene { name: String, known: String },
}
