//! Memory at work (the paper's §4.1–4.2): what a resident sees ([`perceive`]), each new
//! memory's importance and embedding ([`remember`]), and reflection when enough has happened
//! ([`reflect`]).

pub mod perceive;
pub mod reflect;
pub mod remember;
