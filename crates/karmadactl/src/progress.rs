//! Step lines of the long commands (`init`, `local-up`, `join`, `register`): `[i/N] what: detail`,
//! then indented notes with the time into the step.
//!
//! On a terminal the current step is a live line (a spinner, the step's elapsed time and its
//! latest note) that is replaced by the finished step and its notes when the next step starts.
//! Elsewhere (pipes, files, tests) every line is printed as it happens, plain and stable, so
//! scripts and tests see the same text whatever the timing.

use std::io::IsTerminal;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How the lines reach the user.
enum Mode {
    /// Every line at once on stdout.
    Plain,
    /// The current step as a live line on stdout; finished lines above it. A mutex so notes
    /// can come through a shared reference from the step's helpers.
    Live(Mutex<Live>),
    /// Nothing (a command run inside another, e.g. `join` inside `local-up`).
    Hidden,
}

/// The current step on a terminal: its header and the notes it printed so far.
#[derive(Default)]
struct Live {
    bar: Option<ProgressBar>,
    header: String,
    notes: Vec<String>,
}

pub struct Progress {
    total: u32,
    done: u32,
    started: Instant,
    step_started: Instant,
    mode: Mode,
}

impl Progress {
    /// `total` steps; live when stdout is a terminal, plain lines otherwise.
    pub fn new(total: u32) -> Progress {
        let mode = if std::io::stdout().is_terminal() {
            Mode::Live(Mutex::new(Live::default()))
        } else {
            Mode::Plain
        };
        Progress::with_mode(total, mode)
    }

    /// Prints nothing; for a command run as part of another.
    pub fn hidden() -> Progress {
        Progress::with_mode(0, Mode::Hidden)
    }

    fn with_mode(total: u32, mode: Mode) -> Progress {
        let now = Instant::now();
        Progress {
            total,
            done: 0,
            started: now,
            step_started: now,
            mode,
        }
    }

    /// Announces the next step (and ends the previous one).
    pub fn step(&mut self, what: &str, detail: &str) {
        self.end_step();
        self.done += 1;
        self.step_started = Instant::now();
        let header = step_line(self.done, self.total, what, detail);
        match &mut self.mode {
            Mode::Plain => println!("{header}"),
            Mode::Live(live) => {
                let live = live.get_mut().unwrap_or_else(PoisonError::into_inner);
                let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} ({elapsed}) {wide_msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                bar.set_prefix(header.clone());
                bar.enable_steady_tick(Duration::from_millis(120));
                live.bar = Some(bar);
                live.header = header;
            }
            Mode::Hidden => {}
        }
    }

    /// A result line of the current step, with the time into the step.
    pub fn note(&self, what: &str) {
        let line = note_line(what, self.step_started.elapsed());
        match &self.mode {
            Mode::Plain => println!("{line}"),
            Mode::Live(live) => {
                let mut live = live.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(bar) = &live.bar {
                    bar.set_message(what.to_string());
                }
                live.notes.push(line);
            }
            Mode::Hidden => {}
        }
    }

    /// Ends the current step and prints `line` after it: the command's outcome.
    pub fn outcome(&mut self, line: &str) {
        self.end_step();
        if !matches!(self.mode, Mode::Hidden) {
            println!("{line}");
        }
    }

    /// Ends the live line, if any, leaving the finished step and its notes printed; call
    /// before printing anything else (warnings, a summary).
    pub fn finish(&mut self) {
        self.end_step();
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    fn end_step(&mut self) {
        let took = self.step_started.elapsed();
        let Mode::Live(live) = &mut self.mode else {
            return;
        };
        let live = live.get_mut().unwrap_or_else(PoisonError::into_inner);
        if let Some(bar) = live.bar.take() {
            bar.finish_and_clear();
            println!("{} ({:.1}s)", live.header, took.as_secs_f64());
            for note in live.notes.drain(..) {
                println!("{note}");
            }
        }
    }
}

impl Drop for Progress {
    /// A command that fails mid-step still leaves the step and its notes on screen.
    fn drop(&mut self) {
        self.end_step();
    }
}

fn step_line(done: u32, total: u32, what: &str, detail: &str) -> String {
    if detail.is_empty() {
        format!("[{done}/{total}] {what}")
    } else {
        format!("[{done}/{total}] {what}: {detail}")
    }
}

fn note_line(what: &str, into_step: Duration) -> String {
    format!("      {what} ({:.1}s)", into_step.as_secs_f64())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_numbered_steps_and_indented_timed_notes() {
        assert_eq!(
            step_line(2, 4, "starting karmada-apiserver", "127.0.0.1:1"),
            "[2/4] starting karmada-apiserver: 127.0.0.1:1"
        );
        assert_eq!(
            step_line(4, 4, "control plane ready", ""),
            "[4/4] control plane ready"
        );
        assert_eq!(
            note_line("etcd answers", Duration::from_millis(1250)),
            "      etcd answers (1.2s)"
        );
    }

    #[test]
    fn a_live_step_keeps_its_notes_until_it_ends() {
        let mut progress = Progress::with_mode(2, Mode::Live(Mutex::default()));
        progress.step("one", "");
        progress.note("first");
        progress.note("second");
        let Mode::Live(live) = &mut progress.mode else {
            panic!("live mode");
        };
        let live = live.get_mut().unwrap();
        assert_eq!(live.header, "[1/2] one");
        assert_eq!(live.notes.len(), 2);
        assert!(live.bar.is_some());
        progress.step("two", "detail");
        let Mode::Live(live) = &mut progress.mode else {
            panic!("live mode");
        };
        let live = live.get_mut().unwrap();
        assert_eq!(live.header, "[2/2] two: detail");
        assert!(live.notes.is_empty(), "the first step's notes were printed");
        progress.finish();
        let Mode::Live(live) = &mut progress.mode else {
            panic!("live mode");
        };
        let live = live.get_mut().unwrap();
        assert!(live.bar.is_none());
    }
}
