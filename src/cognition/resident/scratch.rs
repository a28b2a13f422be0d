//! Short-term state (the original's scratch), per resident: the reflection counter and the
//! cool-downs that keep a resident from starting the same conversation or reaction again at
//! once. Settings (vision radius, attention bandwidth, retention, recency decay) are not copied
//! here: every system reads them from the [`Cognition`](crate::cognition::config::Cognition) config in force.
//! Whom a resident is talking with is [`Talking`](crate::agent::conversation::Talking).

use crate::agent::Resident;
use crate::cognition::config::CognitionConfig;
use crate::memory::reflect::ReflectionTrigger;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A resident's short-term state.
#[derive(Component, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scratch {
    /// Counts importance down to the next reflection.
    pub reflection: ReflectionTrigger,
    /// Person → until when a new conversation with them is not started (after a talk).
    #[serde(default)]
    pub chat_cooldown: std::collections::BTreeMap<String, GameTime>,
    /// Person → until when a sighting of them is not considered again.
    #[serde(default)]
    pub react_cooldown: std::collections::BTreeMap<String, GameTime>,
}

impl Scratch {
    /// A fresh scratch whose reflection triggers at `reflection_threshold` summed importance.
    pub fn new(reflection_threshold: u32) -> Self {
        Self {
            reflection: ReflectionTrigger::new(reflection_threshold),
            chat_cooldown: Default::default(),
            react_cooldown: Default::default(),
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::new(CognitionConfig::default().reflection_threshold)
    }
}

/// Every resident has a scratch (spawning gives it the configured threshold).
pub(crate) fn plugin(app: &mut App) {
    app.register_required_components::<Resident, Scratch>();
}
