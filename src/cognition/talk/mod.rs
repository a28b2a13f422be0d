//! Dialogue: conversations started and carried ([`converse`]), each line about a topic
//! ([`topics`]) asked of the model ([`line_request`]), checked, said and heard
//! ([`utterance`]), or a whole conversation in one request ([`dialogue`]); invitations and commitments ([`invite`]); what conversations carried
//! ([`report`]).

pub mod converse;
pub mod dialogue;
pub mod invite;
pub mod line_request;
pub mod report;
pub mod topics;
pub mod utterance;
