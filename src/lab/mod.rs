//! The lab: the paper's measurements (§6–7) as commands that run a town headless and write one
//! self-contained report folder per run: information diffusion, relationships (network
//! density), the party, and interviews under the ablation conditions ranked by a judge model
//! into TrueSkill ratings. It uses the very systems the game runs (the headless app), on any
//! configured backend.
//!
//! A run works in a hidden folder `labs/.<name>-<date>.partial/` (checkpoints of the town every
//! game hour and between hours about every ten minutes of running, each finished phase's data)
//! and becomes `labs/<name>-<date>/` only when its report is written, so nothing half-done is
//! ever left where a report is expected; `--resume` goes on from the last checkpoint and the
//! phases already done, with the inputs the run began with; one process works in a folder at a
//! time ([`runs::guard`]).
//!
//! The room by what it holds: `measures/` (each measurement owning its whole run, on the skeleton
//! in `measures/mod.rs`), `town.rs` (the town a lab runs in), `runs/` (a run's folder and its
//! sittings), `report/` (tables, costs, plots, statistics), and what the measurements read of a
//! town: `facts.rs` (facts, their holders and probes), `gathering.rs` (a gathering's guests),
//! `knowing.rs` (who knows whom), `social.rs` (who talked with whom), `ask.rs` and
//! `questions.rs` (questions put to residents), `judge.rs` (answers judged and ranked).

pub mod ask;
pub mod facts;
pub mod gathering;
pub mod judge;
pub mod knowing;
pub mod measures;
pub mod questions;
pub mod report;
pub mod runs;
pub mod social;
pub mod town;
