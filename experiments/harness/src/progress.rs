//! Progress lines on stderr, e.g. `[3/21 14.2s] chicago UM+F: ingesting 1,500,000 records`.
//!
//! An experiment announces each cell of its grid with [`Progress::begin`] (after telling the total
//! with [`Progress::set_total`]) and may report from long loops with [`Progress::tick`], which
//! prints at most twice a second. `quiet` prints nothing. Progress is shared by reference and is
//! `Sync`, so worker threads can tick too.
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
            }),
            bar: None,
        }
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
    /// inside it. Nothing is printed for a run of one cell.
    pub fn cell(&self, position: usize, total: usize, label: &str) {
        let mut state = self.lock();
        state.step = 0;
        state.total = 0;
        state.label = String::new();
        if let Some(bar) = &self.bar {
            bar.set_length(total as u64);
            bar.set_position(position.saturating_sub(1) as u64);
            bar.set_message(label.to_string());
            state.cell = if total > 1 {
                label.to_string()
            } else {
                String::new()
            };
            return;
        }
        if total > 1 {
            self.print(&mut state, &format!("cell {position}/{total}: {label}"));
        }
    }

    /// Counts the current cell as done (moves the bar; the plain lines need nothing).
    pub fn cell_done(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
        }
    }

    /// Starts the next step and prints `[i/n t] label`.
    pub fn begin(&self, label: impl Display) {
        let mut state = self.lock();
        state.step += 1;
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
        let prefix = match (state.step, state.total) {
            (0, _) => String::new(),
            (step, 0) => format!("{step} "),
            (step, total) => format!("{step}/{total} "),
        };
        let secs = self.start.elapsed().as_secs_f64();
        let _ = writeln!(state.sink, "[{prefix}{}] {text}", format_seconds(secs));
        let _ = state.sink.flush();
        state.last_line = Some(Instant::now());
    }
}

fn format_seconds(secs: f64) -> String {
    if secs < 100.0 {
        format!("{secs:.1}s")
    } else {
        format!("{secs:.0}s")
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
    use std::sync::Arc;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn lines(&self) -> Vec<String> {
            String::from_utf8(self.0.lock().clone())
                .unwrap()
                .lines()
                .map(String::from)
                .collect()
        }
    }

    #[test]
    fn lines_carry_step_total_time_label_and_message() {
        let out = Shared::default();
        let progress = Progress::with_sink(false, Box::new(out.clone()));
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
        let out = Shared::default();
        let progress = Progress::with_sink(false, Box::new(out.clone()));
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
        let out = Shared::default();
        let progress = Progress::with_sink(true, Box::new(out.clone()));
        progress.begin("a");
        progress.message("b");
        progress.tick(|| "c");
        assert!(out.lines().is_empty());
    }

    #[test]
    fn thousands_groups_digits() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
        assert_eq!(thousands(15_241_413), "15,241,413");
    }
}
