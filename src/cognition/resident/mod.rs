//! A resident's own state and arrival: spawned from the scenario ([`spawn`]) with a short-term
//! [`scratch`]; thoughts from a history file ([`history`]).

pub mod history;
pub mod scratch;
pub mod spawn;
