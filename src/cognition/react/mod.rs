//! Reactions (the paper's §4.3.1): to people a resident meets ([`people`]) and to objects in
//! an unusual state ([`objects`]).

pub mod objects;
pub mod people;
