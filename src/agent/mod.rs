//! People as entities: residents (identity, tile position and path, current action, scratch,
//! day plan) and the player's avatar, plus the systems that carry out plans on the grid.
//! Headless: no render types.

pub mod avatar;
pub mod persona;
pub mod routine;

use crate::sim::SimSystems;
use crate::sim::clock::SimClock;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::path::path_to_any;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use persona::Persona;
use routine::{Block, block_at, daily_routine};
use crate::cognition::config::CognitionConfig;
use crate::memory::reflect::ReflectionTrigger;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::memory::SpatialMemory;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// A simulated resident of the town.
#[derive(Component, Debug, Clone)]
#[require(GridPos, WalkPath, Scratch, MemoryStream, SpatialMemory)]
pub struct Resident {
    /// The validated persona (shared: it does not change during a run).
    pub persona: Arc<Persona>,
}

/// Who someone is, for residents and the avatar alike (what others can perceive).
#[derive(Component, Debug, Clone)]
pub struct Identity {
    /// Full name.
    pub name: String,
    /// First name.
    pub first_name: String,
    /// Age in years.
    pub age: u32,
    /// One line about them.
    pub description: String,
}

/// Where someone stands: the current tile and the one before the last step (for drawing
/// motion between tiles).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GridPos {
    /// The tile now.
    pub tile: Tile,
    /// The tile at the start of the last step.
    pub prev: Tile,
}

impl GridPos {
    /// Standing still at a tile.
    pub fn at(tile: Tile) -> Self {
        Self { tile, prev: tile }
    }
}

/// The tiles still to walk (excluding the current one), one per step.
#[derive(Component, Debug, Clone, Default)]
pub struct WalkPath {
    /// Remaining tiles, next first.
    pub tiles: VecDeque<Tile>,
    /// The address the walk leads to.
    pub destination: Option<String>,
}

/// Where a current action came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ActionSource {
    /// The deterministic daily routine (no LLM).
    #[default]
    Routine,
    /// The player's own avatar.
    Player,
}

/// What someone is doing now.
#[derive(Component, Debug, Clone, Default)]
pub struct CurrentAction {
    /// E.g. "having breakfast".
    pub description: String,
    /// A short emoji.
    pub emoji: String,
    /// Canonical address where it happens.
    pub address: String,
    /// When it started.
    pub start: GameTime,
    /// Planned length in minutes.
    pub duration_min: u32,
    /// Who decided it.
    pub source: ActionSource,
    /// The event others perceive, (subject, predicate, object); `None`: (name, "is", description).
    pub event: Option<(String, String, String)>,
}

impl CurrentAction {
    /// Whether the person is asleep (and perceives nothing).
    pub fn is_asleep(&self) -> bool {
        let d = self.description.to_lowercase();
        d.contains("sleeping") || d.contains("asleep")
    }

    /// The event others perceive, borrowed: (name, "is", description) when none is set.
    pub fn triple_ref<'a>(&'a self, name: &'a str) -> (&'a str, &'a str, &'a str) {
        match &self.event {
            Some((s, p, o)) => (s, p, o),
            None if self.description.trim().is_empty() => (name, "is", "idle"),
            None => (name, "is", &self.description),
        }
    }

    /// The event others perceive, with the person's name as subject when none is set.
    pub fn triple(&self, name: &str) -> (String, String, String) {
        if let Some(t) = &self.event {
            return t.clone();
        }
        if self.description.trim().is_empty() {
            (name.to_string(), "is".into(), "idle".into())
        } else {
            (name.to_string(), "is".into(), self.description.clone())
        }
    }
}

/// Short-term state (the original's scratch): perception and reflection settings, the
/// reflection counter and the conversation state, per agent. Defaults come from the
/// `cognition` section of the config (the Smallville bootstrap values).
#[derive(Component, Debug, Clone, Serialize, Deserialize)]
pub struct Scratch {
    /// Square vision radius in tiles.
    pub vision_radius: u32,
    /// Events attended per step.
    pub attention_bandwidth: usize,
    /// Newest events kept for de-duplication.
    pub retention: usize,
    /// Recency decay per game hour since last access.
    pub recency_decay: f32,
    /// Counts importance down to the next reflection.
    pub reflection: ReflectionTrigger,
    /// Whom they are talking with.
    #[serde(skip)]
    pub chatting_with: Option<Entity>,
}

impl Scratch {
    /// The settings of a config.
    pub fn from_config(c: &CognitionConfig) -> Self {
        Self {
            vision_radius: c.vision_radius,
            attention_bandwidth: c.attention_bandwidth,
            retention: c.retention,
            recency_decay: c.retrieval.decay,
            reflection: ReflectionTrigger::new(c.reflection_threshold),
            chatting_with: None,
        }
    }
}

impl Default for Scratch {
    fn default() -> Self {
        Self::from_config(&CognitionConfig::default())
    }
}

/// Today's plan and which block is current.
#[derive(Component, Debug, Clone, Default)]
pub struct DayPlan {
    /// Day (days since 1970) the plan is for; `None` before the first plan.
    pub day: Option<i64>,
    /// The blocks, covering the day.
    pub blocks: Vec<Block>,
    /// Index of the current block.
    pub current: Option<usize>,
}

/// Spawns the residents and the avatar of a scenario.
pub fn spawn_people(mut commands: Commands, scenario: Res<crate::ScenarioRes>, clock: Res<SimClock>, map: Res<WorldMap>, cog: Res<crate::cognition::Cognition>) {
    let names: Vec<String> = scenario.0.residents.iter().map(|p| p.spec.name.clone()).chain([scenario.0.player.name.clone()]).collect();
    for p in &scenario.0.residents {
        commands.spawn(resident_bundle(p.clone(), clock.now, &map, &cog.0, &names));
    }
    commands.spawn(avatar::avatar_bundle(&scenario.0.player, clock.now));
}

/// The names among `names` that a text mentions (full name, or first name as a word), plus
/// `own`: keywords for a memory.
pub fn mentioned_names(text: &str, own: &str, names: &[String]) -> Vec<String> {
    let mut out = vec![own.to_string()];
    let words: Vec<&str> = text.split(|c: char| !c.is_alphanumeric() && c != '\'').collect();
    for n in names {
        let first = n.split_whitespace().next().unwrap_or(n);
        if (text.contains(n.as_str()) || words.contains(&first)) && !out.contains(n) {
            out.push(n.clone());
        }
    }
    out
}

/// The components of a resident: identity, position, the day's plan, and memory seeded from
/// the scenario (the seed statements as thoughts; home, work and favourite places as known
/// places).
pub fn resident_bundle(p: Persona, now: GameTime, map: &WorldMap, cog: &CognitionConfig, names: &[String]) -> impl Bundle {
    let spawn = p.spawn;
    let identity = Identity {
        name: p.spec.name.clone(),
        first_name: p.first_name.clone(),
        age: p.spec.age,
        description: p.spec.learned.clone(),
    };
    let mut stream = MemoryStream::default();
    if cog.ablation.memory() {
        for m in &p.memories {
            stream.add(
                NodeKind::Thought,
                NewNode {
                    subject: p.spec.name.clone(),
                    predicate: "knows".into(),
                    object: m.clone(),
                    description: m.clone(),
                    keywords: mentioned_names(m, &p.spec.name, names),
                    ..default()
                },
                now,
            );
        }
    }
    let mut spatial = SpatialMemory::new(&map.world);
    spatial.add_address(map, &p.home_sector);
    if let Some((_, _, w)) = &p.work {
        spatial.add_address(map, w);
    }
    for h in &p.haunts {
        spatial.add_address(map, h);
    }
    (
        Name::new(p.spec.name.clone()),
        Resident { persona: Arc::new(p) },
        identity,
        GridPos::at(spawn),
        CurrentAction { start: now, ..default() },
        DayPlan::default(),
        Scratch::from_config(cog),
        stream,
        spatial,
    )
}

/// Lays out each resident's day when the date changes and switches to the block due now.
pub fn follow_routines(clock: Res<SimClock>, mut people: Query<(&Resident, &mut DayPlan, &mut CurrentAction)>) {
    let day = clock.now.day();
    let minute = clock.now.minute_of_day();
    for (resident, mut plan, mut action) in &mut people {
        if plan.day != Some(day) {
            let blocks = daily_routine(&resident.persona, day);
            *plan = DayPlan { day: Some(day), blocks, current: None };
        }
        let Some(i) = block_at(&plan.blocks, minute) else { continue };
        if plan.current == Some(i) {
            continue;
        }
        plan.current = Some(i);
        let b = &plan.blocks[i];
        if action.description == b.description && action.address == b.address {
            continue; // the same activity carried over midnight
        }
        *action = CurrentAction {
            description: b.description.clone(),
            emoji: b.emoji.clone(),
            address: b.address.clone(),
            start: clock.now,
            duration_min: b.end - b.start,
            source: ActionSource::Routine,
            event: None,
        };
    }
}

/// Plans a walk for everyone whose action moved them to a new address.
pub fn plan_walks(
    map: Res<WorldMap>,
    mut changed: Query<(&Identity, &GridPos, &CurrentAction, &mut WalkPath), Changed<CurrentAction>>,
    all: Query<&GridPos>,
) {
    if changed.is_empty() {
        return;
    }
    let occupied: HashSet<Tile> = all.iter().map(|p| p.tile).collect();
    for (id, pos, action, mut walk) in &mut changed {
        if action.address.is_empty() || walk.destination.as_deref() == Some(action.address.as_str()) && walk.tiles.is_empty() && map.tiles_of(&action.address).contains(&pos.tile) {
            continue;
        }
        let goals = goal_tiles(&map, &action.address, &id.name);
        walk.destination = Some(action.address.clone());
        walk.tiles = match path_to_any(&map, pos.tile, &goals, &|t| occupied.contains(&t) && t != pos.tile) {
            Some(p) => p.into(),
            None => {
                warn!("no path from {} to {}", pos.tile, action.address);
                VecDeque::new()
            }
        };
    }
}

/// Candidate end tiles for an address: furniture itself (one may lie in a bed), walkable tiles
/// of the place otherwise, spread per person so a crowd does not stack on one tile.
fn goal_tiles(map: &WorldMap, address: &str, who: &str) -> Vec<Tile> {
    let tiles = map.tiles_of(address);
    let is_object = address.split(':').count() >= 4;
    let mut goals: Vec<Tile> = if is_object { tiles.to_vec() } else { map.stand_tiles(address) };
    if goals.is_empty() {
        goals = tiles.to_vec();
    }
    // Rotate by a per-person offset: spread, and the same in every run (entity ids are not:
    // they depend on what else was spawned first).
    if !goals.is_empty() {
        let k = (crate::llm::backend::scripted::text_hash(who) as usize).wrapping_mul(2_654_435_761) % goals.len();
        goals.rotate_left(k);
        goals.truncate(12);
    }
    goals
}

/// Moves everyone with a path one tile.
pub fn walk_one_tile(mut walkers: Query<(&mut GridPos, &mut WalkPath)>) {
    for (mut pos, mut walk) in &mut walkers {
        let prev = pos.tile;
        let next = walk.tiles.pop_front().unwrap_or(prev);
        if pos.prev != prev || next != prev {
            *pos = GridPos { tile: next, prev };
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.add_systems(Startup, spawn_people)
        .add_systems(crate::sim::SimStep, (follow_routines.in_set(SimSystems::Decide), plan_walks.in_set(SimSystems::Act), walk_one_tile.in_set(SimSystems::Move)));
    avatar::plugin(app);
}
