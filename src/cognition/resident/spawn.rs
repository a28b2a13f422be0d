//! Spawning the people of a scenario: each resident as an entity with its identity, position,
//! outlook, an empty day plan, a scratch with the configured reflection threshold, and a memory
//! seeded from the scenario (unless memory is ablated); then the player's avatar.

use crate::agent::persona::{Persona, ScenarioRes};
use crate::agent::{CurrentAction, DayPlan, GridPos, Identity, Outlook, Resident, TownNames};
use crate::cognition::config::Cognition;
use crate::cognition::config::CognitionConfig;
use crate::cognition::resident::scratch::Scratch;
use crate::memory::SpatialMemory;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::WorldMap;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use std::sync::Arc;

/// Spawns the residents and the avatar of a scenario.
pub fn spawn_people(
    mut commands: Commands,
    scenario: Res<ScenarioRes>,
    clock: Res<SimClock>,
    map: Res<WorldMap>,
    cog: Res<Cognition>,
    town: Res<TownNames>,
) {
    for p in &scenario.0.residents {
        commands.spawn(resident_bundle(p.clone(), clock.now, &map, &cog.0, &town));
    }
    commands.spawn(crate::agent::avatar::avatar_bundle(
        &scenario.0.player,
        clock.now,
        &map.world,
    ));
}

/// The components of a resident: identity, position, the day's plan, and memory seeded from
/// the scenario (the seed statements as thoughts; home, work and favourite places as known
/// places).
pub fn resident_bundle(
    p: Persona,
    now: GameTime,
    map: &WorldMap,
    cog: &CognitionConfig,
    town: &TownNames,
) -> impl Bundle {
    let spawn = p.spawn;
    let identity = Identity {
        name: p.spec.name.clone(),
        first_name: p.first_name.clone(),
        age: p.spec.age,
        description: p.spec.learned.clone(),
    };
    let mut stream = MemoryStream::default();
    if cog.ablation.memory() {
        // Memories carried over with their own times and scores come first (they are older);
        // their evidence ids are their places in that list, which are their ids here.
        for (kind, created, node) in &p.memory_nodes {
            stream.add(*kind, node.clone(), *created);
        }
        for m in &p.memories {
            stream.add(
                NodeKind::Thought,
                NewNode {
                    subject: p.spec.name.clone(),
                    predicate: "knows".into(),
                    object: m.clone(),
                    description: m.clone(),
                    keywords: town.mentioned(m, &p.spec.name),
                    gathering: crate::agent::commitments::gathering_in(m, &p.spec.name, now, map),
                    ..default()
                },
                now,
            );
        }
    }
    let outlook = Outlook::of(&p);
    let mut spatial = SpatialMemory::new(&map.world);
    spatial.add_address(map, &p.home_sector);
    if let Some((_, _, w)) = &p.work {
        spatial.add_address(map, w);
    }
    for h in p.haunts.iter().chain(&p.known_places) {
        spatial.add_address(map, h);
    }
    (
        Name::new(p.spec.name.clone()),
        Resident {
            persona: Arc::new(p),
        },
        identity,
        GridPos::at(spawn),
        CurrentAction {
            start: now,
            ..default()
        },
        DayPlan::default(),
        outlook,
        Scratch::new(cog.reflection_threshold_in_use()),
        stream,
        spatial,
    )
}

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_people);
}
