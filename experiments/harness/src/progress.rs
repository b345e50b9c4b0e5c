//! Progress lines on stderr, e.g. `[3/21 14.2s] chicago UM+F: ingesting 1,500,000 records`.
//!
//! An experiment announces each cell of its grid with [`Progress::begin`] (after telling the total
//! with [`Progress::set_total`]) and may report from long loops with [`Progress::tick`] or
//! [`Progress::count`] (which adds operations per second and an ETA), both printing at most twice
//! a second. `quiet` prints nothing. Progress is shared by reference and is `Sync`, so worker
//! threads can tick too.
//!
//! In the plain lines, each cell of a sweep's grid says its position and an estimate of the time
//! left, from the mean time of the cells this process has finished:
//! `[12.1s] cell 4/27 (ETA 1m 21s): datasets=gowalla strategies=UM+BV`. A step counter `[i/n ...]`
//! is shown only when a cell has more than one step.
//!
//! On a terminal, [`Progress::new`] draws one `indicatif` bar per run instead: cells done of the
//! grid, cells per second, an ETA, and the current cell with the experiment's latest line. When
//! stderr is not a terminal (CI logs, tests, `2> file`) it keeps the plain lines.

use parking_lot::Mutex;
use std::fmt::Display;
use std::io::Write;
use std::time::{Duration, Instant};

/// The shortest gap between two [`Progress::tick`] lines.
pub const TICK_INTERVAL: Duration = Duration::from_millis(500);

struct State {
    total: usize,
    step: usize,
    label: String,
    last_line: Option<Instant>,
    sink: Box<dyn Write + Send>,
    /// The current cell's label, shown on the bar.
    cell: String,
    /// The first [`Progress::count`] of the current step: when, and how much was done then. The
    /// rate is measured from it, so a step's set-up time does not dilute it.
    count_base: Option<(Instant, u64)>,
    /// When this process started its first cell, and how many cells it has finished since.
    cells_start: Option<Instant>,
    cells_done: usize,
}

/// Reports how far a run has got.
pub struct Progress {
    quiet: bool,
    start: Instant,
    state: Mutex<State>,
    /// The bar, when stderr is a terminal.
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// Progress on stderr; `quiet` prints nothing. A bar on a terminal, plain lines otherwise.
    pub fn new(quiet: bool) -> Self {
        use std::io::IsTerminal;
        let mut progress = Progress::with_sink(quiet, Box::new(std::io::stderr()));
        if !quiet && std::io::stderr().is_terminal() {
            let bar = indicatif::ProgressBar::new(1);
            let style = indicatif::ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:24} {pos}/{len} cells, {per_sec}, ETA {eta}  {msg}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(500));
            progress.bar = Some(bar);
        }
        progress
    }

    /// Removes the bar (if any) at the end of a run.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }

    /// Progress that prints nothing (for tests and library callers).
    pub fn silent() -> Self {
        Progress::new(true)
    }

    /// Progress into any writer (tests read the lines back).
    pub fn with_sink(quiet: bool, sink: Box<dyn Write + Send>) -> Self {
        Progress {
            quiet,
            start: Instant::now(),
            state: Mutex::new(State {
                total: 0,
                step: 0,
                label: String::new(),
                last_line: None,
                sink,
                cell: String::new(),
                count_base: None,
                cells_start: None,
                cells_done: 0,
            }),
            bar: None,
        }
    }

    /// Progress whose plain lines are kept in memory, with the handle that reads them back (for
    /// tests of what a run reports).
    pub fn captured() -> (Progress, ProgressLines) {
        let lines = ProgressLines::default();
        (Progress::with_sink(false, lines.sink()), lines)
    }

    /// Whether progress lines are suppressed (`--quiet`).
    pub fn is_quiet(&self) -> bool {
        self.quiet
    }

    /// Time since the progress was created (the run's start).
    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Sets how many steps (cells) the run has, shown as the `/21` of `[3/21 ...]`.
    pub fn set_total(&self, total: usize) {
        self.lock().total = total;
    }

    /// Starts cell `position` of `total` of a run's grid ([`crate::cells`]) and prints
    /// `[t] cell 3/12: datasets=chicago strategies=UM+F`; the experiment's own steps count afresh
    /// inside it. Nothing is printed for a run of one cell with an empty label (a grid of one cell);
    /// a shard or resumed run left with one cell of a larger grid still says which it is.
    pub fn cell(&self, position: usize, total: usize, label: &str) {
        let shown = total > 1 || !label.is_empty();
        let mut state = self.lock();
        state.step = 0;
        state.total = 0;
        state.label = String::new();
        let eta = match state.cells_start {
            Some(start) if state.cells_done > 0 => {
                let mean = start.elapsed().as_secs_f64() / state.cells_done as f64;
                Some(mean * (total + 1).saturating_sub(position) as f64)
            }
            _ => None,
        };
        state.cells_start.get_or_insert_with(Instant::now);
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(position.saturating_sub(1) as u64);
            bar.set_message(label.to_string());
            state.cell = if shown { label.to_string() } else { String::new() };
            return;
        }
        if shown {
            let eta = eta
                .map(|s| format!(" (ETA {})", format_duration(s)))
                .unwrap_or_default();
            self.print(&mut state, &format!("cell {position}/{total}{eta}: {label}"));
        }
    }

    /// Counts the current cell as done (moves the bar, and feeds the plain lines' ETA) and prints
    /// `[t] done: summary` (what the cell cost, from the runner), outside the cell's steps.
    pub fn cell_done(&self, summary: impl Display) {
        let mut state = self.lock();
        state.cells_done += 1;
        state.step = 0;
        state.label.clear();
        self.print(&mut state, &format!("done: {summary}"));
        drop(state);
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Starts the next step and prints `[i/n t] label`.
    pub fn begin(&self, label: impl Display) {
        let mut state = self.lock();
        state.step += 1;
        state.count_base = None;
        state.label = label.to_string();
        let line = state.label.clone();
        self.print(&mut state, &line);
    }

    /// Prints `[i/n t] label: message` now, whatever the rate.
    pub fn message(&self, message: impl Display) {
        let mut state = self.lock();
        let line = Self::with_label(&state.label, &message.to_string());
        self.print(&mut state, &line);
    }

    /// Prints `[i/n t] label: message` unless a line was printed less than [`TICK_INTERVAL`] ago.
    /// The message is only built when it is printed, so calling this every few thousand operations
    /// is cheap: `progress.tick(|| format!("ingesting {} records", thousands(n)))`.
    pub fn tick<M: Display>(&self, message: impl FnOnce() -> M) {
        if self.quiet {
            return;
        }
        let mut state = self.lock();
        if state.last_line.is_some_and(|t| t.elapsed() < TICK_INTERVAL) {
            return;
        }
        let line = Self::with_label(&state.label, &message().to_string());
        self.print(&mut state, &line);
    }

    /// A rate-limited line like [`Progress::tick`] for a loop that counts work:
    /// `12,000 / 20,000 operations, 45,210 ops/s, ETA 0.2s`. The rate is measured from the step's
    /// first call (after the last [`Progress::begin`]); the ETA needs `total`.
    pub fn count(&self, done: u64, total: Option<u64>, unit: &str) {
        if self.quiet {
            return;
        }
        let mut state = self.lock();
        let (since, base) = *state.count_base.get_or_insert((Instant::now(), done));
        if state.last_line.is_some_and(|t| t.elapsed() < TICK_INTERVAL) {
            return;
        }
        let secs = since.elapsed().as_secs_f64();
        let line = Self::with_label(&state.label, &count_line(done, base, total, unit, secs));
        self.print(&mut state, &line);
    }

    fn with_label(label: &str, message: &str) -> String {
        if label.is_empty() {
            message.to_string()
        } else {
            format!("{label}: {message}")
        }
    }

    fn lock(&self) -> parking_lot::MutexGuard<'_, State> {
        // parking_lot locks do not poison: a panic while printing leaves nothing half-updated
        // that matters, and the next line is printed as usual.
        self.state.lock()
    }

    fn print(&self, state: &mut State, text: &str) {
        if self.quiet {
            return;
        }
        if let Some(bar) = &self.bar {
            // On the bar: the cell, then the experiment's latest line.
            bar.set_message(if state.cell.is_empty() {
                text.to_string()
            } else {
                format!("{} | {text}", state.cell)
            });
            state.last_line = Some(Instant::now());
            return;
        }
        // A counter says something only when a cell has several steps: `[1/1 ...]` does not.
        let prefix = match (state.step, state.total) {
            (0, _) | (_, 1) => String::new(),
            (step, 0) => format!("{step} "),
            (step, total) => format!("{step}/{total} "),
        };
        let secs = self.start.elapsed().as_secs_f64();
        let _ = writeln!(state.sink, "[{prefix}{}] {text}", format_seconds(secs));
        let _ = state.sink.flush();
        state.last_line = Some(Instant::now());
    }
}

/// Progress lines kept in memory ([`Progress::captured`]); clones share the same buffer.
#[derive(Clone, Default)]
pub struct ProgressLines(std::sync::Arc<Mutex<Vec<u8>>>);

impl ProgressLines {
    /// A sink for [`Progress::with_sink`] that writes into these lines.
    pub fn sink(&self) -> Box<dyn Write + Send> {
        Box::new(self.clone())
    }

    /// Everything printed so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock()).into_owned()
    }

    /// Everything printed so far, line by line.
    pub fn lines(&self) -> Vec<String> {
        self.text().lines().map(String::from).collect()
    }
}

impl Write for ProgressLines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn format_seconds(secs: f64) -> String {
    if secs < 100.0 {
        format!("{secs:.1}s")
    } else {
        format!("{secs:.0}s")
    }
}

/// `done / total unit, rate unit/s, ETA t` for [`Progress::count`]: `done - base` was done in
/// `secs`.
fn count_line(done: u64, base: u64, total: Option<u64>, unit: &str, secs: f64) -> String {
    let mut line = match total {
        Some(total) => format!("{} / {} {unit}", thousands(done), thousands(total)),
        None => format!("{} {unit}", thousands(done)),
    };
    if secs > 0.0 && done > base {
        let rate = (done - base) as f64 / secs;
        let per = if unit == "operations" { "ops" } else { unit };
        line.push_str(&format!(", {} {per}/s", thousands(rate.round() as u64)));
        if let Some(total) = total.filter(|t| *t >= done) {
            let left = (total - done) as f64 / rate;
            line.push_str(&format!(", ETA {}", format_duration(left)));
        }
    }
    line
}

/// Seconds as `0.4s`, `42s`, `3m 05s` or `2h 07m`.
fn format_duration(secs: f64) -> String {
    let secs = secs.max(0.0);
    if secs < 10.0 {
        format!("{secs:.1}s")
    } else if secs < 60.0 {
        format!("{secs:.0}s")
    } else if secs < 3600.0 {
        let s = secs.round() as u64;
        format!("{}m {:02}s", s / 60, s % 60)
    } else {
        let m = (secs / 60.0).round() as u64;
        format!("{}h {:02}m", m / 60, m % 60)
    }
}

/// `1500000` -> `1,500,000`.
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_carry_step_total_time_label_and_message() {
        let (progress, out) = Progress::captured();
        progress.set_total(21);
        progress.begin("chicago UM+F");
        progress.message(format!("ingesting {} records", thousands(1_500_000)));
        let lines = out.lines();
        assert_eq!(lines.len(), 2);
        assert!(
            lines[0].starts_with("[1/21 ") && lines[0].ends_with("s] chicago UM+F"),
            "{}",
            lines[0]
        );
        assert!(
            lines[1].ends_with("] chicago UM+F: ingesting 1,500,000 records"),
            "{}",
            lines[1]
        );
    }

    #[test]
    fn ticks_are_rate_limited() {
        let (progress, out) = Progress::captured();
        progress.begin("step");
        let mut built = 0;
        for i in 0..1000 {
            progress.tick(|| {
                built += 1;
                format!("op {i}")
            });
        }
        // `begin` just printed, so no tick within the interval prints, and no message is built.
        assert_eq!(out.lines().len(), 1);
        assert_eq!(built, 0);
    }

    #[test]
    fn quiet_prints_nothing() {
        let out = ProgressLines::default();
        let progress = Progress::with_sink(true, out.sink());
        progress.begin("a");
        progress.message("b");
        progress.tick(|| "c");
        assert!(out.lines().is_empty());
    }

    #[test]
    fn a_single_step_has_no_counter_and_cells_get_an_eta() {
        let (progress, out) = Progress::captured();
        progress.cell(1, 3, "datasets=gowalla");
        progress.set_total(1);
        progress.begin("gowalla UM");
        progress.cell_done("datasets=gowalla in 0.1 s");
        progress.cell(2, 3, "datasets=chicago");
        progress.set_total(2);
        progress.begin("chicago UM");
        let lines = out.lines();
        assert_eq!(lines.len(), 5, "{lines:?}");
        // The first cell has no finished cell to estimate from.
        assert!(lines[0].ends_with("] cell 1/3: datasets=gowalla"), "{}", lines[0]);
        assert!(
            lines[1].ends_with("s] gowalla UM") && !lines[1].contains("1/1"),
            "{}",
            lines[1]
        );
        // The cell's end is said outside its steps, without their counter or label.
        assert!(
            lines[2].ends_with("s] done: datasets=gowalla in 0.1 s"),
            "{}",
            lines[2]
        );
        assert!(lines[3].contains("cell 2/3 (ETA "), "{}", lines[3]);
        assert!(lines[4].starts_with("[1/2 "), "{}", lines[4]);
        // One cell: named when it is a shard's cell of a larger grid, silent for a one-cell grid.
        let (progress, out) = Progress::captured();
        progress.cell(1, 1, "workloads=synthetic policies=leaper");
        progress.cell(1, 1, "");
        let lines = out.lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].ends_with("] cell 1/1: workloads=synthetic policies=leaper"),
            "{}",
            lines[0]
        );
    }

    #[test]
    fn counts_carry_rate_and_eta() {
        assert_eq!(
            count_line(12_000, 0, Some(20_000), "operations", 2.0),
            "12,000 / 20,000 operations, 6,000 ops/s, ETA 1.3s"
        );
        assert_eq!(
            count_line(600, 100, None, "records", 0.5),
            "600 records, 1,000 records/s"
        );
        // Nothing done since the first count: no rate to divide by.
        assert_eq!(count_line(5, 5, Some(10), "operations", 1.0), "5 / 10 operations");
        assert_eq!(format_duration(81.0), "1m 21s");
        assert_eq!(format_duration(7_620.0), "2h 07m");
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(15_241_413), "15,241,413");
    }
}
