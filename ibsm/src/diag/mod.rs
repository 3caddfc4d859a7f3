//! # Diagnostics over any transport
//!
//! `ibsm discover | query | route | dump-fts | links | trace | portstate | counters | stat` do
//! what infiniband-diags' `ibnetdiscover`, `smpquery`/`sminfo`, `ibroute`, `dump_fts`,
//! `iblinkinfo`, `ibtracert`, `ibportstate`, `perfquery` and `ibstat` do, with their output formats, over every transport ibsm has
//! (`--transport umad[:CA[:PORT]] | vfio:BDF | vfio-user:SOCKET | sim:TOPOLOGY`; umad by
//! default, as the diags) — so a bench without OFED, or a switch ASIC reached only through
//! VFIO, can still be looked at. `--json` prints the same fields as JSON.
//!
//! Layers: [`port`] opens the transport, [`client`] moves SMPs (TIDs, window, retries),
//! [`scan`] walks the fabric in libibnetdisc's order, [`fields`] renders attributes as libibmad
//! does, [`cmds`] is one function per tool. Where our output differs from the stock tool on
//! purpose, docs/operator-guide.md lists it.

pub mod client;
pub mod cmds;
pub mod counters;
pub mod fields;
pub mod host;
pub mod port;
pub mod scan;
pub mod stat;

pub use cmds::main;
