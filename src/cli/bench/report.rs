//! `reap bench report DIR`: report.md and the plots of a stored `reap bench
//! compaction` run, drawn again from its results.json without measuring.

use anyhow::Result;

/// `reap bench report DIR`: the report and plots of a stored run, drawn again.
pub fn run(dir: &std::path::Path) -> Result<bool> {
    use reap::bench::{self, output};
    let stored = output::read_results(dir)?;
    let command = stored.command.unwrap_or_else(|| "(not recorded in results.json)".into());
    let md = bench::report::markdown(&bench::report::Input {
        platform: &stored.platform,
        beside: &stored.beside,
        peer: &stored.cub_peer,
        presets: &stored.presets,
        rows: &stored.rows,
        complete: stored.complete,
        command: &command,
    });
    output::write_atomically(&dir.join("report.md"), md.as_bytes())?;
    let plots = bench::plot::all(dir, &bench::report::plotted(&stored.platform, &stored.rows))?;
    println!("wrote report.md and {} plot files in {} from its results.json", plots.len(), dir.display());
    Ok(true)
}
