//! The adaptive window of SMPs in flight over the whole fabric (`max_wire_smps` is its
//! ceiling).
//!
//! A fixed window is wrong somewhere: OpenSM's 4 leaves a fast fabric idle, and 256 overruns a
//! transport whose round trip is a queue in front of one server (ibsim and the `umad2sim`
//! shim, an HCA's QP0 with a slow firmware agent): past the point where that server is busy,
//! more SMPs in flight only lengthen the queue, and ibsim then spins on a full client socket.
//! Round-trip time alone does not find the best window there: under the shim a window of 16
//! already queues (its RTT is 2–5 × the least one seen) yet 64 delivers half again as many
//! answers per second, because each wake-up of the relay threads then carries more MADs.
//!
//! So the window climbs the **delivery rate** the fabric answers with, measured over
//! intervals of `max(8 × window, 1024)` answers (eight round trips or more while the window is
//! full; shorter ones are scheduling noise under the shim):
//!
//! * **Start-up**: from [`START`] (where the shim's rate peaks, and a quarter of the
//!   default ceiling) the window doubles each interval while the rate grows by at least
//!   [`GAIN_PCT`] %; the first doubling that does not pay returns to the window before it.
//! * **Steady**: every other interval probes a window a quarter larger, then one a quarter
//!   smaller, against the rate of the interval before, and keeps the probe only if it
//!   delivers [`PROBE_PCT`] % more — the same test both ways, so noise alone moves the window
//!   neither up nor down on average.
//! * Only intervals in which the window was the limit count (at least half their answers came
//!   back while the window was full); while the SM has less to send, nothing is learnt.
//! * **Queueing**: an interval whose least RTT exceeds an eighth of the response timeout halves
//!   the window: that queue would soon turn into spurious timeouts.
//! * **Timeouts are loss, not congestion**: a lossy link drops SMPs whatever the window, and
//!   each lost SMP already holds its slot for a whole timeout; shrinking on them would slow a
//!   lossy sweep without bound (`ibsm sim --faults drop=0.5`). They change nothing here.
//! * The window stays within [`FLOOR`] and the ceiling (both [`FLOOR`] and [`START`] are
//!   capped by the ceiling).
//!
//! RTT samples come from first attempts only (Karn's rule: the answer to a resent SMP cannot
//! be matched to one of its sends). Pure arithmetic on the times the caller passes in.

use core::time::Duration;

use ibmad::Time;

/// The least window, unless the ceiling is lower.
pub(crate) const FLOOR: usize = 16;
/// The first window, unless the ceiling is lower.
pub(crate) const START: usize = 64;
/// Start-up keeps doubling while each doubling raises the delivery rate by this many percent.
pub(crate) const GAIN_PCT: u64 = 15;
/// A steady-state probe is kept when it raises the rate by this many percent.
pub(crate) const PROBE_PCT: u64 = 3;
/// Fewest answers per measuring interval.
const MIN_INTERVAL: usize = 1024;
/// Answers per measuring interval per SMP of the window.
const INTERVAL_PER_SLOT: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Doubling; the window and rate of the last interval.
    Startup,
    /// At `base`; the next probe goes up if `up`.
    Steady { base: usize, up: bool },
    /// Measuring a probe from `base`.
    Probe { base: usize },
}

/// See the module doc.
#[derive(Debug)]
pub(crate) struct WireWindow {
    ceiling: usize,
    floor: usize,
    cwnd: usize,
    adaptive: bool,
    mode: Mode,
    /// An interval whose least RTT exceeds this halves the window.
    rtt_limit: Duration,
    /// The rate (answers per second) of the last counted interval.
    last_rate: Option<f64>,
    /// The current interval.
    start: Option<Time>,
    acks: usize,
    full_acks: usize,
    min_rtt: Option<Duration>,
    /// The least RTT seen, of the last finished interval, the largest window reached.
    floor_rtt: Option<Duration>,
    last_rtt: Option<Duration>,
    peak: usize,
}

impl WireWindow {
    /// A window that adapts between [`FLOOR`] and `ceiling`, starting at [`START`];
    /// `timeout` is the response timeout.
    pub fn adaptive(ceiling: usize, timeout: Duration) -> WireWindow {
        let ceiling = ceiling.max(1);
        let floor = FLOOR.min(ceiling);
        WireWindow {
            ceiling,
            floor,
            cwnd: START.min(ceiling),
            adaptive: true,
            mode: Mode::Startup,
            rtt_limit: timeout / 8,
            last_rate: None,
            start: None,
            acks: 0,
            full_acks: 0,
            min_rtt: None,
            floor_rtt: None,
            last_rtt: None,
            peak: START.min(ceiling),
        }
    }

    /// A window fixed at `n` (the role machine's few SMInfo transactions).
    pub fn fixed(n: usize) -> WireWindow {
        let mut w = WireWindow::adaptive(n, Duration::MAX);
        w.cwnd = w.ceiling;
        w.peak = w.ceiling;
        w.adaptive = false;
        w
    }

    /// SMPs that may be in flight now.
    pub fn limit(&self) -> usize {
        self.cwnd
    }

    /// The largest window reached so far.
    pub fn peak(&self) -> usize {
        self.peak
    }

    /// The least round trip seen.
    pub fn floor_rtt(&self) -> Option<Duration> {
        self.floor_rtt
    }

    /// The least round trip of the last finished interval.
    pub fn last_rtt(&self) -> Option<Duration> {
        self.last_rtt
    }

    /// An answer arrived at `now`; `sent` is when its request went out if that was its only
    /// attempt; `in_flight` SMPs were on the wire just before (this one included).
    pub fn on_answer(&mut self, now: Time, sent: Option<Time>, in_flight: usize) {
        if !self.adaptive {
            return;
        }
        if let Some(sent) = sent {
            let rtt = now.saturating_since(sent);
            self.floor_rtt = Some(self.floor_rtt.map_or(rtt, |f| f.min(rtt)));
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
        }
        let Some(start) = self.start else {
            // The interval starts at its first answer and counts those after it.
            self.start = Some(now);
            return;
        };
        self.acks += 1;
        if in_flight >= self.cwnd {
            self.full_acks += 1;
        }
        if self.acks >= (INTERVAL_PER_SLOT * self.cwnd).max(MIN_INTERVAL) {
            let secs = now.saturating_since(start).as_secs_f64().max(1e-9);
            let rate = self.acks as f64 / secs;
            let limited = 2 * self.full_acks >= self.acks;
            let rtt = self.min_rtt.take();
            self.start = Some(now);
            self.acks = 0;
            self.full_acks = 0;
            self.last_rtt = rtt.or(self.last_rtt);
            if rtt.is_some_and(|r| r > self.rtt_limit) {
                self.set((self.cwnd / 2).max(self.floor));
                self.mode = Mode::Steady {
                    base: self.cwnd,
                    up: false,
                };
                self.last_rate = None;
            } else if limited {
                self.step(rate);
            }
        }
    }

    /// Moves the window after an interval limited by it that delivered `rate`.
    fn step(&mut self, rate: f64) {
        let better = |pct: u64, than: Option<f64>| {
            than.is_none_or(|t| rate >= t * (100 + pct) as f64 / 100.0)
        };
        match self.mode {
            Mode::Startup => {
                if better(GAIN_PCT, self.last_rate) && self.cwnd < self.ceiling {
                    self.last_rate = Some(rate);
                    self.set(self.cwnd.saturating_mul(2));
                } else {
                    // The last doubling did not pay (or the ceiling is reached).
                    let back = if better(GAIN_PCT, self.last_rate) {
                        self.cwnd
                    } else {
                        (self.cwnd / 2).max(self.floor)
                    };
                    self.set(back);
                    self.mode = Mode::Steady {
                        base: back,
                        up: true,
                    };
                    self.last_rate = None;
                }
            }
            Mode::Steady { base, up } => {
                // A reference interval at `base`, then a probe.
                self.last_rate = Some(rate);
                let probe = if up {
                    (base + base.div_ceil(4)).min(self.ceiling)
                } else {
                    (base - base / 4).max(self.floor)
                };
                if probe == base {
                    self.mode = Mode::Steady { base, up: !up };
                } else {
                    self.set(probe);
                    self.mode = Mode::Probe { base };
                }
            }
            Mode::Probe { base } => {
                let keep = better(PROBE_PCT, self.last_rate);
                let probed_up = self.cwnd > base;
                let next = if keep { self.cwnd } else { base };
                self.set(next);
                // After a kept probe, try the same way again; otherwise the other way.
                self.mode = Mode::Steady {
                    base: next,
                    up: if keep { probed_up } else { !probed_up },
                };
                self.last_rate = None;
            }
        }
    }

    fn set(&mut self, w: usize) {
        self.cwnd = w.clamp(self.floor, self.ceiling);
        self.peak = self.peak.max(self.cwnd);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: Duration = Duration::from_millis(200);

    /// Feeds `n` answers with the window full, spaced as `rate(window)` answers per second
    /// say, each after `rtt`; returns the windows seen after each answer.
    fn run(
        w: &mut WireWindow,
        t: &mut u64,
        n: usize,
        rtt: Duration,
        rate: impl Fn(usize) -> f64,
    ) -> Vec<usize> {
        let mut seen = Vec::with_capacity(n);
        for _ in 0..n {
            *t += (1e9 / rate(w.limit())) as u64;
            let now = Time(*t);
            let sent = Time(t.saturating_sub(rtt.as_nanos() as u64));
            w.on_answer(now, Some(sent), w.limit());
            seen.push(w.limit());
        }
        seen
    }

    #[test]
    fn starts_at_the_floor_and_doubles_to_the_ceiling_on_a_parallel_fabric() {
        let mut w = WireWindow::adaptive(256, TIMEOUT);
        assert_eq!(w.limit(), START);
        let mut t = 0;
        // Every SMP in flight is served at once: the rate grows with the window.
        let seen = run(&mut w, &mut t, 20_000, Duration::from_micros(2), |c| {
            c as f64 * 1e5
        });
        let mut steps = seen.clone();
        steps.dedup();
        assert_eq!(&steps[..3], [64, 128, 256]);
        assert!(
            seen[seen.len() / 2..].iter().all(|&c| c >= 192),
            "{steps:?}"
        );
        assert_eq!(w.peak(), 256);
    }

    /// A server whose throughput peaks at 64 in flight and falls beyond (a relay whose
    /// batching pays up to a point, then a full socket): the window stays near 64.
    #[test]
    fn settles_near_the_best_rate_behind_one_server() {
        let mut w = WireWindow::adaptive(1024, TIMEOUT);
        let mut t = 0;
        let rate = |c: usize| {
            let c = c as f64;
            if c <= 64.0 {
                100_000.0 + 100_000.0 * c / 64.0
            } else {
                200_000.0 * 64.0 / c
            }
        };
        let seen = run(&mut w, &mut t, 200_000, Duration::from_micros(50), rate);
        let tail = &seen[100_000..];
        let (lo, hi) = (*tail.iter().min().unwrap(), *tail.iter().max().unwrap());
        assert!(lo >= 36 && hi <= 100, "window ranged {lo}..{hi}");
        assert!(w.peak() <= 128, "peak {}", w.peak());
    }

    #[test]
    fn a_window_that_is_not_full_does_not_move() {
        let mut w = WireWindow::adaptive(256, TIMEOUT);
        let mut t = 0;
        for _ in 0..10_000 {
            t += 10_000;
            w.on_answer(Time(t), Some(Time(t - 5_000)), 1);
        }
        assert_eq!(w.limit(), START);
    }

    #[test]
    fn a_queue_near_the_timeout_halves_the_window() {
        let mut w = WireWindow::adaptive(256, TIMEOUT);
        let mut t = 1_000_000_000;
        run(&mut w, &mut t, 20_000, Duration::from_micros(2), |c| {
            c as f64 * 1e5
        });
        let before = w.limit();
        assert!(before >= 128, "{before}");
        run(&mut w, &mut t, 3 * 8 * before, TIMEOUT / 4, |_| 1e6);
        assert!(w.limit() <= before / 2, "{before} -> {}", w.limit());
        for _ in 0..20 {
            run(&mut w, &mut t, 2_048, TIMEOUT / 4, |_| 1e6);
        }
        assert_eq!(w.limit(), FLOOR, "never below the floor");
    }

    #[test]
    fn resent_answers_give_no_rtt_sample() {
        let mut w = WireWindow::adaptive(256, TIMEOUT);
        for i in 0..64 {
            w.on_answer(Time(i * 1_000_000_000), None, 16);
        }
        assert_eq!(w.floor_rtt(), None);
    }

    #[test]
    fn fixed_window_ignores_everything() {
        let mut w = WireWindow::fixed(4);
        let mut t = 0;
        run(&mut w, &mut t, 5_000, Duration::from_secs(1), |c| {
            c as f64 * 1e5
        });
        assert_eq!(w.limit(), 4);
    }

    #[test]
    fn a_low_ceiling_is_the_floor_and_the_start() {
        let mut w = WireWindow::adaptive(4, TIMEOUT);
        assert_eq!(w.limit(), 4);
        let mut t = 0;
        run(&mut w, &mut t, 5_000, Duration::from_micros(2), |c| {
            c as f64 * 1e5
        });
        assert_eq!(w.limit(), 4);
    }
}
