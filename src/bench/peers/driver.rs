//! What every peer's Python driver shares: the driver is reap's script,
//! written into a temporary folder and run by `$REAP_PYTHON` or `python3`; it
//! writes one JSON report there, or, where the package fails, a report saying
//! at which stage and why. Every way it can fail (no Python, no package, a
//! time-out, a crash, a report that does not parse) is a [`Skipped`] with the
//! reason and how to install, never an error: the bench goes on without it.
//!
//! The driver is a stranger's process: the caller runs it ([`Driver::run`]'s
//! `run`) time-limited, in a process group of its own that is killed on every
//! exit path, with its output kept as a bounded [`Tail`], never whole.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// Why a peer did not run: the exception or failure, with how to install
/// where the package itself is missing.
#[derive(Clone, Debug, PartialEq)]
pub struct Skipped(pub String);

/// How many bytes of the driver's output (stdout and stderr) are kept for its
/// last words: a flood of output costs no more memory than this.
pub const TAIL_BYTES: usize = 64 << 10;

/// The last [`TAIL_BYTES`] bytes a process wrote.
#[derive(Clone, Debug, Default)]
pub struct Tail {
    kept: VecDeque<u8>,
}

impl Tail {
    pub fn push(&mut self, bytes: &[u8]) {
        let bytes = &bytes[bytes.len().saturating_sub(TAIL_BYTES)..];
        let over = (self.kept.len() + bytes.len()).saturating_sub(TAIL_BYTES);
        self.kept.drain(..over);
        self.kept.extend(bytes);
    }

    pub fn bytes(&self) -> Vec<u8> {
        self.kept.iter().copied().collect()
    }
}

/// How the driver's process ended, as the caller's runner saw it.
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself (or by a signal not of reap's), with its last output.
    Exited { status: ExitStatus, output: Vec<u8> },
    /// It ran past the time limit and was killed.
    TimedOut { after: Duration, output: Vec<u8> },
    /// reap was asked to stop (SIGINT, SIGTERM) and killed it.
    Interrupted,
    /// It could not be started.
    NotStarted(std::io::Error),
}

/// The Python that runs the drivers: $REAP_PYTHON, else `python3`.
pub fn python() -> PathBuf {
    std::env::var_os("REAP_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// One peer's driver script and what its messages say.
pub struct Driver {
    /// The peer's name in messages ("Mitsuba").
    pub peer: &'static str,
    /// The script's file name (not the package's: Python would import the script in its place) and text.
    pub script: &'static str,
    pub text: &'static str,
    /// The JSON report the script writes into its folder.
    pub report: &'static str,
    /// How to install the package, for a row skipped without it.
    pub install: &'static str,
    /// The flags that make its work lighter, for a row that timed out.
    pub lighter: &'static str,
}

/// A report that says where the driver failed: `error` at `stage`.
#[derive(serde::Deserialize)]
struct Failure {
    error: Option<String>,
    #[serde(default)]
    stage: String,
}

impl Driver {
    /// Runs the script with `python` and `args` in `work` (an empty folder:
    /// the script's, its report's and whatever else the driver writes) and
    /// reads its report, refused past `most` bytes. `run` runs the command to
    /// its end (bounded, time-limited: see the module's note). A failure the
    /// report names is skipped with the install hint at stage `import`, else
    /// with `hint(stage)`.
    pub fn run<T: serde::de::DeserializeOwned>(
        &self,
        python: &Path,
        work: &Path,
        args: &[OsString],
        most: u64,
        hint: impl Fn(&str) -> String,
        run: impl FnOnce(&mut Command) -> Ended,
    ) -> Result<T, Skipped> {
        let skip = |why: String| Skipped(why);
        let script = work.join(self.script);
        std::fs::write(&script, self.text).map_err(|e| skip(format!("cannot write {}: {e}", script.display())))?;
        let mut command = Command::new(python);
        command.arg(&script).args(args);
        let (status, output) = match run(&mut command) {
            Ended::Exited { status, output } => (status, output),
            Ended::TimedOut { after, output } => {
                return Err(skip(format!(
                    "{} timed out after {} s and was killed (last output: {}); raise --peer-timeout, or lower {}",
                    python.display(),
                    after.as_secs(),
                    tail(&output),
                    self.lighter
                )));
            }
            Ended::Interrupted => return Err(skip("interrupted by a signal; the peer was stopped".into())),
            Ended::NotStarted(e) => {
                return Err(skip(format!(
                    "cannot run {} ({e}): {} needs Python 3; {}",
                    python.display(),
                    self.peer,
                    self.install
                )));
            }
        };
        let json = work.join(self.report);
        let bytes = match read_at_most(&json, most) {
            Ok(bytes) => bytes,
            // No report: the interpreter itself died (a crash in the package, a signal): its last words say why.
            Err(_) => return Err(skip(format!("{} exited with {status}: {}", python.display(), tail(&output)))),
        };
        let failure: Failure = serde_json::from_slice(&bytes).map_err(|e| skip(format!("{}: {e}", json.display())))?;
        if let Some(error) = failure.error {
            let hint = match failure.stage.as_str() {
                "import" => format!("; {}", self.install),
                stage => hint(stage),
            };
            return Err(skip(format!("{} failed at {}: {error}{hint}", self.peer, failure.stage)));
        }
        serde_json::from_slice(&bytes).map_err(|e| skip(format!("{}: {e}", json.display())))
    }
}

/// The file at `path`, refused past `most` bytes (a stranger's file is never read whole blindly).
pub fn read_at_most(path: &Path, most: u64) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?.take(most + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > most {
        return Err(std::io::Error::other(format!("larger than the {most} bytes expected")));
    }
    Ok(bytes)
}

/// The longest line of a process's output quoted in a message.
const QUOTED_LINE: usize = 200;

/// A process's output in one line: its first line that names an error (a
/// crash's own message, before its dump), else its last lines; control
/// characters dropped and each line cut short, so a flood of bytes reads as
/// a short message.
fn tail(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let lines: Vec<String> = text
        .lines()
        .map(|l| {
            let printable: String = l.chars().filter(|c| !c.is_control()).collect();
            let line = printable.trim();
            match line.char_indices().nth(QUOTED_LINE) {
                Some((at, _)) => format!("{}…", &line[..at]),
                None => line.to_string(),
            }
        })
        .filter(|l| !l.is_empty())
        .collect();
    if let Some(error) = lines.iter().find(|l| l.to_ascii_lowercase().contains("error")) {
        return error.clone();
    }
    match lines.len() {
        0 if output.iter().all(u8::is_ascii_whitespace) => "no message".into(),
        0 => format!("{} bytes of no text", output.len()),
        n => lines[n.saturating_sub(3)..].join(" / "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_crash_is_told_by_its_error_line() {
        let dump = b"LLVM ERROR: Cannot select: fminimum\n  0x5: f32 = extract\n\nIn function: drjit_3429\n";
        assert_eq!(tail(dump), "LLVM ERROR: Cannot select: fminimum");
        assert_eq!(tail(b"a\nb\n\nc\nd\n"), "b / c / d");
        assert_eq!(tail(b""), "no message");
        assert_eq!(tail(&[0; 1000]), "1000 bytes of no text", "a flood of NULs is not quoted");
        let long = "x".repeat(10_000);
        assert_eq!(tail(long.as_bytes()).chars().count(), QUOTED_LINE + 1, "a long line is cut");
    }

    #[test]
    fn a_tail_keeps_only_the_last_bytes() {
        let mut t = Tail::default();
        for _ in 0..100 {
            t.push(&[b'a'; 4096]);
        }
        t.push(b"the end");
        let kept = t.bytes();
        assert_eq!(kept.len(), TAIL_BYTES);
        assert!(kept.ends_with(b"aathe end"));
        t.push(&vec![b'z'; 3 * TAIL_BYTES]);
        assert_eq!(t.bytes(), vec![b'z'; TAIL_BYTES]);
    }

    /// A driver run by a stand-in for the runner: `report` is what the script "wrote".
    fn driven(report: &str) -> Result<serde_json::Value, Skipped> {
        let dir = tempfile::tempdir().expect("temp dir");
        let driver = Driver {
            peer: "Peer",
            script: "drive.py",
            text: "",
            report: "peer.json",
            install: "pip install peer",
            lighter: "--work",
        };
        let path = dir.path().join("peer.json");
        let run = |_: &mut Command| {
            std::fs::write(&path, report).expect("report");
            Ended::Exited { status: Command::new("true").status().expect("true"), output: Vec::new() }
        };
        driver.run(Path::new("python3"), dir.path(), &[], 1 << 10, |s| format!("; at {s}"), run)
    }

    #[test]
    fn a_reported_failure_names_its_stage_and_the_install_hint_only_at_import() {
        let Err(Skipped(why)) = driven(r#"{"error": "ModuleNotFoundError: no peer", "stage": "import"}"#) else {
            panic!("a failure at import must skip")
        };
        assert_eq!(why, "Peer failed at import: ModuleNotFoundError: no peer; pip install peer");
        let Err(Skipped(why)) = driven(r#"{"error": "boom", "stage": "step"}"#) else { panic!("must skip") };
        assert_eq!(why, "Peer failed at step: boom; at step");
        assert_eq!(driven(r#"{"ran": 1}"#), Ok(serde_json::json!({"ran": 1})));
        let Err(Skipped(why)) = driven(&"x".repeat(2000)) else { panic!("an oversized report must skip") };
        assert!(why.contains("exited with"), "{why}");
    }
}
