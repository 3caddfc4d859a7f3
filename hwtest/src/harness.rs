//! A tiny test runner for the VFIO kernel tests: each case runs in turn (a VFIO group can be
//! open once at a time), a failure or panic in one does not stop the others, and every case
//! prints exactly one result line.

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// What a case needs from the configuration; missing means `SKIP`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// An `edu` device (`IBSM_HWTEST_EDU`).
    Edu,
    /// An 82574 / `e1000e` (`IBSM_HWTEST_E1000E`).
    E1000e,
    /// A device bound to vfio-pci whose group is not viable (`IBSM_HWTEST_NONVIABLE`).
    NonViable,
    /// Any device bound to vfio-pci: the edu if configured, else the e1000e.
    Any,
}

/// The outcome of one case.
pub type Outcome = anyhow::Result<String>;

/// One test case: a name (stable: runners look for it), what it needs, and the body, which
/// returns a one-line detail on success.
pub struct Case<C> {
    /// Stable name.
    pub name: &'static str,
    /// Device it needs.
    pub needs: Needs,
    /// The test.
    pub run: fn(&C) -> Outcome,
}

/// Counts of a run.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// Cases that passed.
    pub passed: usize,
    /// Cases that failed (error or panic).
    pub failed: usize,
    /// Cases skipped for lack of a device.
    pub skipped: usize,
}

/// Runs `cases` in order against `ctx`, writing the plan and one line per case to `out`.
/// `skip_reason(needs)` is `None` when the configuration provides the device, else why not.
pub fn run<C>(
    cases: &[Case<C>],
    ctx: &C,
    skip_reason: impl Fn(Needs) -> Option<String>,
    out: &mut dyn Write,
) -> Summary {
    let names: Vec<&str> = cases.iter().map(|c| c.name).collect();
    let _ = writeln!(out, "IBSM-GUEST-PLAN {}", names.join(" "));
    let mut s = Summary::default();
    for case in cases {
        if let Some(why) = skip_reason(case.needs) {
            let _ = writeln!(out, "SKIP {}: {why}", case.name);
            s.skipped += 1;
            continue;
        }
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(|| (case.run)(ctx)));
        let ms = t.elapsed().as_millis();
        match r {
            Ok(Ok(detail)) => {
                let _ = writeln!(out, "PASS {} ({ms} ms): {detail}", case.name);
                s.passed += 1;
            }
            Ok(Err(e)) => {
                let _ = writeln!(out, "FAIL {} ({ms} ms): {e:#}", case.name);
                s.failed += 1;
            }
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .map(String::as_str)
                    .or_else(|| p.downcast_ref::<&str>().copied())
                    .unwrap_or("(non-string panic)");
                let _ = writeln!(out, "FAIL {} ({ms} ms): panicked: {msg}", case.name);
                s.failed += 1;
            }
        }
        let _ = out.flush();
    }
    let _ = writeln!(
        out,
        "vfio-kernel-tests: {} PASS, {} FAIL, {} SKIP",
        s.passed, s.failed, s.skipped
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(_: &u32) -> Outcome {
        Ok("fine".into())
    }
    fn bad(x: &u32) -> Outcome {
        anyhow::bail!("x is {x}")
    }
    #[allow(clippy::panic)]
    fn boom(_: &u32) -> Outcome {
        panic!("kaboom")
    }

    #[test]
    fn every_case_gets_exactly_one_line_after_the_plan() {
        let cases = [
            Case {
                name: "a",
                needs: Needs::Edu,
                run: ok,
            },
            Case {
                name: "b",
                needs: Needs::Edu,
                run: bad,
            },
            Case {
                name: "c",
                needs: Needs::Edu,
                run: boom,
            },
            Case {
                name: "d",
                needs: Needs::E1000e,
                run: ok,
            },
        ];
        let mut out = Vec::new();
        let s = run(
            &cases,
            &7,
            |n| (n == Needs::E1000e).then(|| "no e1000e".to_string()),
            &mut out,
        );
        assert_eq!(
            s,
            Summary {
                passed: 1,
                failed: 2,
                skipped: 1
            }
        );
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "IBSM-GUEST-PLAN a b c d");
        assert!(lines[1].starts_with("PASS a (") && lines[1].ends_with("): fine"));
        assert!(lines[2].starts_with("FAIL b (") && lines[2].ends_with("): x is 7"));
        assert!(lines[3].starts_with("FAIL c (") && lines[3].ends_with("panicked: kaboom"));
        assert_eq!(lines[4], "SKIP d: no e1000e");
        assert_eq!(lines[5], "vfio-kernel-tests: 1 PASS, 2 FAIL, 1 SKIP");
    }
}
