//! One drive loop for an [`Sm`] on a virtual clock: the simulator's
//! ([`VirtualClockPort`]), for the scenario tests, the fabric tests and the benchmarks.
//!
//! Each turn delivers what reached the SM's port, fires the SM's due timers, sends what the SM
//! has to send and hands its events to the caller; when the port has nothing left to deliver the
//! clock moves to the earlier of the transport's next event and the SM's next deadline. The
//! loop ends when neither is scheduled at or before `until`. The wall-clock transports (umad,
//! VFIO) run in the daemon's loop, which also serves the SA, the performance manager and the
//! control socket.

use ibmad::{PortError, Time, VirtualClockPort, MAD_LEN};

use crate::{Event, Sm};

/// One turn at the port's current time, without moving the clock: what reached the port goes
/// to the SM, its due timers fire, what it has to send leaves, and its events go to
/// `on_event`.
///
/// # Errors
/// A receive or send the transport refused.
pub fn turn(
    sm: &mut Sm,
    port: &mut impl VirtualClockPort,
    on_event: &mut impl FnMut(Event),
) -> Result<(), PortError> {
    let mut buf = [0u8; MAD_LEN];
    let now = port.now();
    while let Some((meta, len)) = port.recv(&mut buf)? {
        sm.handle_mad(now, &meta, buf.get(..len).unwrap_or(&buf));
    }
    if sm.poll_timeout().is_some_and(|t| t <= now) {
        sm.handle_timeout(now);
    }
    while let Some(tx) = sm.poll_transmit(now, &mut buf) {
        port.send(&tx.meta, buf.get(..tx.len).unwrap_or(&buf))?;
    }
    while let Some(e) = sm.poll_event() {
        on_event(e);
    }
    Ok(())
}

/// Runs `sm` on `port` until nothing is scheduled at or before `until` (virtual time): turns
/// ([`turn`]) with the clock moved in between; every event the SM reports goes to `on_event`
/// as it happens.
///
/// # Errors
/// A receive or send the transport refused (the simulator refuses a MAD from a detached SM).
pub fn drive(
    sm: &mut Sm,
    port: &mut impl VirtualClockPort,
    until: Time,
    mut on_event: impl FnMut(Event),
) -> Result<(), PortError> {
    loop {
        let now = port.now();
        turn(sm, port, &mut on_event)?;
        if port.pending() > 0 {
            continue;
        }
        match [port.next_event_time(), sm.poll_timeout()]
            .into_iter()
            .flatten()
            .min()
        {
            Some(t) if t <= until => port.run_until(t.max(now)),
            _ => return Ok(()),
        }
    }
}
