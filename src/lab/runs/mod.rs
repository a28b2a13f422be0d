//! A lab run's folder over its sittings: one process works in it at a time and a resume goes on
//! only with the inputs and the build the run began with ([`guard`]); where the unfinished runs of
//! a folder stand, read while they work ([`status`]).

pub mod guard;
pub mod status;
