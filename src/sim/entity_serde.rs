//! Entities in serialized state: an entity is written as its id bits (serde `with` modules for
//! one, an optional one and a pair). Any layer's saved state names them; the save layer
//! (`save::entity_ref`) maps the saved bits to the entities that stand for them after a load.

use bevy::prelude::*;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
