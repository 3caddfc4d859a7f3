//! # sm — subnet manager (sans-IO)
#![forbid(unsafe_code)]
#![deny(missing_docs)]
