//! Where and how: the place of each activity ([`place`]; a place chosen before found again,
//! [`kept`]), what it looks like there and which object it uses ([`details`]), and the plan
//! carried out step by step ([`follow`]).

pub mod details;
pub mod follow;
pub mod kept;
pub mod place;
