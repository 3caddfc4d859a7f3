//! What `ibsm run` needs to be a service: Unix signals and systemd's readiness protocol.
//!
//! * `SIGTERM` (and `SIGINT`): exit cleanly — the daemon loop finishes its turn, IsSM is
//!   cleared and the control socket removed;
//! * `SIGHUP`: re-read the configuration and force a heavy sweep (OpenSM's behaviour);
//! * `SIGUSR1`: reopen the log file (after logrotate moved it).
//!
//! Handlers only set flags ([`signal_hook::flag`]); the loop polls them with [`Signals::take`],
//! so nothing runs in signal context. Readiness: `READY=1` goes to `$NOTIFY_SOCKET` when the
//! subnet first comes up (`Type=notify` in `contrib/ibsm.service`), `STOPPING=1` on exit;
//! without `$NOTIFY_SOCKET` both are no-ops.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM, SIGUSR1};

/// Signals seen since the last look.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    /// `SIGTERM` or `SIGINT`.
    pub terminate: bool,
    /// `SIGHUP`.
    pub reload: bool,
    /// `SIGUSR1`.
    pub reopen_log: bool,
}

/// The installed flags.
pub struct Signals {
    term: Arc<AtomicBool>,
    hup: Arc<AtomicBool>,
    usr1: Arc<AtomicBool>,
}

impl Signals {
    /// Installs the handlers.
    ///
    /// # Errors
    /// The OS refused a handler.
    pub fn install() -> std::io::Result<Signals> {
        let s = Signals {
            term: Arc::new(AtomicBool::new(false)),
            hup: Arc::new(AtomicBool::new(false)),
            usr1: Arc::new(AtomicBool::new(false)),
        };
        signal_hook::flag::register(SIGTERM, Arc::clone(&s.term))?;
        signal_hook::flag::register(SIGINT, Arc::clone(&s.term))?;
        signal_hook::flag::register(SIGHUP, Arc::clone(&s.hup))?;
        signal_hook::flag::register(SIGUSR1, Arc::clone(&s.usr1))?;
        Ok(s)
    }

    /// The signals that arrived since the last call (and clears them).
    pub fn take(&self) -> Pending {
        Pending {
            terminate: self.term.swap(false, Ordering::Relaxed),
            reload: self.hup.swap(false, Ordering::Relaxed),
            reopen_log: self.usr1.swap(false, Ordering::Relaxed),
        }
    }
}

/// Tells systemd the service is ready (the subnet is up). A no-op outside systemd.
pub fn notify_ready(status: &str) {
    let _ = sd_notify::notify(
        false,
        &[
            sd_notify::NotifyState::Ready,
            sd_notify::NotifyState::Status(status),
        ],
    );
}

/// Tells systemd the service is stopping. A no-op outside systemd.
pub fn notify_stopping() {
    let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Stopping]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_its_flag_once() {
        let s = Signals::install().unwrap();
        assert_eq!(s.take(), Pending::default());
        signal_hook::low_level::raise(SIGUSR1).unwrap();
        let p = s.take();
        assert!(p.reopen_log && !p.reload && !p.terminate);
        assert_eq!(s.take(), Pending::default());
        signal_hook::low_level::raise(SIGHUP).unwrap();
        assert!(s.take().reload);
    }

    #[test]
    fn readiness_reaches_the_notify_socket() {
        let dir = std::env::temp_dir().join(format!("ibsm-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("notify");
        let sock = std::os::unix::net::UnixDatagram::bind(&path).unwrap();
        std::env::set_var("NOTIFY_SOCKET", &path);
        notify_ready("SUBNET UP");
        std::env::remove_var("NOTIFY_SOCKET");
        let mut buf = [0u8; 256];
        let n = sock.recv(&mut buf).unwrap();
        let text = String::from_utf8_lossy(&buf[..n]);
        assert!(text.contains("READY=1"), "{text}");
        assert!(text.contains("STATUS=SUBNET UP"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
