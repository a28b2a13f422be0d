//! Entities inside saved state. A save writes an entity as its id bits at the time of saving;
//! loading spawns or finds each saved entity (residents by name, conversations anew) and
//! [`Remap`]s every reference to the entity that now stands for it.

use bevy::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::HashMap;

/// An entity as its id bits (serde `with`).
pub mod entity_bits {
    use super::*;

    /// Writes the id bits.
    pub fn serialize<S: Serializer>(e: &Entity, s: S) -> Result<S::Ok, S::Error> {
        e.to_bits().serialize(s)
    }

    /// Reads id bits (a number that is no entity's reads as [`Entity::PLACEHOLDER`]).
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Entity, D::Error> {
        let bits = u64::deserialize(d)?;
        Ok(Entity::try_from_bits(bits).unwrap_or(Entity::PLACEHOLDER))
    }
}

/// An optional entity as its id bits (serde `with`).
pub mod opt_entity_bits {
    use super::*;

    /// Writes the id bits, if any.
    pub fn serialize<S: Serializer>(e: &Option<Entity>, s: S) -> Result<S::Ok, S::Error> {
        e.map(|e| e.to_bits()).serialize(s)
    }

    /// Reads optional id bits.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Entity>, D::Error> {
        let bits = Option::<u64>::deserialize(d)?;
        Ok(bits.map(|b| Entity::try_from_bits(b).unwrap_or(Entity::PLACEHOLDER)))
    }
}

/// Two entities as their id bits (serde `with`).
pub mod entity_pair_bits {
    use super::*;

    /// Writes both id bits.
    pub fn serialize<S: Serializer>(e: &[Entity; 2], s: S) -> Result<S::Ok, S::Error> {
        [e[0].to_bits(), e[1].to_bits()].serialize(s)
    }

    /// Reads two id bits.
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[Entity; 2], D::Error> {
        let [a, b] = <[u64; 2]>::deserialize(d)?;
        let e = |x: u64| Entity::try_from_bits(x).unwrap_or(Entity::PLACEHOLDER);
        Ok([e(a), e(b)])
    }
}

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
