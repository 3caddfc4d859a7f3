//! Progress on standard error for long work (loading and bringing up large fabrics,
//! verifying large table sets, `ibsm bench`): an [`indicatif`] spinner with a message and the
//! elapsed time, drawn only when standard error is a terminal, so logs and pipes stay clean.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A spinner, or nothing when disabled or when standard error is not a terminal.
#[derive(Debug)]
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// A spinner if `enabled` and standard error is a terminal.
    #[must_use]
    pub fn new(enabled: bool) -> Progress {
        if !enabled || !std::io::stderr().is_terminal() {
            return Progress { bar: None };
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {msg}") {
            bar.set_style(style);
        }
        bar.enable_steady_tick(Duration::from_millis(200));
        Progress { bar: Some(bar) }
    }

    /// True when something is drawn.
    #[must_use]
    pub fn is_visible(&self) -> bool {
        self.bar.is_some()
    }

    /// Replaces the message.
    pub fn message(&self, msg: &str) {
        if let Some(b) = &self.bar {
            b.set_message(msg.to_string());
        }
    }

    /// Runs `f` with the spinner hidden (for output to the same terminal).
    pub fn suspend<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.bar {
            Some(b) => b.suspend(f),
            None => f(),
        }
    }

    /// `out`, with the spinner hidden while each write is made, so lines printed to the
    /// terminal do not mix with it.
    pub fn writer<'a>(&'a self, out: &'a mut dyn std::io::Write) -> Suspending<'a> {
        Suspending {
            progress: self,
            out,
        }
    }

    /// Removes the spinner.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A writer that hides the spinner while it writes ([`Progress::writer`]).
pub struct Suspending<'a> {
    progress: &'a Progress,
    out: &'a mut dyn std::io::Write,
}

impl std::io::Write for Suspending<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let out = &mut self.out;
        self.progress.suspend(|| out.write(buf))
    }
    fn flush(&mut self) -> std::io::Result<()> {
        let out = &mut self.out;
        self.progress.suspend(|| out.flush())
    }
}
