//! One drive loop for the agents an SM's port hosts — the [`Sm`], and where the caller runs
//! them its [`Sa`] and its [`PerfMgr`] — over any [`MadPort`].
//!
//! [`Agents`] routes a received MAD to its agent by management class, fires due timers, keeps
//! the SA in step with the SM and sends what every agent has to send. [`turn`] is one round of
//! that at one instant over any transport; [`drive`] and [`drive_agents`] run rounds on a
//! virtual clock ([`VirtualClockPort`]: the simulator), moving the clock to the earlier of the
//! transport's next event and the agents' next deadline, for `ibsm sim`, `ibsm asic-model`,
//! the scenario tests, the fabric tests and the benchmarks. The daemon (`ibsm run`: umad,
//! VFIO, wall clock) blocks on its port between rounds and uses the same [`Agents`] for what
//! it received and for its timers and sends.

use std::ops::ControlFlow;

use ibmad::{MadMeta, MadPort, MgmtClass, PortError, Time, VirtualClockPort, MAD_LEN};

use crate::perfmgr::PerfMgr;
use crate::sa::Sa;
use crate::{Event, Sm};

/// The agent a received MAD went to ([`Agents::dispatch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dest {
    /// The SM (SMPs, and every class no other agent here takes).
    Sm,
    /// The SA (SubnAdm).
    Sa,
    /// The performance manager (PerfMgt).
    PerfMgr,
}

/// MADs sent by one [`Agents::transmit`], per agent.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sent {
    /// By the SM (SMPs).
    pub sm: u64,
    /// By the SA (answers, RMPP segments, Reports).
    pub sa: u64,
    /// By the performance manager.
    pub perfmgr: u64,
    /// Refused by the transport with [`PortError::WouldBlock`]: lost, each agent retries on
    /// its own timeout.
    pub would_block: u64,
}

/// The agents of one SM port. The SM is always there; the SA and the performance manager
/// only where the caller runs them (a MAD of their class then goes to the SM, which ignores
/// what it does not handle).
pub struct Agents<'a> {
    /// The subnet manager.
    pub sm: &'a mut Sm,
    /// Its subnet administrator.
    pub sa: Option<&'a mut Sa>,
    /// Its performance manager.
    pub perfmgr: Option<&'a mut PerfMgr>,
}

impl<'a> Agents<'a> {
    /// The SM alone.
    pub fn sm(sm: &'a mut Sm) -> Agents<'a> {
        Agents {
            sm,
            sa: None,
            perfmgr: None,
        }
    }

    /// With the SA that answers SubnAdm MADs.
    #[must_use]
    pub fn with_sa(mut self, sa: &'a mut Sa) -> Agents<'a> {
        self.sa = Some(sa);
        self
    }

    /// With the performance manager that takes PerfMgt answers.
    #[must_use]
    pub fn with_perfmgr(mut self, pm: &'a mut PerfMgr) -> Agents<'a> {
        self.perfmgr = Some(pm);
        self
    }

    /// Hands one received MAD to the agent of its class and says which took it. An SA request
    /// is only queued: its answer leaves from [`Agents::transmit`], so a burst handed over
    /// first meets the SA's queue bound (BUSY) as a burst.
    pub fn dispatch(&mut self, now: Time, meta: &MadMeta, mad: &[u8]) -> Dest {
        let class = mad.get(1).copied();
        if class == Some(MgmtClass::PERF_MGMT.0) {
            if let Some(pm) = self.perfmgr.as_deref_mut() {
                pm.handle_mad(now, meta, mad);
                return Dest::PerfMgr;
            }
        } else if class == Some(MgmtClass::SUBN_ADM.0) {
            if let Some(sa) = self.sa.as_deref_mut() {
                sa.handle_mad(now, meta, mad);
                return Dest::Sa;
            }
        }
        self.sm.handle_mad(now, meta, mad);
        Dest::Sm
    }

    /// Keeps the SA in step with the SM ([`Sa::follow`]): its snapshot, whether it serves,
    /// and the multicast groups to the SM. True if the SA took a new snapshot.
    pub fn follow(&mut self, now: Time) -> bool {
        match self.sa.as_deref_mut() {
            Some(sa) => sa.follow(now, self.sm),
            None => false,
        }
    }

    /// The earliest deadline of any agent.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Time> {
        [
            self.sm.poll_timeout(),
            self.sa.as_deref().and_then(Sa::poll_timeout),
            self.perfmgr.as_deref().and_then(PerfMgr::poll_timeout),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Fires the timers due at `now` of every agent; true if the SM's fired (its events may
    /// then end a sweep).
    pub fn handle_timeouts(&mut self, now: Time) -> bool {
        let sm_due = self.sm.poll_timeout().is_some_and(|t| t <= now);
        if sm_due {
            self.sm.handle_timeout(now);
        }
        if let Some(pm) = self.perfmgr.as_deref_mut() {
            if pm.poll_timeout().is_some_and(|t| t <= now) {
                pm.handle_timeout(now);
            }
        }
        if let Some(sa) = self.sa.as_deref_mut() {
            if sa.poll_timeout().is_some_and(|t| t <= now) {
                sa.handle_timeout(now);
            }
        }
        sm_due
    }

    /// Sends on `port` everything the agents have to send at `now`: the SM's SMPs, the
    /// performance manager's queries, then the SA's answers and Reports. A send refused with
    /// [`PortError::WouldBlock`] is counted and lost (each agent resends on its timeout);
    /// any other refusal is returned after the rest were tried.
    ///
    /// # Errors
    /// The first send the transport refused other than with `WouldBlock`; the counts of
    /// what was sent are then lost with it.
    pub fn transmit(
        &mut self,
        now: Time,
        port: &mut (impl MadPort + ?Sized),
    ) -> Result<Sent, PortError> {
        let mut sent = Sent::default();
        let mut failed = None;
        let mut buf = [0u8; MAD_LEN];
        while let Some(tx) = self.sm.poll_transmit(now, &mut buf) {
            let r = port.send(&tx.meta, buf.get(..tx.len).unwrap_or(&buf));
            sent.record(Dest::Sm, r, &mut failed);
        }
        if let Some(pm) = self.perfmgr.as_deref_mut() {
            while let Some(tx) = pm.poll_transmit(now, &mut buf) {
                let r = port.send(&tx.meta, buf.get(..tx.len).unwrap_or(&buf));
                sent.record(Dest::PerfMgr, r, &mut failed);
            }
        }
        if let Some(sa) = self.sa.as_deref_mut() {
            while let Some(r) = sa.poll_transmit(now) {
                sent.record(Dest::Sa, port.send(&r.meta, &r.mad), &mut failed);
            }
        }
        failed.map_or(Ok(sent), Err)
    }
}

impl Sent {
    /// Counts one send by `dest`; keeps the first refusal other than `WouldBlock` in `failed`.
    fn record(&mut self, dest: Dest, r: Result<(), PortError>, failed: &mut Option<PortError>) {
        match r {
            Ok(()) => match dest {
                Dest::Sm => self.sm += 1,
                Dest::Sa => self.sa += 1,
                Dest::PerfMgr => self.perfmgr += 1,
            },
            Err(PortError::WouldBlock) => self.would_block += 1,
            Err(e) => {
                failed.get_or_insert(e);
            }
        }
    }
}

/// Hands the SM's pending events to `on_event` until it asks to stop; a trap the SM took
/// goes to the SA's event subscribers first (Report, as OpenSM forwards them).
fn events(
    agents: &mut Agents<'_>,
    on_event: &mut impl FnMut(&Sm, Event) -> ControlFlow<()>,
) -> ControlFlow<()> {
    while let Some(e) = agents.sm.poll_event() {
        if let (
            Some(sa),
            Event::TrapReceived {
                ignored: false,
                source,
                notice,
                ..
            },
        ) = (agents.sa.as_deref_mut(), &e)
        {
            sa.forward_trap(*source, notice);
        }
        on_event(agents.sm, e)?;
    }
    ControlFlow::Continue(())
}

/// One round at `now`: what reached the port goes to its agent, the SA follows the SM, due
/// timers fire, what the agents have to send leaves, and the SM's events go to `on_event`
/// (a trap to the SA's subscribers too)
/// (with the SM as it is when the event is handed over) after every SM call. `on_event`
/// returning `Break` ends the round there — MADs not yet received stay in the port, nothing
/// more is sent — so the caller sees the SM in the state that produced the event (the end of
/// a sweep, say); the next round carries on.
///
/// # Errors
/// A receive or send the transport refused (a send refused with `WouldBlock` is not one).
pub fn turn(
    agents: &mut Agents<'_>,
    port: &mut (impl MadPort + ?Sized),
    now: Time,
    on_event: &mut impl FnMut(&Sm, Event) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, PortError> {
    let mut buf = [0u8; MAD_LEN];
    while let Some((meta, len)) = port.recv(&mut buf)? {
        let mad = buf.get(..len).unwrap_or(&buf);
        if agents.dispatch(now, &meta, mad) == Dest::Sm && events(agents, on_event).is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    agents.follow(now);
    if agents.handle_timeouts(now) && events(agents, on_event).is_break() {
        return Ok(ControlFlow::Break(()));
    }
    agents.transmit(now, port)?;
    Ok(events(agents, on_event))
}

/// Runs `agents` on `port` on its virtual clock until nothing is scheduled at or before
/// `until` (returns `Continue`) or `on_event` asks to stop (`Break`, at once, as in
/// [`turn`]; calling again carries on).
///
/// # Errors
/// A receive or send the transport refused (the simulator refuses a MAD from a detached SM).
pub fn drive_agents(
    agents: &mut Agents<'_>,
    port: &mut (impl VirtualClockPort + ?Sized),
    until: Time,
    mut on_event: impl FnMut(&Sm, Event) -> ControlFlow<()>,
) -> Result<ControlFlow<()>, PortError> {
    loop {
        let now = port.now();
        if turn(agents, port, now, &mut on_event)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
        if !advance(agents, port, until) {
            return Ok(ControlFlow::Continue(()));
        }
    }
}

/// Moves the virtual clock to the next thing that happens — at once if MADs wait in the
/// port, else the earlier of the transport's next event and the agents' next deadline.
/// False when nothing is scheduled at or before `until`.
pub fn advance(
    agents: &Agents<'_>,
    port: &mut (impl VirtualClockPort + ?Sized),
    until: Time,
) -> bool {
    if port.pending() > 0 {
        return true;
    }
    let now = port.now();
    match [port.next_event_time(), agents.poll_timeout()]
        .into_iter()
        .flatten()
        .min()
    {
        Some(t) if t <= until => {
            port.run_until(t.max(now));
            true
        }
        _ => false,
    }
}

/// Runs the SM alone on `port` until nothing is scheduled at or before `until` (virtual
/// time); every event it reports goes to `on_event` as it happens ([`drive_agents`]).
///
/// # Errors
/// A receive or send the transport refused (the simulator refuses a MAD from a detached SM).
pub fn drive(
    sm: &mut Sm,
    port: &mut (impl VirtualClockPort + ?Sized),
    until: Time,
    mut on_event: impl FnMut(Event),
) -> Result<(), PortError> {
    drive_agents(&mut Agents::sm(sm), port, until, |_, e| {
        on_event(e);
        ControlFlow::Continue(())
    })
    .map(|_| ())
}
