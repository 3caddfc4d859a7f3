//! # umad — the kernel user_mad transport
#![deny(missing_docs)]
