//! The SA database file: OpenSM's `opensm-sa.dump` (`sa_db_dump`), read back at start with
//! `sa_db_file` (`-S`), so that a restarted SM keeps its multicast groups with their MLIDs,
//! the registered services and the event subscriptions (OpenSM `osm_sa.c`,
//! `osm_sa_db_file_dump` and `osm_sa_db_file_load`).
//!
//! [`dump`] writes OpenSM's text, one record per line and a blank line after each:
//! - `MC Group 0xMLID[ (well known)]: mgid=… port_gid=… qkey=… mlid=… mtu=… tclass=… pkey=…
//!   rate=… pkt_life=… sl_flow_hop=… scope_state=… proxy_join=…`, the raw MCMemberRecord
//!   bytes of the group (selectors in the top bits of mtu, rate and pkt_life), then one
//!   `mcm_port: port_gid=… scope_state=… proxy_join=…` per member;
//! - `InformInfo Record: subscriber_gid=… subscriber_enum=… InformInfo: gid=… … node_type=…
//!   rep_addr: lid=… path_bits=… static_rate=… remote_qp=… remote_qkey=… pkey_ix=… sl=…`;
//! - `Service Record: id=… gid=… pkey=… lease=… key=… name='…' data8=… data16=… data32=…
//!   data64=… modified_time=… lease_period=…`.
//!
//! A well-known group's JoinState is FullMember, as OpenSM creates the partitions' groups.
//! Groups come in MGID order, subscriptions newest first, services in registration order,
//! as OpenSM's maps and lists give them. GUIDInfo records (alias GUIDs) are not written: this
//! SA assigns none. `modified_time` is 0: the SA keeps no wall-clock time (OpenSM writes the
//! registration time and does not read it back for anything but the record).
//!
//! [`parse`] reads the same text (as OpenSM's loader: `#` lines and lines it does not know
//! are skipped, a known line that does not parse is an error naming its line);
//! [`SaDb::restore`] puts the records into an SA's state. A group whose MGID is already there
//! with another MLID, or whose MLID another group holds, is skipped and reported (OpenSM then
//! asks every client to re-register); a group left without a full member is dropped unless it
//! is well known, as OpenSM's loader does.

use std::fmt::Write as _;

use ibmad::sa_rec::inform::{InformInfo, InformInfoRecord};
use ibmad::sa_rec::mcmember::{McMemberRecord, Repr as McMemberRepr};
use ibmad::sa_rec::service::{ServiceRecord, LEASE_INFINITE};
use ibmad::zerocopy::FromZeros;
use ibmad::{Gid, Lid, MadMeta, PortNum, QKey, Time};

use super::SaState;

/// `0xPREFIX:0xINTERFACE`, as OpenSM prints a GID.
fn gid_text(g: &[u8; 16]) -> String {
    let (hi, lo) = g.split_at(8);
    let word = |b: &[u8]| b.iter().fold(0u64, |a, &x| a << 8 | u64::from(x));
    format!("0x{:016x}:0x{:016x}", word(hi), word(lo))
}

/// Eight bytes as one hex number.
fn bytes_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// OpenSM's `opensm-sa.dump` text of `state` (see the module docs).
#[must_use]
pub fn dump(state: &SaState) -> String {
    let mut out = String::new();
    for g in state.mcast.groups() {
        let mut r = g.rec.to_raw();
        if g.well_known && g.rec.join_state == 0 {
            // OpenSM creates the partitions' groups with JoinState FullMember.
            r.set_join_state(ibmad::sa_rec::mcmember::join::FULL);
        }
        // `write!` to a String cannot fail.
        let _ = write!(
            out,
            "MC Group 0x{:04x} {}: mgid={} port_gid={} qkey=0x{:08x} mlid=0x{:04x} mtu=0x{:02x} \
             tclass=0x{:02x} pkey=0x{:04x} rate=0x{:02x} pkt_life=0x{:02x} \
             sl_flow_hop=0x{:08x} scope_state=0x{:02x} proxy_join=0x{:x}\n\n",
            g.rec.mlid.0,
            if g.well_known { " (well known)" } else { "" },
            gid_text(&r.mgid),
            gid_text(&r.port_gid),
            r.q_key.get(),
            r.mlid.get(),
            r.mtu_b,
            r.t_class,
            r.p_key.get(),
            r.rate_b,
            r.life_b,
            r.sl_flow_hop.get(),
            r.scope_state,
            u8::from(g.rec.proxy_join),
        );
        for (gid, m) in &g.members {
            let _ = write!(
                out,
                "mcm_port: port_gid={} scope_state=0x{:02x} proxy_join=0x{:x}\n\n",
                gid_text(&gid.0),
                (g.rec.scope & 0xF) << 4 | (m.join_state & 0xF),
                u8::from(m.proxy),
            );
        }
    }
    for (rec, addr) in state.informs.entries() {
        let ii = &rec.inform_info;
        let _ = write!(
            out,
            "InformInfo Record: subscriber_gid={} subscriber_enum=0x{:x} InformInfo: gid={} \
             lid_range_begin=0x{:x} lid_range_end=0x{:x} is_generic=0x{:x} subscribe=0x{:x} \
             trap_type=0x{:x} trap_num=0x{:x} qpn_resp_time_val=0x{:x} node_type=0x{:06x} \
             rep_addr: lid=0x{:04x} path_bits=0x{:02x} static_rate=0x{:02x} \
             remote_qp=0x{:08x} remote_qkey=0x{:08x} pkey_ix=0x{:04x} sl=0x{:02x}\n\n",
            gid_text(&rec.subscriber_gid),
            rec.subscriber_enum.get(),
            gid_text(&ii.gid),
            ii.lid_range_begin.get(),
            ii.lid_range_end.get(),
            ii.is_generic,
            ii.subscribe,
            ii.trap_type.get(),
            ii.trap_num.get(),
            ii.qpn_resp_time.get(),
            ii.producer_type(),
            addr.dlid.0,
            addr.path_bits,
            0,
            addr.qp,
            addr.qkey.0,
            addr.pkey_index,
            addr.sl,
        );
    }
    for sr in state.services.records() {
        let name_len = sr
            .service_name
            .iter()
            .position(|&b| b == 0)
            .unwrap_or(sr.service_name.len());
        let name = String::from_utf8_lossy(&sr.service_name[..name_len]);
        let d16: Vec<u16> = sr.service_data16.iter().map(|v| v.get()).collect();
        let d32: Vec<u32> = sr.service_data32.iter().map(|v| v.get()).collect();
        let _ = write!(
            out,
            "Service Record: id=0x{:016x} gid={} pkey=0x{:x} lease=0x{:x} key=0x{}:0x{} \
             name='{}' data8=0x{}:0x{} \
             data16=0x{:04x}{:04x}{:04x}{:04x}:0x{:04x}{:04x}{:04x}{:04x} \
             data32=0x{:08x}{:08x}:0x{:08x}{:08x} data64=0x{:016x}:0x{:016x} \
             modified_time=0x0 lease_period=0x{:x}\n\n",
            sr.service_id.get(),
            gid_text(&sr.service_gid),
            sr.service_pkey.get(),
            sr.service_lease.get(),
            bytes_hex(&sr.service_key[..8]),
            bytes_hex(&sr.service_key[8..]),
            name,
            bytes_hex(&sr.service_data8[..8]),
            bytes_hex(&sr.service_data8[8..]),
            d16[0],
            d16[1],
            d16[2],
            d16[3],
            d16[4],
            d16[5],
            d16[6],
            d16[7],
            d32[0],
            d32[1],
            d32[2],
            d32[3],
            sr.service_data64[0].get(),
            sr.service_data64[1].get(),
            sr.service_lease.get(),
        );
    }
    out
}

/// A line of an SA database file that does not parse.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {what}")]
pub struct DbError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub what: String,
}

/// One multicast group of the file, with its members (PortGID, JoinState, ProxyJoin).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DbGroup {
    /// The group's record (its MLID included).
    pub rec: McMemberRepr,
    /// `(well known)`.
    pub well_known: bool,
    /// The `mcm_port` lines after it.
    pub members: Vec<(Gid, u8, bool)>,
}

/// The records of an SA database file ([`parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SaDb {
    /// Multicast groups in file order.
    pub groups: Vec<DbGroup>,
    /// Event subscriptions and where their Reports go.
    pub informs: Vec<(InformInfoRecord, MadMeta)>,
    /// Services (their lease, in seconds, is the record's).
    pub services: Vec<ServiceRecord>,
}

/// What [`SaDb::restore`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Groups restored (with at least one full member, or well known).
    pub groups: usize,
    /// Members restored.
    pub members: usize,
    /// Subscriptions restored.
    pub informs: usize,
    /// Services restored.
    pub services: usize,
    /// Records skipped, and why (OpenSM then turns client re-registration on).
    pub skipped: Vec<String>,
}

/// A cursor over one line: each field is found after the previous one, as OpenSM's
/// `PARSE_AHEAD` does.
struct Fields<'a> {
    rest: &'a str,
    line: usize,
}

impl<'a> Fields<'a> {
    fn err(&self, what: impl Into<String>) -> DbError {
        DbError {
            line: self.line,
            what: what.into(),
        }
    }

    /// The text after the next `key` up to the next space (or the end).
    fn raw(&mut self, key: &str) -> Result<&'a str, DbError> {
        let at = self
            .rest
            .find(key)
            .ok_or_else(|| self.err(format!("no `{}`", key.trim())))?;
        let after = &self.rest[at + key.len()..];
        let end = after.find(' ').unwrap_or(after.len());
        self.rest = &after[end..];
        Ok(after[..end].trim_end())
    }

    /// A hex number after `key` (which ends in `0x`), at most `bits` wide.
    fn hex(&mut self, key: &str, bits: u32) -> Result<u64, DbError> {
        let t = self.raw(key)?;
        let t = t.split(':').next().unwrap_or(t);
        let v = u64::from_str_radix(t, 16)
            .map_err(|_| self.err(format!("`{}{t}` is not a hex number", key.trim())))?;
        if bits < 64 && v >> bits != 0 {
            return Err(self.err(format!("`{}{t}` is wider than {bits} bits", key.trim())));
        }
        Ok(v)
    }

    /// `0xHI:0xLO` after `key` (which ends in `0x`): two 64-bit halves.
    fn pair(&mut self, key: &str) -> Result<(u64, u64), DbError> {
        let t = self.raw(key)?;
        let (hi, lo) = t
            .split_once(":0x")
            .ok_or_else(|| self.err(format!("`{}{t}` is not 0x…:0x…", key.trim())))?;
        let num = |s: &str| u64::from_str_radix(s, 16).ok();
        match (num(hi), num(lo)) {
            (Some(h), Some(l)) => Ok((h, l)),
            _ => Err(self.err(format!("`{}{t}` is not 0x…:0x…", key.trim()))),
        }
    }

    fn gid(&mut self, key: &str) -> Result<[u8; 16], DbError> {
        let (hi, lo) = self.pair(key)?;
        let mut g = [0u8; 16];
        g[..8].copy_from_slice(&hi.to_be_bytes());
        g[8..].copy_from_slice(&lo.to_be_bytes());
        Ok(g)
    }

    /// Sixteen bytes printed as `0x<16 hex>:0x<16 hex>`.
    fn bytes16(&mut self, key: &str) -> Result<[u8; 16], DbError> {
        self.gid(key)
    }
}

/// `v` in a narrower type (the callers checked its width with [`Fields::hex`]).
fn narrow<T: TryFrom<u64> + Default>(v: u64) -> T {
    T::try_from(v).unwrap_or_default()
}

/// Reads an SA database file (see the module docs).
///
/// # Errors
/// The first known line (`MC Group`, `mcm_port` after a group, `InformInfo Record`,
/// `Service Record`) that lacks a field or has a malformed one.
pub fn parse(text: &str) -> Result<SaDb, DbError> {
    let mut db = SaDb::default();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim_start();
        let mut f = Fields {
            rest: line,
            line: i + 1,
        };
        if line.starts_with('#') {
            continue;
        }
        if line.starts_with("MC Group") {
            let mlid = f.hex("MC Group 0x", 16)?;
            let well_known = line.contains("(well known)");
            let mut r = McMemberRecord::new_zeroed();
            r.mgid = f.gid(" mgid=0x")?;
            r.port_gid = f.gid(" port_gid=0x")?;
            r.q_key.set(narrow(f.hex(" qkey=0x", 32)?));
            r.mlid.set(narrow(f.hex(" mlid=0x", 16)?));
            r.mtu_b = narrow(f.hex(" mtu=0x", 8)?);
            r.t_class = narrow(f.hex(" tclass=0x", 8)?);
            r.p_key.set(narrow(f.hex(" pkey=0x", 16)?));
            r.rate_b = narrow(f.hex(" rate=0x", 8)?);
            r.life_b = narrow(f.hex(" pkt_life=0x", 8)?);
            r.sl_flow_hop.set(narrow(f.hex(" sl_flow_hop=0x", 32)?));
            r.scope_state = narrow(f.hex(" scope_state=0x", 8)?);
            let proxy = f.hex(" proxy_join=0x", 8)?;
            r.set_proxy_join(u8::from(proxy != 0));
            let mut rec = McMemberRepr::from_raw(&r);
            rec.mlid = Lid(narrow(mlid));
            db.groups.push(DbGroup {
                rec,
                well_known,
                members: Vec::new(),
            });
        } else if line.starts_with("mcm_port") {
            let Some(g) = db.groups.last_mut() else {
                continue;
            };
            let gid = f.gid(" port_gid=0x")?;
            let ss: u8 = narrow(f.hex(" scope_state=0x", 8)?);
            let proxy = f.hex(" proxy_join=0x", 8)? != 0;
            g.members.push((Gid(gid), ss & 0xF, proxy));
        } else if line.starts_with("InformInfo Record") {
            let mut rec = InformInfoRecord::new_zeroed();
            rec.subscriber_gid = f.gid(" subscriber_gid=0x")?;
            rec.subscriber_enum
                .set(narrow(f.hex(" subscriber_enum=0x", 16)?));
            let mut ii = InformInfo::new_zeroed();
            ii.gid = f.gid(" gid=0x")?;
            ii.lid_range_begin
                .set(narrow(f.hex(" lid_range_begin=0x", 16)?));
            ii.lid_range_end
                .set(narrow(f.hex(" lid_range_end=0x", 16)?));
            ii.is_generic = narrow(f.hex(" is_generic=0x", 8)?);
            ii.subscribe = narrow(f.hex(" subscribe=0x", 8)?);
            ii.trap_type.set(narrow(f.hex(" trap_type=0x", 16)?));
            ii.trap_num.set(narrow(f.hex(" trap_num=0x", 16)?));
            ii.qpn_resp_time
                .set(narrow(f.hex(" qpn_resp_time_val=0x", 32)?));
            ii.set_producer_type(narrow(f.hex(" node_type=0x", 24)?));
            rec.inform_info = ii;
            let addr = MadMeta {
                dlid: Lid(narrow(f.hex(" lid=0x", 16)?)),
                path_bits: narrow(f.hex(" path_bits=0x", 8)?),
                ..MadMeta::default()
            };
            let _static_rate = f.hex(" static_rate=0x", 8)?;
            let addr = MadMeta {
                qp: narrow(f.hex(" remote_qp=0x", 32)?),
                qkey: QKey(narrow(f.hex(" remote_qkey=0x", 32)?)),
                pkey_index: narrow(f.hex(" pkey_ix=0x", 16)?),
                sl: narrow(f.hex(" sl=0x", 8)?),
                ..addr
            };
            db.informs.push((rec, addr));
        } else if line.starts_with("Service Record") {
            let mut sr = ServiceRecord::new_zeroed();
            sr.service_id.set(f.hex(" id=0x", 64)?);
            sr.service_gid = f.gid(" gid=0x")?;
            sr.service_pkey.set(narrow(f.hex(" pkey=0x", 16)?));
            sr.service_lease.set(narrow(f.hex(" lease=0x", 32)?));
            sr.service_key = f.bytes16(" key=0x")?;
            // The name runs from `name='` to `' data8=` (it may hold spaces).
            let at = f.rest.find(" name='").ok_or_else(|| f.err("no `name='`"))?;
            let after = &f.rest[at + " name='".len()..];
            let end = after
                .find("' data8=")
                .ok_or_else(|| f.err("the name has no closing `'`"))?;
            let name = &after.as_bytes()[..end];
            if name.len() > sr.service_name.len() {
                return Err(f.err("the name is longer than 64 bytes"));
            }
            sr.service_name[..name.len()].copy_from_slice(name);
            f.rest = &after[end + 1..];
            sr.service_data8 = f.bytes16(" data8=0x")?;
            let d16 = f.bytes16(" data16=0x")?;
            for (k, v) in sr.service_data16.iter_mut().enumerate() {
                v.set(u16::from_be_bytes([d16[2 * k], d16[2 * k + 1]]));
            }
            let d32 = f.bytes16(" data32=0x")?;
            for (k, v) in sr.service_data32.iter_mut().enumerate() {
                let mut b = [0u8; 4];
                b.copy_from_slice(&d32[4 * k..4 * k + 4]);
                v.set(u32::from_be_bytes(b));
            }
            let (a, b) = f.pair(" data64=0x")?;
            sr.service_data64[0].set(a);
            sr.service_data64[1].set(b);
            db.services.push(sr);
        }
    }
    Ok(db)
}

impl super::Sa {
    /// Puts an SA database file's records into this SA's state ([`SaDb::restore`]).
    pub fn restore_db(&mut self, db: &SaDb, port: PortNum, now: Time) -> Restored {
        db.restore(&mut self.state, port, now)
    }
}

impl SaDb {
    /// Puts the file's records into `state` (see the module docs); `port` is the SM's port
    /// the Reports of restored subscriptions leave on, `now` starts the services' leases.
    pub fn restore(&self, state: &mut SaState, port: PortNum, now: Time) -> Restored {
        let mut done = Restored::default();
        for g in &self.groups {
            match state.mcast.restore_group(g) {
                Ok(Some(members)) => {
                    done.groups += 1;
                    done.members += members;
                }
                Ok(None) => {}
                Err(why) => done.skipped.push(why),
            }
        }
        for (rec, addr) in &self.informs {
            let addr = MadMeta { port, ..*addr };
            if state.informs.restore(*rec, addr) {
                done.informs += 1;
            }
        }
        for sr in &self.services {
            let lease = sr.service_lease.get();
            let expires = (lease != LEASE_INFINITE)
                .then(|| now + core::time::Duration::from_secs(u64::from(lease)));
            if state.services.restore(*sr, expires) {
                done.services += 1;
            }
        }
        done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenSM's broadcast group line as OpenSM 3.3.23 wrote it on ibsim (`sa_db_dump TRUE`,
    /// net.2sw2path4hca), then records of every kind in OpenSM's format.
    const FILE: &str = "\
MC Group 0xc000  (well known): mgid=0xff12401bffff0000:0x00000000ffffffff port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00000b1b mlid=0xc000 mtu=0x84 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x21 proxy_join=0x0

MC Group 0xc001 : mgid=0xff12a01bfe800000:0x0000000000000001 port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00001234 mlid=0xc001 mtu=0x85 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x10000040 scope_state=0x21 proxy_join=0x0

mcm_port: port_gid=0xfe80000000000000:0x0002c90300000001 scope_state=0x21 proxy_join=0x0

mcm_port: port_gid=0xfe80000000000000:0x0002c90300000002 scope_state=0x22 proxy_join=0x1

InformInfo Record: subscriber_gid=0xfe80000000000000:0x0002c90300000001 subscriber_enum=0x0 InformInfo: gid=0x0000000000000000:0x0000000000000000 lid_range_begin=0xffff lid_range_end=0x0 is_generic=0x1 subscribe=0x1 trap_type=0xffff trap_num=0x40 qpn_resp_time_val=0x112 node_type=0xffffff rep_addr: lid=0x0004 path_bits=0x00 static_rate=0x00 remote_qp=0x00000001 remote_qkey=0x80010000 pkey_ix=0x0000 sl=0x00

Service Record: id=0x0000000000001234 gid=0xfe80000000000000:0x0002c90300000001 pkey=0xffff lease=0xffffffff key=0xabababababababab:0xabababababababab name='my svc' data8=0x0102030405060708:0x090a0b0c0d0e0f10 data16=0x0001000200030004:0x0005000600070008 data32=0x0000000100000002:0x0000000300000004 data64=0x0000000000000005:0x0000000000000006 modified_time=0x0 lease_period=0xffffffff

";

    /// A group of non-members only (OpenSM's loader closes it), and a comment.
    const DROPPED: &str = "\
# a comment
MC Group 0xc002 : mgid=0xff12a01bfe800000:0x0000000000000002 port_gid=0x0000000000000000:0x0000000000000000 qkey=0x00001234 mlid=0xc002 mtu=0x85 tclass=0x00 pkey=0xffff rate=0x83 pkt_life=0x92 sl_flow_hop=0x00000000 scope_state=0x22 proxy_join=0x0

mcm_port: port_gid=0xfe80000000000000:0x0002c90300000003 scope_state=0x22 proxy_join=0x0

";

    #[test]
    fn a_file_read_back_dumps_as_it_was_written() {
        let db = parse(&format!("{FILE}{DROPPED}")).unwrap();
        assert_eq!(
            (db.groups.len(), db.informs.len(), db.services.len()),
            (3, 1, 1)
        );
        let g = &db.groups[1];
        assert_eq!(g.rec.mlid, Lid(0xc001));
        assert_eq!(
            (g.rec.mtu_selector, g.rec.mtu, g.rec.sl, g.rec.hop_limit),
            (2, 5, 1, 0x40)
        );
        assert_eq!(g.members[1].1, 2, "the second member is a non-member");
        assert!(g.members[1].2, "joined by proxy");
        assert_eq!(
            &db.services[0].service_name[..7],
            b"my svc\0",
            "a name with a space"
        );
        let mut state = SaState::default();
        let done = db.restore(&mut state, PortNum(1), Time::ZERO);
        assert_eq!(
            (done.groups, done.members, done.informs, done.services),
            (2, 2, 1, 1)
        );
        assert!(done.skipped.is_empty(), "{:?}", done.skipped);
        assert!(
            state.mcast.lookup(db.groups[2].rec.mgid).is_none(),
            "no full member"
        );
        assert_eq!(dump(&state), FILE);
        // What the SA serves from it: the group's MLID, the service, the subscription.
        assert_eq!(
            state.mcast.lookup(g.rec.mgid).map(|r| r.mlid),
            Some(Lid(0xc001))
        );
        assert_eq!(state.services.len(), 1);
        assert_eq!(state.informs.len(), 1);
        let (_, addr) = state.informs.entries().next().unwrap();
        assert_eq!((addr.port, addr.dlid, addr.qp), (PortNum(1), Lid(4), 1));
        // Read twice: nothing is added again.
        let again = db.restore(&mut state, PortNum(1), Time::ZERO);
        assert_eq!((again.informs, again.services), (0, 0));
        assert_eq!(dump(&state), FILE);
    }

    #[test]
    fn malformed_lines_name_their_line() {
        let bad = FILE.replace("mlid=0xc001", "mlid=0xzz01");
        let e = parse(&bad).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        assert!(e.to_string().contains("mlid=0xzz01"), "{e}");
        let e =
            parse("Service Record: id=0x1 gid=0x0:0x0 pkey=0xffff lease=0x0 key=0x0:0x0 name='x\n")
                .unwrap_err();
        assert!(
            e.to_string().contains("line 1: the name has no closing"),
            "{e}"
        );
        let e = parse("mcm_port: x\nMC Group 0x10000 : mgid=0x0:0x0\n").unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.to_string().contains("wider than 16 bits"), "{e}");
        // Lines OpenSM does not know are skipped, as its loader does.
        assert_eq!(
            parse("GUIDInfo Record: base_guid=0x1\nhello\n").unwrap(),
            SaDb::default()
        );
    }

    #[test]
    fn a_group_whose_mlid_is_taken_is_skipped() {
        let mut db = parse(FILE).unwrap();
        let mut other = db.groups[1].clone();
        other.rec.mgid.0[15] = 9;
        db.groups.push(other);
        let mut third = db.groups[1].clone();
        third.rec.mlid = Lid(0xc005);
        db.groups.push(third);
        let mut fourth = db.groups[1].clone();
        fourth.rec.mgid.0[15] = 10;
        fourth.rec.mlid = Lid(0x10);
        db.groups.push(fourth);
        let mut state = SaState::default();
        let done = db.restore(&mut state, PortNum(1), Time::ZERO);
        assert_eq!(done.groups, 2);
        assert_eq!(done.skipped.len(), 3, "{:?}", done.skipped);
        assert!(done.skipped[2].contains("MLID 0x0010 is not one this SA hands out"));
        assert!(
            done.skipped[0].contains("MLID 0xc001 is another group's"),
            "{:?}",
            done.skipped
        );
        assert!(
            done.skipped[1].contains("already here with MLID 0xc001"),
            "{:?}",
            done.skipped
        );
    }
}
