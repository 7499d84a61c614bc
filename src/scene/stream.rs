//! The OBJ text as tobj reads it, checked line by line while it streams from the file: the loader
//! never holds more of the file than a few blocks of lines, so its memory is bounded by the mesh
//! it builds.
//!
//! [`ObjStream`] reads the file and, for each line: refuses a file that is not text (a NUL byte, or
//! nothing OBJ — a statement, a comment, a blank line — in its first megabyte) at once; passes a
//! comment longer than [`COMMENT_HELD`] on as an empty one, its text skipped unread; skips the UTF-8 byte-order mark; runs
//! [`ObjScan::scan_line`]; hides polylines (`l`), which tobj would fill in as faces; gives `mtllib`
//! its name after one space, as tobj wants it; and every [`CHUNK_TRIANGLES`] triangles repeats the
//! current object's `o` line, so tobj hands over its faces in chunks instead of holding a whole
//! object's (about 100 bytes a face) until its end. [`checked`] runs it on a thread of its own and
//! hands its output, in blocks, to tobj's `load_obj_buf` through [`Checked`]: checking and parsing
//! each take about half the time, so on two cores they overlap. On the first bad line the stream
//! keeps the error and ends: tobj parses what came before, and the loader returns the error.

use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::SceneError;
use super::scan::{ObjScan, Statement};
use crate::input::{InputError, InputKind};

/// Triangles tobj gathers before the stream makes it hand them over: its index arrays then grow to
/// just under 2^18 entries, so little of their capacity is unused.
const CHUNK_TRIANGLES: usize = (1 << 18) / 3;

/// How far into a file an OBJ statement, comment or blank line must have come: past it, the file
/// is not OBJ text.
const FIRST_STATEMENT_WITHIN: u64 = 1 << 20;

/// The most of a comment line held: past it the rest of the comment is skipped as it streams (a
/// `# reap:` directive, which is read, is far shorter).
const COMMENT_HELD: usize = 64 << 10;

/// About how many bytes of checked lines go to tobj at once, and how many such blocks may wait:
/// enough to keep both threads busy, and a bound on what the hand-over holds.
const BLOCK: usize = 256 << 10;
const BLOCKS_WAITING: usize = 2;

/// The longest line read: far beyond any face a modeller writes, and a bound on what one line costs.
const MAX_LINE: usize = 64 << 20;

pub(super) struct ObjStream<R> {
    input: R,
    /// The file's name in messages.
    file: String,
    /// The most bytes read before the file is too large ([`InputKind::Obj`]'s limit for a file).
    limit: u64,
    scan: ObjScan,
    /// The current line as read (a long comment's as passed on).
    raw: Vec<u8>,
    /// The bytes of the current line read.
    line_bytes: u64,
    /// Lines and bytes read so far.
    lines: usize,
    bytes: u64,
    /// Whether an OBJ statement, a comment or a blank line has been read: the file is OBJ text.
    obj_text: bool,
    /// The name tobj gives the current object, and the triangles it holds since it last handed over.
    object: String,
    chunk_triangles: usize,
}

impl<R: BufRead> ObjStream<R> {
    /// A stream of `input`, named `file` in messages, refused past `limit` bytes.
    pub fn new(file: &str, input: R, limit: u64) -> Self {
        ObjStream {
            input,
            file: file.to_owned(),
            limit,
            scan: ObjScan::default(),
            raw: Vec::new(),
            line_bytes: 0,
            lines: 0,
            bytes: 0,
            obj_text: false,
            object: "unnamed_object".to_owned(),
            chunk_triangles: 0,
        }
    }

    /// Sends the checked lines to `blocks` until the end of the input, the first bad line, or the
    /// reader stopping; returns what the checks collected, or that bad line's error.
    fn run(mut self, blocks: SyncSender<Vec<u8>>) -> Result<ObjScan, SceneError> {
        loop {
            let mut block = Vec::with_capacity(BLOCK);
            let mut more = true;
            while more && block.len() < BLOCK {
                more = self.next_line(&mut block)?;
            }
            // A send fails when tobj stopped reading: it has an error of its own to report.
            if block.is_empty() || blocks.send(block).is_err() || !more {
                return Ok(self.scan);
            }
        }
    }

    /// Reads the next line into `raw` (with its `\n`), or returns false at the end of the input.
    fn read_line(&mut self) -> Result<bool, SceneError> {
        self.raw.clear();
        self.line_bytes = 0;
        // A long comment: the rest of it is read and dropped, `raw` holds an empty comment.
        let mut skipping = false;
        loop {
            let chunk = self
                .input
                .fill_buf()
                .map_err(|source| SceneError::from(InputError::Io { path: PathBuf::from(&self.file), source }))?;
            if chunk.is_empty() {
                return Ok(self.line_bytes > 0);
            }
            // A NUL byte or the end of the line, whichever comes first.
            let found = memchr::memchr2(b'\n', 0, chunk);
            let take = found.map_or(chunk.len(), |i| i + 1);
            if let Some(i) = found.filter(|&i| chunk[i] == 0) {
                let at = self.bytes + self.line_bytes + i as u64;
                return Err(self.not_text(format!("byte {at} (line {}) is a NUL byte", self.lines + 1)));
            }
            let ended = found.is_some();
            if !skipping {
                self.raw.extend_from_slice(&chunk[..take]);
            }
            self.input.consume(take);
            self.line_bytes += take as u64;
            let read = self.bytes + self.line_bytes;
            if read > self.limit {
                let path = PathBuf::from(&self.file);
                return Err(InputError::TooLarge { path, size: read, limit: self.limit, kind: InputKind::Obj }.into());
            }
            let comment = skipping || opens_comment(&self.raw);
            if !skipping && comment && self.raw.len() > COMMENT_HELD && !is_directive(&self.raw) {
                skipping = true;
                self.raw.clear();
                self.raw.push(b'#');
            }
            if !self.obj_text && !comment && read > FIRST_STATEMENT_WITHIN {
                return Err(self.not_text(format!(
                    "its first {FIRST_STATEMENT_WITHIN} bytes hold no OBJ statement (`v`, `f`, `o`, `mtllib` …), \
                     comment or blank line"
                )));
            }
            if self.raw.len() > MAX_LINE {
                return Err(SceneError::Malformed {
                    file: self.file.clone(),
                    line: self.lines + 1,
                    what: format!("the line is longer than {MAX_LINE} bytes"),
                });
            }
            if ended {
                if skipping {
                    self.raw.push(b'\n');
                }
                return Ok(true);
            }
        }
    }

    /// Reads and checks the next line and appends it to `out` as tobj is to read it; false at the end.
    fn next_line(&mut self, out: &mut Vec<u8>) -> Result<bool, SceneError> {
        if !self.read_line()? {
            return Ok(false);
        }
        self.bytes += self.line_bytes;
        self.lines += 1;
        let number = self.lines;
        // tobj would take the byte-order mark as part of the first keyword and drop that line.
        let start = if number == 1 && self.raw.starts_with("\u{FEFF}".as_bytes()) { 3 } else { 0 };
        let malformed = |what: String| SceneError::Malformed { file: self.file.clone(), line: number, what };
        let Ok(text) = std::str::from_utf8(&self.raw[start..]) else {
            return Err(malformed("this line is not UTF-8 text".into()));
        };
        let line = text.strip_suffix('\n').unwrap_or(text);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let statement = self.scan.scan_line(number, line).map_err(malformed)?;
        match statement {
            Statement::None => {}
            Statement::Polyline => out.push(b'\n'),
            Statement::Mtllib(name) => out.extend_from_slice(format!("mtllib {name}\n").as_bytes()),
            Statement::Object(name) => {
                self.object.clear();
                self.object.push_str(name);
                self.chunk_triangles = 0;
            }
            Statement::Face { triangles } => {
                if self.chunk_triangles > 0 && self.chunk_triangles + triangles > CHUNK_TRIANGLES {
                    // The same name and material: only where tobj's faces are held changes.
                    out.extend_from_slice(format!("o {}\n", self.object).as_bytes());
                    self.chunk_triangles = 0;
                }
                self.chunk_triangles += triangles;
            }
            Statement::Other => {}
        }
        let blank_or_comment = matches!(line.trim_start().as_bytes().first(), None | Some(b'#'));
        self.obj_text |= statement != Statement::None || blank_or_comment;
        if !matches!(statement, Statement::Polyline | Statement::Mtllib(_)) {
            out.extend_from_slice(text.as_bytes());
        }
        Ok(true)
    }

    fn not_text(&self, found: String) -> SceneError {
        SceneError::NotText { file: self.file.clone(), found }
    }
}

/// Whether `line` (its start) is a comment: `#` after any byte-order mark and blanks.
fn opens_comment(line: &[u8]) -> bool {
    let line = line.strip_prefix("\u{FEFF}".as_bytes()).unwrap_or(line);
    line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'#')
}

/// Whether comment `line` (its start) is a `# reap:` directive, which is read rather than skipped.
fn is_directive(line: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&line[..line.len().min(64)]);
    let mut words = head.split_whitespace();
    words.next().is_some_and(|w| w.ends_with('#')) && words.next() == Some("reap:")
}

/// Runs `stream` on a thread of its own while `read` takes its checked lines on this one. Returns
/// what `read` returned, and what the stream's checks collected or the first bad line's error.
pub(super) fn checked<R: BufRead + Send, T>(
    stream: ObjStream<R>,
    read: impl FnOnce(&mut Checked) -> T,
) -> (T, Result<ObjScan, SceneError>) {
    let (sender, blocks) = sync_channel(BLOCKS_WAITING);
    std::thread::scope(|scope| {
        let checking = scope.spawn(move || stream.run(sender));
        let mut lines = Checked { blocks, block: Vec::new(), taken: 0 };
        let result = read(&mut lines);
        // Dropped before the join: a stream blocked on sending to a reader that stopped then ends.
        drop(lines);
        let scan = checking.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        (result, scan)
    })
}

/// The checked lines as tobj reads them: the stream's blocks in order, then the end.
pub(super) struct Checked {
    blocks: Receiver<Vec<u8>>,
    block: Vec<u8>,
    taken: usize,
}

impl BufRead for Checked {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        if self.taken == self.block.len() {
            // A closed channel is the end: the stream finished, or stopped at a bad line.
            self.block = self.blocks.recv().unwrap_or_default();
            self.taken = 0;
        }
        Ok(&self.block[self.taken..])
    }

    fn consume(&mut self, amount: usize) {
        self.taken = (self.taken + amount).min(self.block.len());
    }
}

impl Read for Checked {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::obj::{in_memory, parse};

    /// What tobj reads of `obj`, and what the checks made of it.
    fn as_tobj_reads(obj: &[u8], limit: u64) -> (String, Result<ObjScan, SceneError>) {
        checked(ObjStream::new("t.obj", obj, limit), |lines| {
            let mut text = String::new();
            lines.read_to_string(&mut text).map(|_| text).unwrap_or_default()
        })
    }

    #[test]
    fn tobj_reads_no_mark_no_polyline_and_mtllib_after_one_space() {
        let obj = "\u{FEFF}v 0 0 0\nv 1 0 0\r\nv 0 1 0\nl 1 2\nmtllib\t \ta b.mtl\nf 1 2 3";
        let (text, scan) = as_tobj_reads(obj.as_bytes(), u64::MAX);
        assert_eq!(text, "v 0 0 0\nv 1 0 0\r\nv 0 1 0\n\nmtllib a b.mtl\nf 1 2 3");
        let scan = scan.unwrap();
        assert_eq!((scan.polylines, scan.faces_without_normals), (1, 1));
    }

    #[test]
    fn a_long_object_is_handed_over_in_chunks_under_its_own_name() {
        let faces = "f 1 2 3 4\n".repeat(CHUNK_TRIANGLES / 2 + 1);
        let obj = format!("v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\n  g  two words \n{faces}");
        let (text, scan) = as_tobj_reads(obj.as_bytes(), u64::MAX);
        scan.unwrap();
        // tobj names a `g` line all after its first character, trimmed: here `g  two words`.
        assert_eq!(text.matches("\no g  two words\n").count(), 1, "one chunk boundary");
        assert_eq!(text.len(), obj.len() + "o g  two words\n".len());
    }

    #[test]
    fn chunks_keep_each_triangle_its_object_and_material() {
        let mut obj = String::from("mtllib m.mtl\nv 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\no kept\nusemtl red\n");
        obj += &"f 1 2 3 4\n".repeat(CHUNK_TRIANGLES);
        obj += "usemtl blue\nf 1 2 3\no left_out\nf 1 2 4\n";
        let mtl = in_memory(&[("m.mtl", "newmtl red\nKd 1 0 0\nnewmtl blue\nKd 0 0 1\n")]);
        let scene = parse("t.obj", obj.as_bytes(), u64::MAX, &mtl, &|name| name == "kept").unwrap();
        let red = scene.materials.iter().position(|m| m.name == "red").unwrap() as u32;
        let blue = scene.materials.iter().position(|m| m.name == "blue").unwrap() as u32;
        assert_eq!(scene.triangles.len(), 2 * CHUNK_TRIANGLES + 1);
        assert!(scene.material_of[..2 * CHUNK_TRIANGLES].iter().all(|&m| m == red));
        assert_eq!(scene.material_of[2 * CHUNK_TRIANGLES], blue);
    }

    #[test]
    fn a_file_past_its_limit_is_too_large_and_a_nul_names_its_byte() {
        let (_, scan) = as_tobj_reads(b"v 0 0 0\nv 1 0 0\n", 10);
        assert!(matches!(scan, Err(SceneError::Read(InputError::TooLarge { size: 16, limit: 10, .. }))), "{scan:?}");
        let (_, scan) = as_tobj_reads(b"v 0 0 0\nv 1\x000 0\n", u64::MAX);
        let message = scan.err().map(|e| e.to_string()).unwrap_or_default();
        assert_eq!(
            message,
            "t.obj is not OBJ text: byte 11 (line 2) is a NUL byte; give the path of an OBJ scene file"
        );
    }

    #[test]
    fn comments_and_blank_lines_are_obj_text_however_long() {
        let tri = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n";
        for lead in ["# licence\n".repeat(200_000), "\n".repeat(2 << 20), format!("#{}\n", "c".repeat(3 << 20))] {
            let obj = format!("{lead}{tri}");
            let scene = parse("t.obj", obj.as_bytes(), u64::MAX, &in_memory(&[]), &|_| true);
            assert_eq!(scene.expect("comments are OBJ").triangles.len(), 1);
        }
        // A long comment reaches tobj as an empty one; a directive is kept whole.
        let (text, _) = as_tobj_reads(format!("  #{}\n{tri}", "c".repeat(COMMENT_HELD * 2)).as_bytes(), u64::MAX);
        assert_eq!(text, format!("#\n{tri}"));
        assert!(is_directive(b"# reap: environment 1 1 1") && !is_directive(b"# about reap: it renders"));
        // Prose is still not OBJ.
        let (_, scan) = as_tobj_reads("Not a model at all.\n".repeat(100_000).as_bytes(), u64::MAX);
        assert!(matches!(scan, Err(SceneError::NotText { .. })), "{scan:?}");
    }
}
