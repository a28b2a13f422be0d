//! How a resident asks the model and keeps what it waits for: the jobs an answer is for
//! ([`job`]), the answers waited on ([`pending`]), asking ([`asker`]), the prompt templates
//! ([`prompts`]), the checks on answers that do not hold up ([`flaws`]) and the last look at a
//! resident's coming hours ([`last_look`]). Every other stage asks through here.

pub mod asker;
pub mod flaws;
pub mod job;
pub mod last_look;
pub mod pending;
pub mod prompts;
