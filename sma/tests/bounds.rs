//! The agent's queues are bounded: an owner that stops polling costs memory up to a limit,
//! never unbounded growth, and the overflow is counted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use ibmad::zerocopy::IntoBytes;
use ibmad::{Method, PortNum, SmpAttrId, Time};
use sma::{Discard, Event, MAX_EVENTS, MAX_TX_QUEUE};

#[test]
fn transmit_queue_is_bounded_and_overflow_counted() {
    let mut a = switch(0x700, 4);
    for p in 1..=4 {
        a.handle_link(Time::ZERO, PortNum(p), UP);
    }
    let _ = events(&mut a);
    let s = dr(Method::GET, SmpAttrId::NODE_INFO, 0, &[1, 3, 2]);
    let extra = 10;
    for _ in 0..MAX_TX_QUEUE + extra {
        a.handle_mad(Time::ZERO, &meta(4), s.as_bytes());
    }
    assert_eq!(a.stats().tx_dropped, extra as u64);
    let full: Vec<Event> = events(&mut a);
    assert_eq!(
        full.iter()
            .filter(|e| matches!(
                e,
                Event::Discarded {
                    reason: Discard::TxQueueFull,
                    ..
                }
            ))
            .count(),
        extra
    );
    assert_eq!(drain(&mut a).len(), MAX_TX_QUEUE);
}

#[test]
fn event_queue_is_bounded_and_keeps_the_newest() {
    let mut a = ca(0x500, 1);
    let junk = [0u8; 10];
    for _ in 0..MAX_EVENTS + 5 {
        a.handle_mad(Time::ZERO, &meta(1), &junk);
    }
    assert_eq!(a.stats().events_dropped, 5);
    assert_eq!(a.stats().malformed, (MAX_EVENTS + 5) as u64);
    assert_eq!(events(&mut a).len(), MAX_EVENTS);
}
