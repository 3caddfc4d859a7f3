use super::*;
use crate::rmpp::{self, RmppFlags, RmppType};
use crate::testnet::{mad, Net};

const SA: u8 = 0x03;
const ALL_REQUESTS: u128 = (1 << 0x01) | (1 << 0x02) | (1 << 0x12) | (1 << 0x14) | (1 << 0x15);

/// A client at LID 2 and an SA (the SM client) at LID 1, both with an SA agent (RMPP).
fn client_and_sa(
    tune_sa: impl FnOnce(&mut Config),
    tune_client: impl FnOnce(&mut Config),
) -> (Net, u32, u32) {
    let mut net = Net::new();
    let sa = net.add(1, true, tune_sa);
    let cl = net.add(2, false, tune_client);
    let a_sa = net.peers[sa].register(SA, 2, 1, ALL_REQUESTS);
    let a_cl = net.peers[cl].register(SA, 2, 1, 0);
    (net, a_sa, a_cl)
}

fn records_response(req: &[u8], data_len: usize) -> Vec<u8> {
    let mut r = req[..56].to_vec();
    r[3] = 0x92;
    if let Some(h) = rmpp::header_mut(&mut r) {
        h.b2 = RmppFlags::ACTIVE;
    }
    r.extend((0..data_len).map(|i| (i * 7 % 256) as u8));
    r
}

#[test]
fn request_and_response_with_kernel_tids_and_addresses() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x01, 0x0000_0000_1234_5678, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 100, 0, &req)
        .unwrap();
    net.pump();
    let got = net.peers[0].read_all();
    assert_eq!(got.len(), 1, "the SA got the request");
    let (h, m) = &got[0];
    assert_eq!(h.id, a_sa);
    assert_eq!(
        (h.lid, h.qpn, h.status),
        (2, 1, 0),
        "from LID 2, QP 1 as on hardware"
    );
    let tid = tid_of(m);
    assert_eq!(
        tid & 0xFFFF_FFFF,
        0x1234_5678,
        "low 32 bits are the client's"
    );
    assert_eq!(
        (tid >> 32) & 0xFFFF,
        1,
        "the client's first agent has hi_tid 1"
    );
    assert_eq!(tid >> 48, 1, "the simulator wrote the client's slot");
    let mut resp = m.clone();
    resp[3] = 0x81;
    net.peers[0]
        .send(net.now, a_sa, h.lid, h.qpn, 0, 0, &resp)
        .unwrap();
    net.pump();
    let got = net.peers[1].read_all();
    assert_eq!(got.len(), 1);
    let (h, m) = &got[0];
    assert_eq!((h.id, h.status, h.lid, h.qpn), (a_cl, 0, 1, 1));
    assert_eq!(h.length, 56 + 256);
    assert_eq!(
        tid_of(m),
        (1u64 << 32) | 0x1234_5678,
        "slot bits cleared for the reader"
    );
    assert!(
        net.peers[1].core.poll_timeout().is_none(),
        "the request is complete"
    );
}

#[test]
fn a_request_to_a_dead_lid_times_out_after_timeout_times_retries_plus_one() {
    let (mut net, _, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x01, 7, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 99, 1, 200, 2, &req)
        .unwrap();
    net.advance_ms(599);
    assert!(net.peers[1].read_all().is_empty(), "nothing before 600 ms");
    let sent = net.log.iter().filter(|(from, _)| *from == 1).count();
    assert_eq!(
        sent, 3,
        "the request and two resends (each returned undelivered)"
    );
    net.advance_ms(1);
    let got = net.peers[1].read_all();
    assert_eq!(got.len(), 1);
    let (h, m) = &got[0];
    assert_eq!(h.status, STATUS_TIMEOUT);
    assert_eq!(
        (h.timeout_ms, h.retries, h.lid),
        (200, 2, 99),
        "the writer's header comes back"
    );
    assert_eq!(m.len(), MAD_HDR_LEN, "header + the 24-byte MAD header");
    assert_eq!(tid_of(m), (1u64 << 32) | 7, "with the TID as sent");
    assert_eq!(net.peers[1].core.stats().bounced, 3);
}

#[test]
fn late_responses_and_responses_to_unwaited_sends_are_dropped() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x01, 9, 0x11, 256);
    net.peers[1].send(net.now, a_cl, 1, 1, 50, 0, &req).unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    net.advance_ms(60);
    let mut resp = m.clone();
    resp[3] = 0x81;
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 0, &resp)
        .unwrap();
    net.pump();
    let got = net.peers[1].read_all();
    assert_eq!(got.len(), 1);
    assert_eq!(
        got[0].0.status, STATUS_TIMEOUT,
        "only the timeout, not the late response"
    );
    assert_eq!(net.peers[1].core.stats().unmatched_responses, 1);
    // timeout_ms = 0: nobody waits, so the answer is dropped too (as ib_mad does).
    let req = mad(SA, 2, 0x01, 10, 0x11, 256);
    net.peers[1].send(net.now, a_cl, 1, 1, 0, 0, &req).unwrap();
    net.pump();
    let (h, mut m) = net.peers[0].read_all().remove(0);
    m[3] = 0x81;
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 0, &m)
        .unwrap();
    net.pump();
    assert!(net.peers[1].read_all().is_empty());
    assert_eq!(net.peers[1].core.stats().unmatched_responses, 2);
}

#[test]
fn a_multi_segment_response_is_read_as_one_buffer_after_enospc() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x12, 0x77, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 1000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    let resp = records_response(&m, 108 * 90); // 90 NodeRecords: 49 segments
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 3, &resp)
        .unwrap();
    net.pump();
    let acks = net
        .log
        .iter()
        .filter(|(from, f)| *from == 1 && rmpp::header(&f.mad).unwrap().kind() == RmppType::ACK)
        .count();
    assert_eq!(
        acks, 2,
        "49 segments: the first ACK opens 64, the last ACK ends it"
    );
    assert_eq!(
        net.peers[1].readable, 1,
        "one packet for the whole transfer"
    );
    let small = net.peers[1].read(56 + 256);
    let ReadResult::NoSpace(first) = small else {
        panic!("{small:?}")
    };
    let h = UmadHdr::decode(HdrFraming::Old, &first).unwrap();
    assert_eq!(h.length as usize, 56 + resp.len(), "the length needed");
    assert_eq!(first.len(), 56 + 256);
    let ReadResult::Data(all) = net.peers[1].read(56 + resp.len()) else {
        panic!()
    };
    let body = &all[56..];
    assert_eq!(body.len(), resp.len());
    assert_eq!(&body[56..], &resp[56..], "records intact");
    assert_eq!(&body[36..56], &resp[36..56], "SA header intact");
    assert_eq!(tid_of(body), tid_of(&req) & 0xFFFF_FFFF | (1 << 32));
    assert_eq!(net.peers[1].read(1 << 20), ReadResult::Empty);
    assert!(
        net.peers[0].core.poll_timeout().is_none(),
        "the SA's send is done (no response expected)"
    );
    assert_eq!(net.peers[0].core.stats().rmpp_retransmits, 0);
}

#[test]
fn one_record_answers_are_one_segment_transfers() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x12, 5, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 1000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    let resp = records_response(&m, 108);
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 3, &resp)
        .unwrap();
    net.pump();
    let got = net.peers[1].read_all();
    assert_eq!(
        got[0].1.len(),
        56 + 108,
        "length from the Last segment's PayloadLength"
    );
    let rh = rmpp::header(&got[0].1).unwrap();
    assert_eq!(
        rh.flags(),
        RmppFlags(RmppFlags::ACTIVE | RmppFlags::FIRST | RmppFlags::LAST)
    );
}

#[test]
fn a_lost_segment_is_retransmitted_after_the_ack_timeout_and_the_transfer_completes() {
    let (mut net, a_sa, a_cl) = client_and_sa(
        |c| {
            c.faults.drop_data_segment = Some(3);
        },
        |_| {},
    );
    let req = mad(SA, 2, 0x12, 0x99, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 5000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    let resp = records_response(&m, 200 * 10);
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 3, &resp)
        .unwrap();
    net.pump();
    assert!(net.peers[1].read_all().is_empty(), "segment 3 is missing");
    net.advance_ms(1999);
    assert!(net.peers[1].read_all().is_empty());
    net.advance_ms(1);
    let got = net.peers[1].read_all();
    assert_eq!(got.len(), 1, "complete after the 2 s ACK timeout");
    assert_eq!(&got[0].1[56..], &resp[56..]);
    assert_eq!(net.peers[0].core.stats().rmpp_retransmits, 1);
}

#[test]
fn a_peer_that_stops_acking_gets_an_abort_and_both_readers_an_error() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |c| c.faults.max_acks = Some(0));
    let req = mad(SA, 2, 0x12, 0x55, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 3000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    let resp = records_response(&m, 200 * 4);
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 2, &resp)
        .unwrap();
    net.advance_ms(5999);
    assert!(
        net.peers[0].read_all().is_empty(),
        "3 windows of 2 s before giving up"
    );
    net.advance_ms(1);
    let sa_got = net.peers[0].read_all();
    assert_eq!(sa_got.len(), 1);
    assert_eq!(
        sa_got[0].0.status, STATUS_TIMEOUT,
        "the SA's reader learns its send failed"
    );
    let abort = net
        .log
        .iter()
        .find(|(from, f)| *from == 0 && rmpp::header(&f.mad).unwrap().kind() == RmppType::ABORT)
        .map(|(_, f)| *f)
        .expect("an ABORT went to the client");
    assert_eq!(
        rmpp::header(&abort.mad).unwrap().rmpp_status,
        RmppStatus::TOO_MANY_RETRIES.0
    );
    assert_eq!(abort.dlid.get(), 2);
    let data_frames = net
        .log
        .iter()
        .filter(|(from, f)| *from == 0 && rmpp::header(&f.mad).unwrap().kind() == RmppType::DATA)
        .count();
    assert_eq!(
        data_frames, 3,
        "segment 1 sent once and retransmitted twice (window 1)"
    );
    // The client's transfer was aborted: its request ends with ETIMEDOUT at 3 s.
    net.advance_ms(3000);
    let cl_got = net.peers[1].read_all();
    assert_eq!(cl_got.len(), 1);
    assert_eq!(cl_got[0].0.status, STATUS_TIMEOUT);
    assert!(
        net.peers[1].core.recvs.is_empty(),
        "the ABORT freed the receive"
    );
}

#[test]
fn an_abort_from_the_receiver_ends_the_send_with_an_error() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x12, 0x56, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 3000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    // Segment 2 arrives with a nonzero RMPPStatus: the receiver answers ABORT (BAD_STATUS).
    net.drop = Box::new(|from, f| {
        if from == 0 && rmpp::header(&f.mad).is_some_and(|h| h.data1.get() == 2) {
            f.mad[27] = 9;
        }
        false
    });
    let resp = records_response(&m, 200 * 3);
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 2, &resp)
        .unwrap();
    net.pump();
    let abort = net.log.iter().any(|(from, f)| {
        *from == 1
            && rmpp::header(&f.mad).is_some_and(|h| {
                h.kind() == RmppType::ABORT && h.rmpp_status == RmppStatus::ILLEGAL_STATUS.0
            })
    });
    assert!(abort, "the client sent ABORT");
    let sa_got = net.peers[0].read_all();
    assert_eq!(sa_got.len(), 1);
    assert_eq!(sa_got[0].0.status, STATUS_ABORTED);
    assert!(net.peers[0].core.poll_timeout().is_none());
}

#[test]
fn the_header_grows_to_64_bytes_with_enable_pkey_or_register_agent2() {
    let mut c = Core::new(Config::default());
    let f = c.open_file(0);
    assert_eq!(c.hdr_len(f), Some(56));
    c.enable_pkey(f).unwrap();
    assert_eq!(c.hdr_len(f), Some(64));
    let req = RegRequest {
        qpn: 1,
        class: SA,
        class_version: 2,
        rmpp_version: 1,
        ..RegRequest::default()
    };
    c.register(f, &req).unwrap();
    assert_eq!(c.enable_pkey(f), Err(libc::EINVAL), "too late once used");
    let g = c.open_file(1);
    let v2 = RegRequest {
        v2: true,
        class: 0x04,
        class_version: 1,
        ..req
    };
    assert_eq!(
        c.register(g, &RegRequest { flags: 2, ..v2 }),
        Err(RegError::BadFlags {
            supported: USER_RMPP
        })
    );
    c.register(
        g,
        &RegRequest {
            rmpp_version: 0,
            ..v2
        },
    )
    .unwrap();
    assert_eq!(c.hdr_len(g), Some(64));
}

#[test]
fn registrations_are_checked_like_the_kernel() {
    let mut c = Core::new(Config::default());
    let f = c.open_file(0);
    let base = RegRequest {
        qpn: 1,
        class: SA,
        class_version: 2,
        methods: 1 << 1,
        ..RegRequest::default()
    };
    let inval = Err(RegError::Errno(libc::EINVAL));
    assert_eq!(c.register(f, &RegRequest { qpn: 2, ..base }), inval);
    assert_eq!(
        c.register(f, &RegRequest { qpn: 0, ..base }),
        inval,
        "SA on QP0"
    );
    assert_eq!(
        c.register(
            f,
            &RegRequest {
                class: 0x81,
                ..base
            }
        ),
        inval,
        "SMI on QP1"
    );
    assert_eq!(
        c.register(
            f,
            &RegRequest {
                class: 0x04,
                rmpp_version: 1,
                ..base
            }
        ),
        inval
    );
    assert_eq!(
        c.register(
            f,
            &RegRequest {
                class_version: 8,
                ..base
            }
        ),
        inval
    );
    assert_eq!(
        c.register(
            f,
            &RegRequest {
                class: 0x31,
                ..base
            }
        ),
        inval,
        "vendor without OUI"
    );
    assert_eq!(c.register(f, &base), Ok(0));
    assert_eq!(c.register(f, &base), inval, "method already taken");
    assert_eq!(
        c.register(
            f,
            &RegRequest {
                methods: 1 << 2,
                ..base
            }
        ),
        Ok(1)
    );
    for i in 2..MAX_AGENTS as u32 {
        assert_eq!(c.register(f, &RegRequest { class: 0, ..base }), Ok(i));
    }
    assert_eq!(
        c.register(f, &RegRequest { class: 0, ..base }),
        Err(RegError::Errno(libc::ENOMEM))
    );
    assert_eq!(c.unregister(f, 40), Err(libc::EINVAL));
    c.unregister(f, 1).unwrap();
    assert_eq!(c.unregister(f, 1), Err(libc::EINVAL));
}

#[test]
fn writes_are_validated() {
    let (mut net, _, a_cl) = client_and_sa(|_| {}, |_| {});
    let now = net.now;
    let p = &mut net.peers[1];
    let req = mad(SA, 2, 0x01, 1, 0x11, 256);
    assert_eq!(
        p.send(now, 5, 1, 1, 0, 0, &req),
        Err(libc::EINVAL),
        "unknown agent"
    );
    assert_eq!(
        p.send(now, a_cl, 1, 1, 0, 0, &req[..35]),
        Err(libc::EINVAL),
        "short"
    );
    let long = mad(SA, 2, 0x01, 1, 0x11, 300);
    assert_eq!(
        p.send(now, a_cl, 1, 1, 0, 0, &long),
        Err(libc::EINVAL),
        "long without RMPP"
    );
    assert_eq!(p.send(now, a_cl, 1, 1, 100, 0, &req), Ok(56 + 256));
    assert_eq!(
        p.send(now, a_cl, 1, 1, 100, 0, &req),
        Err(libc::EINVAL),
        "second outstanding request with the same TID"
    );
    let short = mad(SA, 2, 0x01, 2, 0x11, 100);
    assert_eq!(
        p.send(now, a_cl, 1, 1, 0, 0, &short),
        Ok(56 + 100),
        "short MADs are padded"
    );
    let sent = p
        .core
        .poll_transmit()
        .into_iter()
        .chain(p.core.poll_transmit())
        .last()
        .unwrap();
    assert!(sent.mad[100..].iter().all(|&b| b == 0));
}

#[test]
fn a_get_nobody_registered_for_is_answered_unsupported() {
    let mut net = Net::new();
    let sm = net.add(1, true, |_| {});
    let cl = net.add(2, false, |_| {});
    let _ = sm;
    let a = net.peers[cl].register(0x04, 1, 0, 0);
    let req = mad(0x04, 1, 0x01, 3, 0x12, 256);
    net.peers[cl].send(net.now, a, 1, 1, 100, 0, &req).unwrap();
    net.pump();
    let got = net.peers[cl].read_all();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1[3], 0x81);
    assert_eq!(u16::from_be_bytes([got[0].1[4], got[0].1[5]]), 0x000C);
}

#[test]
fn reads_follow_ib_umad() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x01, 1, 0x11, 256);
    net.peers[1].send(net.now, a_cl, 1, 1, 0, 0, &req).unwrap();
    net.pump();
    let p = &mut net.peers[0];
    assert_eq!(
        p.read(40),
        ReadResult::Errno {
            errno: libc::EINVAL,
            requeued: false
        }
    );
    assert_eq!(
        p.read(56 + 100),
        ReadResult::Errno {
            errno: libc::EINVAL,
            requeued: true
        }
    );
    let ReadResult::Data(b) = p.read(56 + 256) else {
        panic!()
    };
    assert_eq!(b.len(), 312);
    assert_eq!(UmadHdr::decode(HdrFraming::Old, &b).unwrap().id, a_sa);
    assert_eq!(p.read(400), ReadResult::Empty);
}

#[test]
fn unregistering_cancels_outstanding_sends_silently() {
    let (mut net, _, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x01, 1, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 99, 1, 100, 5, &req)
        .unwrap();
    let f = net.peers[1].file;
    net.peers[1].core.unregister(f, a_cl).unwrap();
    net.advance_ms(1000);
    assert!(net.peers[1].read_all().is_empty());
    assert!(net.peers[1].core.poll_timeout().is_none());
}

#[test]
fn acks_find_the_sender_by_qp_when_two_clients_share_a_node() {
    // The SA and a second client (no SM) on the same LID: the client's ACK is a request
    // (GetTable), which the simulator routes by the DATA's source QP.
    let mut net = Net::new();
    let other = net.add(1, false, |_| {});
    let sa = net.add(1, true, |_| {});
    let cl = net.add(2, false, |_| {});
    let _ = net.peers[other].register(SA, 2, 1, ALL_REQUESTS);
    let a_sa = net.peers[sa].register(SA, 2, 1, ALL_REQUESTS);
    let a_cl = net.peers[cl].register(SA, 2, 1, 0);
    let req = mad(SA, 2, 0x12, 0x31, 0x11, 256);
    net.peers[cl]
        .send(net.now, a_cl, 1, 1, 1000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[sa].read_all().remove(0);
    let resp = records_response(&m, 200 * 70);
    net.peers[sa]
        .send(net.now, a_sa, h.lid, 1, 0, 1, &resp)
        .unwrap();
    net.pump();
    let got = net.peers[cl].read_all();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1.len(), resp.len());
    assert!(
        net.peers[other].read_all().is_empty(),
        "the other client saw nothing"
    );
}

#[test]
fn an_incomplete_receive_is_aborted_after_40_seconds() {
    let (mut net, a_sa, a_cl) = client_and_sa(|_| {}, |_| {});
    let req = mad(SA, 2, 0x12, 0x42, 0x11, 256);
    net.peers[1]
        .send(net.now, a_cl, 1, 1, 60_000, 0, &req)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[0].read_all().remove(0);
    // The SA's segments after the first are lost for good.
    net.drop =
        Box::new(|from, f| from == 0 && rmpp::header(&f.mad).is_some_and(|h| h.data1.get() > 1));
    let resp = records_response(&m, 200 * 5);
    net.peers[0]
        .send(net.now, a_sa, h.lid, 1, 0, 100, &resp)
        .unwrap();
    net.advance_ms(40_000);
    let t2l = net.log.iter().any(|(from, f)| {
        *from == 1
            && rmpp::header(&f.mad).is_some_and(|h| {
                h.kind() == RmppType::ABORT && h.rmpp_status == RmppStatus::TOTAL_TIME_TOO_LONG.0
            })
    });
    assert!(t2l, "the receiver gave up with T2L");
    let sa_got = net.peers[0].read_all();
    assert_eq!(sa_got.len(), 1, "and the SA's send ended");
    assert_eq!(sa_got[0].0.status, STATUS_ABORTED);
}

#[test]
fn user_rmpp_agents_get_rmpp_mads_raw() {
    // An agent registered with IB_USER_MAD_USER_RMPP does RMPP itself: segments and ACKs reach
    // it as they are, and its own active RMPP writes go out unsegmented.
    let mut net = Net::new();
    let sa = net.add(1, true, |_| {});
    let cl = net.add(2, false, |_| {});
    let a_sa = net.peers[sa].register(SA, 2, 1, ALL_REQUESTS);
    let f = net.peers[cl].file;
    let req = RegRequest {
        qpn: 1,
        class: SA,
        class_version: 2,
        rmpp_version: 1,
        flags: USER_RMPP,
        v2: true,
        ..RegRequest::default()
    };
    let a_cl = net.peers[cl].core.register(f, &req).unwrap();
    let q = mad(SA, 2, 0x12, 0x61, 0x11, 256);
    net.peers[cl]
        .send(net.now, a_cl, 1, 1, 1000, 0, &q)
        .unwrap();
    net.pump();
    let (h, m) = net.peers[sa].read_all().remove(0);
    let resp = records_response(&m, 200 * 3);
    net.peers[sa]
        .send(net.now, a_sa, h.lid, 1, 0, 1, &resp)
        .unwrap();
    net.pump();
    let got = net.peers[cl].read_all();
    assert_eq!(got.len(), 1, "the first segment, raw (window 1)");
    assert_eq!(got[0].1.len(), 256);
    let rh = rmpp::header(&got[0].1).unwrap();
    assert_eq!((rh.kind(), rh.data1.get()), (RmppType::DATA, 1));
    // The client acknowledges by hand: the SA's kernel RMPP sends the rest.
    let mut ack = got[0].1.clone();
    ack[3] = 0x12;
    let ah = rmpp::header_mut(&mut ack).unwrap();
    ah.rmpp_type = RmppType::ACK.0;
    ah.set_flags_raw(RmppFlags::ACTIVE);
    ah.data1.set(1);
    ah.data2.set(3);
    net.peers[cl].send(net.now, a_cl, 1, 1, 0, 0, &ack).unwrap();
    net.pump();
    let got = net.peers[cl].read_all();
    assert_eq!(got.len(), 2, "segments 2 and 3, raw");
}
