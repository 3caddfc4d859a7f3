//! Typed errors of the topology layer: model invariants ([`TopoError`]), file syntax with a line
//! number ([`ParseError`]), generator specs ([`SpecError`]) and the I/O wrapper ([`LoadError`]).

use std::path::PathBuf;

use ibmad::Guid;

/// A violated model invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopoError {
    /// A node or port GUID of 0, which the IBA reserves (no valid EUI-64 is 0; the SM
    /// treats it as "no GUID").
    #[error("node {node:?}: GUID 0 is not a valid GUID")]
    ZeroGuid {
        /// The node.
        node: String,
    },
    /// Two nodes (or a node and a port) share a GUID.
    #[error("duplicate GUID {guid}: used by node {first:?} and node {second:?}")]
    DuplicateGuid {
        /// The GUID.
        guid: Guid,
        /// The node that had it first.
        first: String,
        /// The node that claimed it again.
        second: String,
    },
    /// Two nodes share a name.
    #[error("duplicate node name {name:?}")]
    DuplicateName {
        /// The name.
        name: String,
    },
    /// A name is empty or contains a character the file formats cannot carry.
    #[error("bad node name {name:?}: {reason}")]
    BadName {
        /// The name.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// NumPorts outside 1..=254.
    #[error("node {node:?}: {ports} ports is outside 1..=254")]
    BadPortCount {
        /// The node.
        node: String,
        /// The requested count.
        ports: u32,
    },
    /// A port number beyond the node's NumPorts (or port 0 of a CA/router).
    #[error("node {node:?} has no port {port} (NumPorts {num_ports})")]
    NoSuchPort {
        /// The node.
        node: String,
        /// The port asked for.
        port: u8,
        /// The node's NumPorts.
        num_ports: u8,
    },
    /// Port 0 (the switch management port) cannot carry a physical link.
    #[error("node {node:?}: port 0 is the switch management port and cannot be linked")]
    LinkOnPort0 {
        /// The node.
        node: String,
    },
    /// A port that is already linked was linked again.
    #[error("node {node:?} port {port} is already linked to {peer:?} port {peer_port}")]
    PortInUse {
        /// The node.
        node: String,
        /// Its port.
        port: u8,
        /// The existing peer.
        peer: String,
        /// The existing peer's port.
        peer_port: u8,
    },
    /// A port linked to itself.
    #[error("node {node:?} port {port} is linked to itself")]
    SelfLink {
        /// The node.
        node: String,
        /// The port.
        port: u8,
    },
    /// A link whose two ends disagree.
    #[error("asymmetric link: {node:?} port {port} -> {peer:?} port {peer_port}, but {detail}")]
    AsymmetricLink {
        /// The node.
        node: String,
        /// Its port.
        port: u8,
        /// The peer it names.
        peer: String,
        /// The peer port it names.
        peer_port: u8,
        /// What the peer says instead.
        detail: String,
    },
    /// A NodeDescription longer than the 64-byte attribute.
    #[error("node {node:?}: description is {len} bytes; NodeDescription holds at most 64")]
    DescriptionTooLong {
        /// The node.
        node: String,
        /// The length in bytes.
        len: usize,
    },
    /// A node id that does not exist.
    #[error("no node with id {0}")]
    NoSuchNode(u32),
    /// More nodes or ports than the compact arrays index (u32).
    #[error("topology too large: {what}")]
    TooLarge {
        /// What overflowed.
        what: &'static str,
    },
}

/// What went wrong on one line of a topology file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseErrorKind {
    /// A line the reader does not understand.
    #[error("unrecognised line {0:?}")]
    UnrecognisedLine(String),
    /// A node header (`Switch 8 "name"`) that does not parse.
    #[error("bad node header: {0}")]
    BadHeader(String),
    /// A port line (`[1] "peer"[2]`) that does not parse.
    #[error("bad port line: {0}")]
    BadPort(String),
    /// A `key=value` line or option with a bad value.
    #[error("bad value for {key}: {value:?} ({reason})")]
    BadValue {
        /// The key (`switchguid`, `w`, ...).
        key: String,
        /// The text found.
        value: String,
        /// Why it is bad.
        reason: &'static str,
    },
    /// A port line outside any node record.
    #[error("port line outside a node record")]
    PortOutsideNode,
    /// A port listed twice in one node record.
    #[error("port {0} is listed twice in this node")]
    DuplicatePort(u8),
    /// A link names a node that is not in the file.
    #[error("port {port} links to unknown node {peer:?}")]
    UnknownPeer {
        /// The local port.
        port: u8,
        /// The missing node's name.
        peer: String,
    },
    /// The two ends of a link do not agree on speed or width (no common enabled value).
    #[error(
        "port {port} -> {peer:?} port {peer_port}: no common {what} (this end {a:#x}, peer {b:#x})"
    )]
    NoCommonRate {
        /// The local port.
        port: u8,
        /// The peer node.
        peer: String,
        /// The peer port.
        peer_port: u8,
        /// `width` or `speed`.
        what: &'static str,
        /// This end's enable mask.
        a: u8,
        /// The peer's enable mask.
        b: u8,
    },
    /// An ibsim feature this reader does not implement.
    #[error("unsupported: {0}")]
    Unsupported(&'static str),
    /// An `include` that could not be read.
    #[error("cannot include {path:?}: {reason}")]
    Include {
        /// The included path.
        path: PathBuf,
        /// The I/O or nesting problem.
        reason: String,
    },
    /// A model invariant broken by this line.
    #[error(transparent)]
    Topo(#[from] TopoError),
}

/// A topology file error at a line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}line {line}: {kind}", file.as_ref().map(|f| format!("{}: ", f.display())).unwrap_or_default())]
pub struct ParseError {
    /// The file, when reading from one.
    pub file: Option<PathBuf>,
    /// The 1-based line number.
    pub line: usize,
    /// The problem.
    pub kind: ParseErrorKind,
}

/// A generator spec that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    /// The spec text is malformed or out of range.
    #[error("bad topology spec {spec:?}: {reason}")]
    Bad {
        /// The spec as given.
        spec: String,
        /// What is wrong.
        reason: String,
    },
    /// The generated fabric broke a model invariant (for example GUID space exhausted).
    #[error("topology spec {spec:?}: {source}")]
    Topo {
        /// The spec as given.
        spec: String,
        /// The invariant.
        #[source]
        source: TopoError,
    },
}

/// Loading a topology from a file or a spec.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read {path:?}: {source}")]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The file did not parse.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// The spec did not generate.
    #[error(transparent)]
    Spec(#[from] SpecError),
    /// The string is neither an existing file nor a `name:args` spec.
    #[error("{0:?} is neither an existing topology file nor a spec such as \"fat-tree:2,36\"")]
    NotFound(String),
}
