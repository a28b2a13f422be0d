//! The states of objects in the world ("the stove is burning", "the bed is being slept in"),
//! keyed by the object's canonical address. Actions set them while they last and clear them
//! when they end; the player may set them too. Residents perceive every state that is not
//! idle. Headless and serialisable (saves keep it).

use crate::sim::time::GameTime;
use bevy::prelude::Resource;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One object's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectState {
    /// What it is doing or how it is, e.g. "burning" (read as "<object> is <state>").
    pub state: String,
    /// Who set it: a person's name, or `None` for the player's edits.
    pub by: Option<String>,
    /// When it was set.
    pub since: GameTime,
}

/// Every object whose state is not idle (an object not listed is idle).
#[derive(Resource, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectStates {
    /// Canonical object address → state.
    pub states: BTreeMap<String, ObjectState>,
}

impl ObjectStates {
    /// Sets a state ("idle" or an empty state clears it).
    pub fn set(&mut self, address: &str, state: &str, by: Option<String>, now: GameTime) {
        let state = state.trim();
        if state.is_empty()
            || state.eq_ignore_ascii_case("idle")
            || state.eq_ignore_ascii_case("is idle")
        {
            self.states.remove(address);
            return;
        }
        self.states.insert(
            address.to_string(),
            ObjectState {
                state: state.to_string(),
                by,
                since: now,
            },
        );
    }

    /// The state of an object, if not idle.
    pub fn get(&self, address: &str) -> Option<&ObjectState> {
        self.states.get(address)
    }

    /// Clears an object's state if `by` set it (an action ending does not undo someone else's).
    pub fn clear_if_by(&mut self, address: &str, by: &str) {
        if self
            .states
            .get(address)
            .is_some_and(|s| s.by.as_deref() == Some(by))
        {
            self.states.remove(address);
        }
    }
}
