//! The ibsim server protocol, exercised by a native client written from
//! `shared/reference/ibsim-protocol.md`: control requests, data frames, TID slot routing,
//! status 110, forwarding between clients, the DR hop-pointer convention.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

mod sim_util;

use fabric_sim::ibsim_server::wire::{
    ClientInfo, CtlType, SimCtl, SimRequest, REQUEST_LEN, SIM_MAGIC, STATUS_TIMEOUT,
};
use fabric_sim::ibsim_server::IbsimServer;
use fabric_sim::sim::{Fabric, SimConfig};
use fabric_sim::topo::Topology;
use ibmad::attr::{NodeInfo, PortInfo};
use ibmad::zerocopy::{FromBytes, FromZeros, IntoBytes};
use ibmad::{DrPath, Method, NodeType, Smp, SmpAttrId};

fn unique(tag: &str) -> String {
    static SEQ: AtomicU32 = AtomicU32::new(0);
    format!(
        "{tag}{}x{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

fn addr(name: &str) -> SocketAddr {
    SocketAddr::from_abstract_name(format!("{name}\0").as_bytes()).unwrap()
}

struct Running {
    name: String,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<IbsimServer>>,
}

impl Running {
    fn start(net: &str) -> Running {
        Running::serve(net, |_| {})
    }

    fn serve(net: &str, prepare: impl FnOnce(&mut Fabric)) -> Running {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("testdata/ibsim-net-examples")
            .join(net);
        let topo = Topology::from_file(&path).unwrap();
        let mut fabric = Fabric::new(&topo, SimConfig::default()).unwrap();
        prepare(&mut fabric);
        let name = unique("ibsrvproto");
        let mut server = IbsimServer::bind(fabric, &name).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            server.run(&flag).unwrap();
            server
        });
        Running {
            name,
            stop,
            thread: Some(thread),
        }
    }
    /// [`Running::start`] on a fabric already brought up: LIDs (Switch1 1, Switch2 2, Hca1 5,
    /// Hca2 6), LFTs, and the ports of the Hca1 - Switch1 - Switch2 - Hca2 path Active, so
    /// GMPs can travel (see [`bring_up_2sw2path`]).
    fn start_up(net: &str) -> Running {
        Running::serve(net, bring_up_2sw2path)
    }

    fn finish(mut self) -> IbsimServer {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.take().unwrap().join().unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What an SM would do to net.2sw2path, done by hand from a temporary attachment at Switch1:
/// LIDs, LFTs, and the ports of the Hca1 - Switch1 - Switch2 - Hca2 path Armed, then Active.
fn bring_up_2sw2path(f: &mut Fabric) {
    use ibmad::PortState;
    use sim_util::{edit_port_info, set_lft, set_lid};
    let at = f.node_by_name("Switch1").unwrap();
    let sm = f.attach_sm(at, ibmad::PortNum(0)).unwrap().handle;
    for (path, port, lid) in [("0", 0, 1), ("0,3", 0, 2), ("0,1", 1, 5), ("0,3,1", 1, 6)] {
        set_lid(f, sm, path, port, lid);
    }
    set_lft(f, sm, "0", &[(1, 0), (2, 3), (5, 1), (6, 3)], 6);
    set_lft(f, sm, "0,3", &[(1, 3), (2, 0), (5, 3), (6, 1)], 6);
    for state in [PortState::ARMED, PortState::ACTIVE] {
        for (path, port) in [
            ("0", 1),
            ("0", 3),
            ("0,3", 3),
            ("0,3", 1),
            ("0,1", 1),
            ("0,3,1", 1),
        ] {
            let pi = edit_port_info(f, sm, path, port, |pi| pi.set_port_state(state));
            assert_eq!(pi.port_state(), state, "{path} port {port}");
        }
    }
    f.detach_sm(sm);
}

/// A native ibsim client.
struct Client {
    ctl: UnixDatagram,
    data: UnixDatagram,
    slot: u32,
    node: String,
}

fn ctl_msg(slot: u32, t: CtlType, data: &[u8]) -> SimCtl {
    let mut c = SimCtl::new_zeroed();
    c.magic.set(SIM_MAGIC);
    c.clientid.set(slot);
    c.ctl_type.set(t.0);
    c.len.set(data.len() as u32);
    c.data[..data.len()].copy_from_slice(data);
    c
}

impl Client {
    fn connect(name: &str, nodeid: &str, issm: bool) -> Result<Client, String> {
        static ID: AtomicU32 = AtomicU32::new(1);
        let id = std::process::id() * 100 + ID.fetch_add(1, Ordering::Relaxed);
        let ctl = UnixDatagram::bind_addr(&addr(&format!("{name}:ctl{id}"))).unwrap();
        ctl.connect_addr(&addr(&format!("{name}:ctl"))).unwrap();
        ctl.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let data = UnixDatagram::bind_addr(&addr(&format!("{name}:in{id}"))).unwrap();
        data.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut info = ClientInfo::new_zeroed();
        info.id.set(id);
        info.issm.set(u32::from(issm));
        info.set_node_id(nodeid);
        ctl.send(ctl_msg(0, CtlType::CONNECT, info.as_bytes()).as_bytes())
            .unwrap();
        let mut buf = [0u8; 80];
        let n = ctl.recv(&mut buf).unwrap();
        let reply = SimCtl::read_from_bytes(&buf[..n]).unwrap();
        if reply.kind() != CtlType::CONNECT {
            return Err(format!("{:?}", reply.kind()));
        }
        let (info, _) = ClientInfo::read_from_prefix(&reply.data[..]).unwrap();
        let slot = info.id.get();
        data.connect_addr(&addr(&format!("{name}:out{slot}")))
            .unwrap();
        Ok(Client {
            ctl,
            data,
            slot,
            node: info.node_id(),
        })
    }

    fn ctl(&self, t: CtlType, data: &[u8]) -> SimCtl {
        self.ctl
            .send(ctl_msg(self.slot, t, data).as_bytes())
            .unwrap();
        let mut buf = [0u8; 80];
        let n = self.ctl.recv(&mut buf).unwrap();
        SimCtl::read_from_bytes(&buf[..n]).unwrap()
    }

    fn send(&self, f: &SimRequest) {
        self.data.send(f.as_bytes()).unwrap();
    }

    fn recv(&self) -> Option<SimRequest> {
        let mut buf = [0u8; 512];
        match self.data.recv(&mut buf) {
            Ok(n) => {
                assert_eq!(n, REQUEST_LEN, "every frame from the server is 288 bytes");
                Some(SimRequest::read_from_bytes(&buf[..n]).unwrap())
            }
            Err(_) => None,
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self
            .ctl
            .send(ctl_msg(self.slot, CtlType::DISCONNECT, &[]).as_bytes());
    }
}

fn dr(path: &[u8], attr: SmpAttrId, attr_mod: u32, tid: u64) -> SimRequest {
    let smp = Smp::dr_request(
        Method::GET,
        attr,
        attr_mod,
        tid,
        &DrPath::new(path).unwrap(),
    );
    SimRequest::new(0xFFFF, 0xFFFF, 0, 0, smp.as_bytes().try_into().unwrap())
}

#[test]
fn control_requests_describe_the_attached_port() {
    let srv = Running::start("net.2sw2path");
    // Empty nodeid: the first node of the file (a switch, port 0).
    let c = Client::connect(&srv.name, "", false).unwrap();
    assert_eq!(c.node, "Switch1");
    let h = Client::connect(&srv.name, "Hca2", false).unwrap();
    assert_eq!(h.node, "Hca2");
    assert_ne!(h.slot, c.slot);

    let r = h.ctl(CtlType::GET_NODEINFO, &[]);
    assert_eq!(r.kind(), CtlType::GET_NODEINFO);
    let ni = NodeInfo::ref_from_prefix(&r.data).unwrap().0;
    assert_eq!(ni.node_type(), NodeType::CA);
    assert_eq!(ni.local_port_num, 1, "LocalPortNum = the client's port");
    let guid = ni.node_guid();
    let r = h.ctl(CtlType::GET_GUID, &[]);
    assert_eq!(
        u64::from_ne_bytes(r.data[..8].try_into().unwrap()),
        guid.0,
        "host order"
    );
    let r = h.ctl(CtlType::GET_PORTINFO, &[0]);
    let pi = PortInfo::ref_from_prefix(&r.data).unwrap().0;
    assert_eq!(pi.local_port_num, 1);
    assert_eq!(pi.gid_prefix.get(), 0xfe80_0000_0000_0000);
    let r = h.ctl(CtlType::GET_PKEYS, &[]);
    assert_eq!(&r.data[..2], &[0xFF, 0xFF], "default full-member P_Key");
    let r = h.ctl(CtlType::GET_VENDOR, &[]);
    assert_eq!(r.kind(), CtlType::GET_VENDOR);
    assert_eq!(u64::from_ne_bytes(r.data[16..24].try_into().unwrap()), 1);
    let r = h.ctl(CtlType::GET_PORT, &[]);
    assert_eq!(r.kind(), CtlType::GET_PORT);
    assert_eq!(r.data[2], pi.port_state().0);
    let r = c.ctl(CtlType::GET_NODEINFO, &[]);
    let ni = NodeInfo::ref_from_prefix(&r.data).unwrap().0;
    assert_eq!((ni.node_type(), ni.local_port_num), (NodeType::SWITCH, 0));

    // Refusals: an unknown node; a second SM on one node; a bad slot.
    assert_eq!(
        Client::connect(&srv.name, "NoSuchNode", false).err(),
        Some("ERROR".to_string())
    );
    let sm = Client::connect(&srv.name, "Hca1", true).unwrap();
    assert!(Client::connect(&srv.name, "Hca1", true).is_err());
    let r = sm.ctl(CtlType::SET_ISSM, &1i32.to_ne_bytes());
    assert_eq!(r.kind(), CtlType::SET_ISSM);
    let mut bogus = ctl_msg(9, CtlType::GET_NODEINFO, &[]);
    bogus.clientid.set(9);
    sm.ctl.send(bogus.as_bytes()).unwrap();
    let mut buf = [0u8; 80];
    let n = sm.ctl.recv(&mut buf).unwrap();
    assert_eq!(
        SimCtl::read_from_bytes(&buf[..n]).unwrap().kind(),
        CtlType::ERROR
    );
}

#[test]
fn is_sm_shows_only_while_a_client_of_the_port_is_an_sm() {
    use ibmad::attr::port_info::cap::IS_SM;
    let srv = Running::start("net.2sw2path");
    let cap = |c: &Client| {
        let r = c.ctl(CtlType::GET_PORTINFO, &[0]);
        PortInfo::ref_from_prefix(&r.data)
            .unwrap()
            .0
            .capability_mask
            .get()
            & IS_SM
    };
    // A diagnostic tool is not an SM: OpenSM must not poll its port for SMInfo.
    let tool = Client::connect(&srv.name, "Hca2", false).unwrap();
    assert_eq!(cap(&tool), 0);
    // umad2sim opening issm0 sends SET_ISSM(1); closing it SET_ISSM(0).
    tool.ctl(CtlType::SET_ISSM, &1i32.to_ne_bytes());
    assert_eq!(cap(&tool), IS_SM);
    tool.ctl(CtlType::SET_ISSM, &0i32.to_ne_bytes());
    assert_eq!(cap(&tool), 0);
    // CONNECT with issm set, and its DISCONNECT.
    let sm = Client::connect(&srv.name, "Hca1", true).unwrap();
    assert_eq!(cap(&sm), IS_SM);
    let other = Client::connect(&srv.name, "Hca1", false).unwrap();
    drop(sm);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(cap(&other), 0, "the SM client left");
}

#[test]
fn smps_are_answered_with_the_slot_in_the_tid_and_drops_come_back_as_110() {
    let srv = Running::start("net.2sw2path");
    let _other = Client::connect(&srv.name, "", false).unwrap();
    let c = Client::connect(&srv.name, "", false).unwrap();
    assert_eq!(c.slot, 1);

    // Switch1 port 1 leads to Hca1: a 1-hop NodeInfo.
    c.send(&dr(&[1], SmpAttrId::NODE_INFO, 0, 0x1234_5678));
    let r = c.recv().expect("a response");
    assert_eq!(r.status.get(), 0);
    let smp = Smp::ref_from_bytes(&r.mad).unwrap();
    assert_eq!(smp.method(), Method::GET_RESP);
    assert!(smp.direction());
    assert_eq!(smp.hop_ptr, 0);
    assert_eq!(r.tid() >> 48, u64::from(c.slot), "server's slot tag");
    assert_eq!(r.tid() & 0xFFFF_FFFF_FFFF, 0x1234_5678);
    let ni = NodeInfo::ref_from_prefix(&smp.data).unwrap().0;
    assert_eq!(ni.node_type(), NodeType::CA);
    assert_eq!(ni.local_port_num, 1);

    // Port 2 of Switch1 has no cable: the request comes back at once with status 110.
    let req = dr(&[2], SmpAttrId::NODE_INFO, 0, 0x99);
    c.send(&req);
    let r = c.recv().expect("the request, bounced");
    assert_eq!(r.status.get(), STATUS_TIMEOUT);
    assert_eq!(r.tid() & 0xFFFF_FFFF_FFFF, 0x99);
    assert_eq!(r.method(), Method::GET.0, "the request itself");

    // A frame of any other size is ignored.
    c.data.send(&[0u8; 100]).unwrap();
    c.data.send(&vec![0u8; REQUEST_LEN + 1]).unwrap();
    assert!(c.recv().is_none());
    // So is a bad DR header (hop pointer not 0).
    let mut bad = dr(&[1], SmpAttrId::NODE_INFO, 0, 7);
    bad.mad[6] = 1;
    c.send(&bad);
    assert!(c.recv().is_none());

    let server = srv.finish();
    let st = server.stats();
    assert!(st.rejected >= 3, "{st:?}");
    assert_eq!(st.timeouts, 1, "{st:?}");
}

#[test]
fn sminfo_and_sa_traffic_is_forwarded_between_clients() {
    let srv = Running::start("net.2sw2path");
    let sm = Client::connect(&srv.name, "Hca1", true).unwrap();
    let tool = Client::connect(&srv.name, "", false).unwrap();

    // SMInfo Get, directed route from Switch1 to Hca1: handed to the SM client with hop
    // pointer 0 (ibsim's convention) and the slot of the asker in the TID.
    tool.send(&dr(&[1], SmpAttrId::SM_INFO, 0, 0x4242));
    let got = sm.recv().expect("SMInfo Get forwarded to the SM client");
    let smp = Smp::ref_from_bytes(&got.mad).unwrap();
    assert_eq!(smp.attr(), SmpAttrId::SM_INFO);
    assert_eq!(smp.method(), Method::GET);
    assert_eq!(smp.hop_ptr, 0);
    assert_eq!(got.tid() >> 48, u64::from(tool.slot));
    // The SM answers as an ibsim client does: D bit, GetResp, hop pointer 0.
    let mut resp = got;
    resp.mad[3] = Method::GET_RESP.0;
    resp.mad[4] |= 0x80;
    resp.mad[64] = 0xAB;
    sm.send(&resp);
    let back = tool.recv().expect("the SM's answer");
    assert_eq!(back.status.get(), 0);
    assert_eq!(back.method(), Method::GET_RESP.0);
    assert_eq!(back.mad[64], 0xAB);
    assert_eq!(back.tid() & 0xFFFF_FFFF_FFFF, 0x4242);

    // No LIDs yet: an SA query (class 0x03) to LID 1 has no receiver → 110.
    let mut sa = SimRequest::new(1, 0, 1, 1, &[0u8; 256]);
    sa.mad[0] = 1;
    sa.mad[1] = 0x03;
    sa.mad[2] = 2;
    sa.mad[3] = Method::GET.0;
    sa.set_tid(0x77);
    tool.send(&sa);
    let r = tool.recv().expect("bounced SA query");
    assert_eq!(r.status.get(), STATUS_TIMEOUT);
    let server = srv.finish();
    assert!(server.stats().timeouts >= 1);
}

#[test]
fn sa_queries_reach_the_sm_client_at_the_destination_lid() {
    let srv = Running::start_up("net.2sw2path");
    let sm = Client::connect(&srv.name, "Hca1", true).unwrap();
    let tool = Client::connect(&srv.name, "Hca2", false).unwrap();
    // Before the subnet is up (no LIDs, no LFTs) the query goes nowhere: 110.
    let down = Running::start("net.2sw2path");
    let early = Client::connect(&down.name, "Hca2", false).unwrap();
    let mut q = SimRequest::new(5, 0, 1, 1, &[0u8; 256]);
    q.mad[..4].copy_from_slice(&[1, 0x03, 2, Method::GET.0]);
    early.send(&q);
    assert_eq!(early.recv().expect("bounced").status.get(), STATUS_TIMEOUT);
    drop(early);
    drop(down);
    let mut q = SimRequest::new(5, 0, 1, 1, &[0u8; 256]);
    q.mad[..4].copy_from_slice(&[1, 0x03, 2, Method::GET.0]);
    q.set_tid(0x55);
    tool.send(&q);
    let got = sm.recv().expect("SA query forwarded to the SM client");
    assert_eq!(got.slid.get(), 6, "the server filled in the sender's LID");
    assert_eq!((got.dqp.get(), got.sqp.get()), (1, 1), "QP1 to QP1");
    assert_eq!(got.tid() >> 48, u64::from(tool.slot));
    let mut a = got;
    a.mad[3] = 0x81;
    a.dlid.set(got.slid.get());
    a.slid.set(5);
    sm.send(&a);
    let back = tool.recv().expect("SA answer");
    assert_eq!((back.mad[1], back.mad[3]), (0x03, 0x81));
    assert_eq!(back.tid() & 0xFFFF_FFFF_FFFF, 0x55);
    drop(srv);
}
