//! Planning (the paper's §4.3): the day in broad strokes and by the hour ([`plan`], [`hours`]),
//! the next hours refined into subtasks ([`decompose`]), the rest of the day re-planned after a
//! whisper ([`replan`]), the words of activities they share ([`activity`]), and activities
//! alike by their embedding, refined and placed as one before was ([`likeness`]).

pub mod activity;
pub mod decompose;
pub mod hours;
pub mod likeness;
pub mod plan;
pub mod replan;
