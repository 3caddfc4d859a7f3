//! # sma — subnet management agent (sans-IO)
#![forbid(unsafe_code)]
#![deny(missing_docs)]
