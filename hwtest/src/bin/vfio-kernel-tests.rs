//! Runs the VFIO kernel tests ([`hwtest::cases`]) against the devices named in
//! `IBSM_HWTEST_EDU` / `IBSM_HWTEST_E1000E` / `IBSM_HWTEST_NONVIABLE` and prints one line per
//! case. Exit status 0 when nothing failed (skips included), 1 on a failure, 2 on a bad
//! configuration. CI runs it inside a QEMU guest (`hwtest/guest/run.sh`); docs/hwtest.md says
//! how to run it on a machine with real devices.

use std::process::ExitCode;

fn main() -> ExitCode {
    let cfg = match hwtest::cases::Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vfio-kernel-tests: {e:#}");
            return ExitCode::from(2);
        }
    };
    let mut out = std::io::stdout();
    let s = hwtest::harness::run(
        &hwtest::cases::all(),
        &cfg,
        |n| cfg.skip_reason(n),
        &mut out,
    );
    if s.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
