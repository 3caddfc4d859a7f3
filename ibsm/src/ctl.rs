//! The daemon's control socket — what OpenSM's console does, over a Unix socket — and the
//! `ibsm ctl` client.
//!
//! Protocol: the client connects, writes one request line, and reads the answer until the
//! daemon closes the connection. The answer's first line is `ok` or `error: <why>`; the rest
//! is for people. Requests:
//!
//! | request | effect |
//! |---|---|
//! | `status` | SM state, priority, LID, sweeps, SMPs, nodes |
//! | `sweep [light\|heavy]` | a light sweep (default) or a heavy sweep now |
//! | `reroute` | recompute and reprogram the routes (a heavy sweep) |
//! | `loglevel N` | OpenSM's log flags (`-D`): 0x04 and above adds the verbose lines |
//! | `perfmgr [status\|sweep\|enable\|disable\|sweep_time S\|clear_counters\|print_counters [NODE]\|print_errors]` | the performance manager, as OpenSM's console `perfmgr` |
//! | `dump` | write OpenSM's dump files into the dump directory now |
//!
//! The socket is created with permissions 0600 inside a directory the daemon creates with
//! 0700 if it does not exist: only its owner (root for a system SM) may steer the SM.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Where `ibsm run` listens unless told otherwise, and where `ibsm ctl` connects.
pub const DEFAULT_SOCKET: &str = "/run/ibsm/ibsm.sock";

/// A request on the control socket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Report the SM's state.
    Status,
    /// Sweep now (`heavy`: rediscover, reroute, reprogram).
    Sweep {
        /// Heavy instead of light.
        heavy: bool,
    },
    /// Recompute and reprogram the routes.
    Reroute,
    /// Set the log flags.
    LogLevel(u8),
    /// A performance-manager request (its words).
    Perfmgr(Vec<String>),
    /// Write the dump files.
    Dump,
}

impl Request {
    /// Parses one request line.
    ///
    /// # Errors
    /// A message naming what is wrong, with the list of requests.
    pub fn parse(line: &str) -> Result<Request, String> {
        let words: Vec<&str> = line.split_whitespace().collect();
        let usage = "requests: status, sweep [light|heavy], reroute, loglevel N, perfmgr [status|sweep|enable|disable|sweep_time S|clear_counters|print_counters [NODE]|print_errors], dump";
        match words.as_slice() {
            ["status"] => Ok(Request::Status),
            ["sweep"] | ["sweep", "light"] => Ok(Request::Sweep { heavy: false }),
            ["sweep", "heavy"] => Ok(Request::Sweep { heavy: true }),
            ["reroute"] => Ok(Request::Reroute),
            ["loglevel", n] => {
                let v = match n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
                    Some(h) => u8::from_str_radix(h, 16),
                    None => n.parse(),
                };
                v.map(Request::LogLevel)
                    .map_err(|_| format!("loglevel {n:?}: expected 0..=255 (decimal or 0x-hex)"))
            }
            ["perfmgr", rest @ ..] => Ok(Request::Perfmgr(
                rest.iter().map(|s| (*s).to_string()).collect(),
            )),
            ["dump"] => Ok(Request::Dump),
            [] => Err(format!("empty request; {usage}")),
            _ => Err(format!("unknown request {line:?}; {usage}")),
        }
    }
}

/// The daemon's side: a non-blocking listener polled from its loop.
pub struct CtlServer {
    listener: UnixListener,
    path: PathBuf,
}

impl CtlServer {
    /// Binds `path` (replacing a stale socket), mode 0600; creates a missing parent directory
    /// with mode 0700.
    ///
    /// # Errors
    /// The directory, bind or chmod failed.
    pub fn bind(path: &Path) -> std::io::Result<CtlServer> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            if !dir.exists() {
                std::fs::create_dir_all(dir)?;
                std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
            }
        }
        if path.exists() {
            // A socket nobody answers on is left over from a previous run.
            if UnixStream::connect(path).is_ok() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    format!("{}: another daemon answers on it", path.display()),
                ));
            }
            std::fs::remove_file(path)?;
        }
        let listener = UnixListener::bind(path)?;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
        listener.set_nonblocking(true)?;
        Ok(CtlServer {
            listener,
            path: path.to_path_buf(),
        })
    }

    /// The socket's path.
    #[must_use]
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Serves every connection waiting now: reads its request line and writes what `handle`
    /// answers (`Ok(text)` → `ok\ntext`, `Err(why)` → `error: why`).
    pub fn poll(&mut self, mut handle: impl FnMut(Request) -> Result<String, String>) {
        while let Ok((mut sock, _)) = self.listener.accept() {
            let _ = sock.set_nonblocking(false);
            let _ = sock.set_read_timeout(Some(Duration::from_secs(1)));
            let _ = sock.set_write_timeout(Some(Duration::from_secs(1)));
            let mut line = String::new();
            let read = BufReader::new(&mut sock).take(4096).read_line(&mut line);
            let answer = match read {
                Ok(_) => match Request::parse(line.trim()) {
                    Ok(req) => handle(req),
                    Err(e) => Err(e),
                },
                Err(e) => Err(format!("reading the request: {e}")),
            };
            let text = match answer {
                Ok(body) if body.is_empty() => "ok\n".to_string(),
                Ok(body) => format!("ok\n{}", body.trim_end_matches('\n').to_owned() + "\n"),
                Err(why) => format!("error: {why}\n"),
            };
            let _ = sock.write_all(text.as_bytes());
        }
    }
}

impl Drop for CtlServer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

const USAGE: &str = "usage: ibsm ctl [--socket PATH] status | sweep [light|heavy] | reroute | loglevel N | perfmgr [status|sweep|enable|disable|sweep_time S|clear_counters|print_counters [NODE]|print_errors] | dump\n";

/// `ibsm ctl`: sends one request to a running daemon and prints the answer; exit status 0 for
/// `ok`, 1 for `error`, 2 for bad usage or no daemon.
pub fn client_main(args: &[String]) -> ExitCode {
    let mut socket = PathBuf::from(DEFAULT_SOCKET);
    let mut words = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--socket" | "-s" => match it.next() {
                Some(p) => socket = PathBuf::from(p),
                None => {
                    eprint!("ibsm ctl: --socket needs a PATH\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            "-h" | "--help" => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            w => words.push(w.to_string()),
        }
    }
    let line = words.join(" ");
    if let Err(e) = Request::parse(&line) {
        eprint!("ibsm ctl: {e}\n{USAGE}");
        return ExitCode::from(2);
    }
    let mut sock = match UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "ibsm ctl: {}: {e} (is `ibsm run` running with this control socket?)",
                socket.display()
            );
            return ExitCode::from(2);
        }
    };
    let _ = sock.set_read_timeout(Some(Duration::from_secs(30)));
    if let Err(e) = sock.write_all(format!("{line}\n").as_bytes()) {
        eprintln!("ibsm ctl: {}: {e}", socket.display());
        return ExitCode::from(2);
    }
    let mut answer = String::new();
    if let Err(e) = sock.read_to_string(&mut answer) {
        eprintln!("ibsm ctl: {}: reading the answer: {e}", socket.display());
        return ExitCode::from(2);
    }
    match answer.split_once('\n') {
        Some(("ok", body)) => {
            print!("{body}");
            ExitCode::SUCCESS
        }
        _ => {
            eprint!("ibsm ctl: {answer}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_parse() {
        assert_eq!(Request::parse("status"), Ok(Request::Status));
        assert_eq!(Request::parse("sweep"), Ok(Request::Sweep { heavy: false }));
        assert_eq!(
            Request::parse("sweep heavy"),
            Ok(Request::Sweep { heavy: true })
        );
        assert_eq!(Request::parse("loglevel 0x07"), Ok(Request::LogLevel(7)));
        assert_eq!(Request::parse("loglevel 3"), Ok(Request::LogLevel(3)));
        assert!(Request::parse("loglevel 300")
            .unwrap_err()
            .contains("0..=255"));
        assert!(Request::parse("sweep sideways")
            .unwrap_err()
            .contains("unknown request"));
        assert!(Request::parse("").unwrap_err().contains("empty"));
    }

    #[test]
    fn the_socket_is_private_and_answers() {
        let dir = std::env::temp_dir().join(format!("ibsm-ctl-{}", std::process::id()));
        let path = dir.join("sub").join("ctl.sock");
        let mut srv = CtlServer::bind(&path).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dmode = std::fs::metadata(path.parent().unwrap())
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(dmode & 0o777, 0o700);
        // A second daemon may not take a live socket.
        assert!(CtlServer::bind(&path).is_err());
        let p2 = path.clone();
        let client = std::thread::spawn(move || {
            let mut s = UnixStream::connect(&p2).unwrap();
            s.write_all(b"sweep heavy\n").unwrap();
            let mut a = String::new();
            s.read_to_string(&mut a).unwrap();
            a
        });
        let mut got = None;
        for _ in 0..200 {
            srv.poll(|r| {
                got = Some(r);
                Ok("sweeping".into())
            });
            if got.is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(got, Some(Request::Sweep { heavy: true }));
        assert_eq!(client.join().unwrap(), "ok\nsweeping\n");
        drop(srv);
        assert!(!path.exists(), "the socket is removed on exit");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
