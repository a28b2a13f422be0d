//! People as entities: residents (identity, tile position and path, current action, scratch,
//! day plan) and the player's avatar, plus the systems that carry out plans on the grid.
//! Headless: no render types.

pub mod avatar;
pub mod carry;
pub mod cast;
pub mod commitments;
pub mod conversation;
pub mod names;
pub mod persona;
pub mod routine;
pub mod schedule;

use crate::memory::SpatialMemory;
use crate::memory::stream::MemoryStream;
use crate::sim::SimSystems;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::path::path_to_any;
use crate::sim::time::GameTime;
use bevy::prelude::*;
pub use names::{TownNames, mentioned_names};
use persona::Persona;
use routine::block_at;
use schedule::Block;
use serde::{Deserialize, Serialize};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

/// A simulated resident of the town.
#[derive(Component, Debug, Clone)]
#[require(GridPos, WalkPath, Facing, MemoryStream, SpatialMemory)]
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

/// The address of an action done where one stands (waiting, talking): no walk.
pub const STAY_HERE: &str = "<here>";

/// Which way someone faces: -1 left, 1 right (sprites are drawn mirrored to the left).
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Facing(pub i32);

/// Where someone stands: the current tile and the one before the last step (for drawing
/// motion between tiles).
#[derive(Component, Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
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
#[derive(Component, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WalkPath {
    /// Remaining tiles, next first.
    pub tiles: VecDeque<Tile>,
    /// The address the walk leads to.
    pub destination: Option<String>,
}

/// Where a current action came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum ActionSource {
    /// The deterministic daily routine (no LLM).
    #[default]
    Routine,
    /// The resident's own plan, made with the model.
    Plan,
    /// A reaction or a conversation.
    Reaction,
    /// The player's own avatar.
    Player,
}

/// What someone is doing now.
#[derive(Component, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// The state its object takes on arrival ("being slept in"); empty: none.
    pub object_state: String,
}

impl CurrentAction {
    /// Whether the person is asleep (and perceives nothing).
    pub fn is_asleep(&self) -> bool {
        let d = &self.description;
        contains_ignoring_case(d, "sleeping") || contains_ignoring_case(d, "asleep")
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

/// Who decided a day's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum PlanSource {
    /// The deterministic daily routine (no model; the fallback).
    #[default]
    Routine,
    /// The agent's own plan, made with the model.
    Model,
}

/// Today's plan: the wake-up time, the broad strokes, the hourly schedule as made, and the
/// live schedule (hourly activities, some refined into subtasks) with the current block.
#[derive(Component, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DayPlan {
    /// Day (days since 1970) the plan is for; `None` before the first plan.
    pub day: Option<i64>,
    /// Who made it.
    pub source: PlanSource,
    /// Wake-up minute.
    pub wake_min: u32,
    /// The day in broad strokes (5–8 items).
    pub broad: Vec<String>,
    /// The hourly schedule as first made (before refinement and reactions).
    pub hourly: Vec<Block>,
    /// The live schedule, covering the day.
    pub blocks: Vec<Block>,
    /// Index of the current block.
    pub current: Option<usize>,
    /// Next block id.
    pub next_id: u32,
    /// Activity group → chosen sector (`world:sector`), the first half of choosing a place.
    pub sectors: std::collections::BTreeMap<u32, String>,
    /// Activity group → chosen arena (`world:sector:arena`).
    pub places: std::collections::BTreeMap<u32, String>,
}

impl DayPlan {
    /// A plan from blocks covering the day, with fresh ids (each block its own activity).
    pub fn from_blocks(day: i64, source: PlanSource, wake_min: u32, blocks: Vec<Block>) -> Self {
        let mut plan = DayPlan {
            day: Some(day),
            source,
            wake_min,
            ..default()
        };
        plan.blocks = blocks
            .into_iter()
            .map(|mut b| {
                plan.next_id += 1;
                b.id = plan.next_id;
                b.activity = b.id;
                b.group = b.id;
                b
            })
            .collect();
        plan.hourly = plan.blocks.clone();
        plan
    }

    /// Splits every activity longer than an hour (but sleep) into hour-long pieces on the hour,
    /// each refined on its own, all in the activity's group.
    pub fn split_into_hours(&mut self, keep_whole: impl Fn(&Block) -> bool) {
        let blocks = std::mem::take(&mut self.blocks);
        for b in blocks {
            if keep_whole(&b) || b.end - b.start <= 60 {
                self.blocks.push(b);
                continue;
            }
            let mut start = b.start;
            while start < b.end {
                let end = ((start / 60 + 1) * 60).min(b.end);
                let id = self.new_id();
                self.blocks.push(Block {
                    start,
                    end,
                    id,
                    activity: id,
                    ..b.clone()
                });
                start = end;
            }
        }
    }

    /// A fresh block id.
    pub fn new_id(&mut self) -> u32 {
        self.next_id += 1;
        self.next_id
    }

    /// The block covering a minute.
    pub fn at(&self, minute: u32) -> Option<usize> {
        block_at(&self.blocks, minute)
    }

    /// The blocks that overlap the minutes `from..to`, found by halving (the blocks are in order
    /// and cover the day): a plan refined into subtasks holds a hundred blocks or more by
    /// evening, and a resident's coming hours are looked at every step.
    pub fn window(&self, from: u32, to: u32) -> std::ops::Range<usize> {
        let a = self.blocks.partition_point(|b| b.end <= from);
        a..a + self.blocks[a..].partition_point(|b| b.start < to)
    }
}

/// The parts of who someone is that change over time (the original's `currently` and daily
/// plan requirement), revised each new day; they open every prompt with the fixed traits.
#[derive(Component, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Outlook {
    /// What they are up to these days (L2).
    pub currently: String,
    /// What their days must include ("opens Hobbs Cafe at 8am …").
    pub plan_requirement: String,
}

impl Outlook {
    /// The starting outlook of a persona.
    pub fn of(p: &Persona) -> Self {
        let plan_requirement = match (&p.spec.work, &p.work) {
            _ if p.spec.plan_requirement.is_some() => {
                p.spec.plan_requirement.clone().unwrap_or_default()
            }
            (Some(w), Some((from, to, addr))) => {
                let place = addr
                    .split(':')
                    .skip(1)
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(", ");
                format!(
                    "{} is {} ({place}) from {} to {}.",
                    p.first_name,
                    w.activity,
                    crate::sim::time::minute_clock(*from),
                    crate::sim::time::minute_clock(*to)
                )
            }
            _ => String::new(),
        };
        Self {
            currently: p.spec.currently.clone(),
            plan_requirement,
        }
    }
}

/// Whether `text` contains `word` (ASCII, lower-case) with any ASCII case, without making a
/// lower-case copy (asked of every resident at every step).
pub fn contains_ignoring_case(text: &str, word: &str) -> bool {
    // Asked of every resident's action several times a step ("sleeping"?): only where the
    // first letter matches is the rest compared.
    let (t, w) = (text.as_bytes(), word.as_bytes());
    let Some((first, rest)) = w.split_first() else {
        return true;
    };
    let first = first.to_ascii_lowercase();
    t.len() >= w.len()
        && (0..=t.len() - w.len()).any(|i| {
            t[i].to_ascii_lowercase() == first && t[i + 1..i + w.len()].eq_ignore_ascii_case(rest)
        })
}

/// Tiles (the square) within which a walker steps around the people standing there as its walk
/// is planned: the people it can see; those farther off are walked past or waited for on the way.
pub const STEP_AROUND_TILES: i32 = 8;

/// Plans a walk for everyone whose action moved them to a new address, around the people near
/// its start ([`STEP_AROUND_TILES`]).
pub fn plan_walks(
    map: Res<WorldMap>,
    mut changed: Query<
        (&Identity, &GridPos, &CurrentAction, &mut WalkPath),
        Changed<CurrentAction>,
    >,
    all: Query<&GridPos>,
) {
    if changed.is_empty() {
        return;
    }
    let occupied: HashSet<Tile> = all.iter().map(|p| p.tile).collect();
    let mut walks: Vec<(Tile, Vec<Tile>, Mut<WalkPath>)> = Vec::new();
    for (id, pos, action, mut walk) in &mut changed {
        if action.address.is_empty() || action.address == STAY_HERE {
            continue;
        }
        // Already there, or already on the way there: the walk stands.
        if walk.destination.as_deref() == Some(action.address.as_str())
            && (!walk.tiles.is_empty() || map.tiles_of(&action.address).contains(&pos.tile))
        {
            continue;
        }
        let goals = goal_tiles(&map, &action.address, &id.name);
        walk.destination = Some(action.address.clone());
        walks.push((pos.tile, goals, walk));
    }
    // Each walk is searched against the same picture of who stands where, so the paths do not
    // depend on each other: in a town of a thousand they are searched in parallel.
    let find = |(from, goals, walk): &mut (Tile, Vec<Tile>, Mut<WalkPath>)| {
        let from = *from;
        let near = |t: Tile| (t.x - from.x).abs().max((t.y - from.y).abs()) <= STEP_AROUND_TILES;
        let blocked = |t: Tile| t != from && near(t) && occupied.contains(&t);
        walk.tiles = match path_to_any(&map, from, goals, &blocked) {
            Some(p) => p.into(),
            None => {
                warn!(
                    "no path from {} to {}",
                    from,
                    walk.destination.as_deref().unwrap_or("")
                );
                VecDeque::new()
            }
        };
    };
    crate::sim::parallel::map_mut(&mut walks, 8, find);
}

/// Candidate end tiles for an address: furniture itself (one may lie in a bed), walkable tiles
/// of the place otherwise, spread per person so a crowd does not stack on one tile.
fn goal_tiles(map: &WorldMap, address: &str, who: &str) -> Vec<Tile> {
    let tiles = map.tiles_of(address);
    let is_object = address.split(':').count() >= 4;
    // Tiles a walk from the street can end on (a stray corner cut off from it is left out).
    let reachable = || {
        tiles
            .iter()
            .copied()
            .filter(|t| map.reachable(*t))
            .collect()
    };
    let mut goals: Vec<Tile> = if is_object {
        reachable()
    } else {
        map.stand_tiles(address)
    };
    if goals.is_empty() {
        goals = reachable();
    }
    if goals.is_empty() {
        goals = tiles.to_vec();
    }
    // Rotate by a per-person offset: spread, and the same in every run (entity ids are not:
    // they depend on what else was spawned first).
    if !goals.is_empty() {
        let k =
            (crate::sim::hash::text_hash(who) as usize).wrapping_mul(2_654_435_761) % goals.len();
        goals.rotate_left(k);
        goals.truncate(12);
    }
    goals
}

/// Moves everyone with a path one tile (and turns them the way they walk).
pub fn walk_one_tile(mut walkers: Query<(&mut GridPos, &mut WalkPath, Option<&mut Facing>)>) {
    for (mut pos, mut walk, facing) in &mut walkers {
        let prev = pos.tile;
        let next = walk.tiles.pop_front().unwrap_or(prev);
        if pos.prev != prev || next != prev {
            *pos = GridPos { tile: next, prev };
        }
        if let Some(mut f) = facing
            && next.x != prev.x
        {
            let want = (next.x - prev.x).signum();
            if f.0 != want {
                f.0 = want;
            }
        }
    }
}

pub(crate) fn plugin(app: &mut App) {
    app.init_resource::<conversation::ConversationLog>()
        .init_resource::<conversation::PlayerChat>();
    app.add_systems(
        crate::sim::SimStep,
        (
            plan_walks.in_set(SimSystems::Act),
            walk_one_tile.in_set(SimSystems::Move),
        ),
    );
    avatar::plugin(app);
}

#[cfg(test)]
mod tests {
    use super::contains_ignoring_case;
    use super::{Block, DayPlan, PlanSource};

    /// The window found by halving holds exactly the blocks a scan of the whole day would.
    #[test]
    fn a_plans_window_holds_the_blocks_overlapping_it() {
        let block = |start, end, d: &str| Block {
            start,
            end,
            description: d.into(),
            ..Default::default()
        };
        let mut plan = DayPlan::from_blocks(
            0,
            PlanSource::Model,
            420,
            vec![
                block(0, 420, "sleeping"),
                block(420, 425, "waking up"),
                block(425, 600, "working"),
                block(600, 1320, "reading"),
                block(1320, 1440, "sleeping"),
            ],
        );
        plan.split_into_hours(|b| b.description == "sleeping");
        assert!(plan.blocks.len() > 10);
        for from in (0..1440).step_by(7) {
            for len in [0, 1, 5, 60, 180, 2000] {
                let to = from + len;
                let scanned: Vec<u32> = plan
                    .blocks
                    .iter()
                    .filter(|b| b.end > from && b.start < to)
                    .map(|b| b.id)
                    .collect();
                let found: Vec<u32> = plan.blocks[plan.window(from, to)]
                    .iter()
                    .map(|b| b.id)
                    .collect();
                assert_eq!(found, scanned, "{from}..{to}");
            }
        }
    }

    #[test]
    fn a_word_is_found_in_any_case_anywhere() {
        assert!(contains_ignoring_case("Sleeping in bed", "sleeping"));
        assert!(contains_ignoring_case("is fast ASLEEP", "asleep"));
        assert!(contains_ignoring_case("asleep", "asleep"));
        assert!(
            contains_ignoring_case("ssleeping", "sleeping"),
            "a false start"
        );
        assert!(
            !contains_ignoring_case("sleepin", "sleeping"),
            "shorter than the word"
        );
        assert!(!contains_ignoring_case("keeping the shop", "sleeping"));
        assert!(!contains_ignoring_case("café sleepy", "asleep"));
        assert!(contains_ignoring_case("anything", ""));
    }
}
