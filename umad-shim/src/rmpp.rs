//! RMPP (IBA vol1 §13.6): the sender and receiver machines live in
//! [`ibmad::rmpp::transfer`] (the SA sends with them too where the transport does not segment);
//! the shim drives them for agents registered with an RMPP version, as the kernel's ib_mad does.

pub use ibmad::rmpp::transfer::*;
