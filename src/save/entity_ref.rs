//! Entities inside saved state. A save writes an entity as its id bits at the time of saving
//! (the serde helpers of [`crate::sim::entity_serde`]); loading spawns or finds each saved entity
//! (residents by name, conversations anew) and [`Remap`]s every reference to the entity that now
//! stands for it.

use bevy::prelude::*;
use std::collections::HashMap;

/// Saved entity → the entity standing for it now. An entity the save does not know (one that
/// was gone when saving) becomes [`Entity::PLACEHOLDER`], which no query finds.
#[derive(Debug, Default, Clone)]
pub struct EntityMap(pub HashMap<Entity, Entity>);

impl EntityMap {
    /// The entity now standing for a saved one.
    pub fn get(&self, saved: Entity) -> Entity {
        self.0.get(&saved).copied().unwrap_or(Entity::PLACEHOLDER)
    }

    /// Maps in place.
    pub fn map(&self, e: &mut Entity) {
        *e = self.get(*e);
    }

    /// Maps an optional entity in place.
    pub fn map_opt(&self, e: &mut Option<Entity>) {
        if let Some(x) = e {
            *x = self.get(*x);
        }
    }
}

/// State holding entity references that a load must re-link.
pub trait Remap {
    /// Replaces every saved entity with the one standing for it now.
    fn remap(&mut self, m: &EntityMap);
}
