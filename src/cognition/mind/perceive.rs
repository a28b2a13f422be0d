//! Perception, each step: an agent sees the square of tiles within its vision radius (and adds
//! every place there to its spatial memory) and attends to the events in its own arena: what
//! other people and the player's avatar are doing, its own action, and objects whose state is
//! not idle. The nearest `attention_bandwidth` events are kept; one whose triple is among the
//! `retention` newest events, or whose triple was remembered within the last `repeat_minutes`,
//! is already known and skipped; each other becomes an event memory. (The original had only the
//! first test: in a crowd the nearest few change every step, and the same people doing the same
//! things were remembered again each minute, half of a town of a thousand's memories.)
//! Importance: "is idle" is 1 without asking; a text this agent scored before keeps its score;
//! the rest are scored later, together (see `remember`).
//!
//! In a town big enough for the grid, a resident whose view has not changed since its last look
//! (the same people doing the same things, the same objects, where it stands) and all of whose
//! events are still within the repeat window does not look again ([`Glance`]): that look would
//! remember nothing. Residents look in parallel; each writes only its own memory.

use crate::agent::{CurrentAction, GridPos, Identity, Resident};
use crate::cognition::config::Cognition;
use crate::cognition::resident::scratch::Scratch;
use crate::memory::SpatialMemory;
use crate::memory::stream::{MemoryStream, NewNode, NodeKind};
use crate::sim::clock::SimClock;
use crate::sim::map::{Tile, WorldMap};
use crate::sim::objects_state::ObjectStates;
use crate::sim::time::GameTime;
use bevy::ecs::entity::EntityHashMap;
use bevy::platform::hash::FixedHasher;
use bevy::prelude::*;
use rayon::prelude::*;
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Something seen, before it becomes a memory (borrowing from the people and objects seen).
#[derive(Debug, Clone, PartialEq)]
pub struct Perceived<'a> {
    /// Subject (a person's name or an object's address).
    pub subject: &'a str,
    /// Predicate.
    pub predicate: &'a str,
    /// Object.
    pub object: &'a str,
    /// Who or what, for the description ("Maria Lopez", "stove").
    pub who: &'a str,
    /// What they are doing or how it is ("studying at the library table", "burning").
    pub doing: &'a str,
    /// Distance from the viewer in tiles (Euclidean).
    pub distance: f32,
}

impl Perceived<'_> {
    /// In words: "Maria Lopez is studying at the library table".
    pub fn description(&self) -> String {
        format!("{} is {}", self.who, self.doing)
    }
}

/// The part of town a tile belongs to for "same arena" tests: (sector, arena) indices.
pub fn area(map: &WorldMap, t: Tile) -> (Option<usize>, Option<usize>) {
    (map.sector_at(t), map.arena_at(t))
}

/// Whether `t` is within the square of `radius` around `centre`.
pub fn in_square(centre: Tile, t: Tile, radius: u32) -> bool {
    centre.x.abs_diff(t.x) <= radius && centre.y.abs_diff(t.y) <= radius
}

fn euclid(a: Tile, b: Tile) -> f32 {
    (((a.x - b.x) * (a.x - b.x) + (a.y - b.y) * (a.y - b.y)) as f32).sqrt()
}

/// A person as others see them this step.
#[derive(Debug, Clone)]
pub struct Seen<'a> {
    /// Name.
    pub name: &'a str,
    /// Tile.
    pub tile: Tile,
    /// (subject, predicate, object).
    pub triple: (&'a str, &'a str, &'a str),
    /// What they are doing, in words.
    pub doing: &'a str,
}

/// Things (by their index in a list) bucketed by the square cells of the vision radius's size
/// their tiles fall in, so a viewer looks only at the 3×3 cells around it, not at everything (a
/// town of a thousand has a million pairs a step).
#[derive(Debug, Default)]
struct CellGrid {
    cell: i32,
    cells: HashMap<(i32, i32), Vec<usize>>,
}

fn cell_of(cell: i32, t: Tile) -> (i32, i32) {
    (t.x.div_euclid(cell), t.y.div_euclid(cell))
}

impl CellGrid {
    fn new(radius: u32, tiles: impl IntoIterator<Item = (usize, Tile)>) -> Self {
        let cell = radius.max(1) as i32;
        let mut cells: HashMap<(i32, i32), Vec<usize>> = Default::default();
        for (i, t) in tiles {
            let v = cells.entry(cell_of(cell, t)).or_default();
            if v.last() != Some(&i) {
                v.push(i);
            }
        }
        Self { cell, cells }
    }

    /// The cell a tile is in.
    fn cell_of(&self, t: Tile) -> (i32, i32) {
        cell_of(self.cell, t)
    }

    /// The cells the square of `radius` around `viewer` reaches.
    fn cells_around(&self, viewer: Tile, radius: u32) -> impl Iterator<Item = (i32, i32)> {
        let r = radius as i32;
        let (x0, x1) = (
            (viewer.x - r).div_euclid(self.cell),
            (viewer.x + r).div_euclid(self.cell),
        );
        let (y0, y1) = (
            (viewer.y - r).div_euclid(self.cell),
            (viewer.y + r).div_euclid(self.cell),
        );
        (x0..=x1).flat_map(move |x| (y0..=y1).map(move |y| (x, y)))
    }

    /// The indices with a tile in the cells that the square of `radius` around `viewer`
    /// reaches, in increasing order, each once.
    fn around(&self, viewer: Tile, radius: u32) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for c in self.cells_around(viewer, radius) {
            if let Some(v) = self.cells.get(&c) {
                out.extend_from_slice(v);
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// A signature of what the cells the square of `radius` around `viewer` reaches hold, from
    /// each cell's own (`sigs`): equal while nothing in them changed.
    fn signature(&self, sigs: &CellSigs, viewer: Tile, radius: u32) -> u64 {
        let mut h: u64 = 0;
        for c in self.cells_around(viewer, radius) {
            if let Some(s) = sigs.get(&c) {
                h = h.rotate_left(5) ^ s ^ FixedHasher.hash_one(c);
            }
        }
        h
    }
}

/// Each cell's signature: the sum of its contents' hashes (their order in a cell is fixed by
/// the list the grid was built from).
type CellSigs = HashMap<(i32, i32), u64>;

/// Where people stand this step, in a [`CellGrid`] (none below [`GRID_FROM`] people: every look
/// is then a scan).
#[derive(Debug, Default)]
pub struct SeenGrid(Option<(CellGrid, CellSigs)>);

/// Below this many people a scan of everyone is cheaper than building the grid.
pub const GRID_FROM: usize = 64;

/// A signature of everything a viewer at `viewer` could see this step (the people and objects
/// in the cells its square reaches, where it stands, how far and how much it attends), or `None`
/// where people are too few for a grid (every look is then made).
fn view_signature(
    people: &SeenGrid,
    objects: &ObjectGrid,
    viewer: Tile,
    radius: u32,
    bandwidth: usize,
) -> Option<u64> {
    let (grid, sigs) = people.0.as_ref()?;
    let seen = grid.signature(sigs, viewer, radius);
    let things = objects.grid.signature(&objects.sigs, viewer, radius);
    Some(FixedHasher.hash_one((seen, things, viewer, radius, bandwidth)))
}

/// What a resident's last look saw ([`view_signature`]) and until when all of it stays known
/// (the earliest time one of its events leaves the repeat window): until then, and while the
/// signature holds, a look would remember nothing new and is not made. Most of a big town
/// stands still most of the time, at desks, tables and in conversations.
#[derive(Debug, Clone, Copy)]
pub struct Glance {
    signature: u64,
    quiet_until: i64,
}

/// Each resident's last [`Glance`] (not saved: a loaded town looks again at its first step).
#[derive(Resource, Debug, Default)]
pub struct Glances(EntityHashMap<Glance>, u64, u64);

impl Glances {
    /// Forgets every glance: everyone looks again at the next step.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Looks not made (nothing in view changed and all of it was known) since the start.
    pub fn rested(&self) -> u64 {
        self.1
    }

    /// Looks made by residents awake since the start.
    pub fn looked(&self) -> u64 {
        self.2
    }
}

impl SeenGrid {
    /// Buckets the people seen (by their index in `people`) in cells of side `radius` (≥ 1).
    pub fn new(people: &[Seen], radius: u32) -> Self {
        if people.len() < GRID_FROM {
            return Self(None);
        }
        let grid = CellGrid::new(radius, people.iter().enumerate().map(|(i, p)| (i, p.tile)));
        let mut sigs = CellSigs::default();
        for p in people {
            let c = grid.cell_of(p.tile);
            let sig = sigs.entry(c).or_default();
            *sig = sig.wrapping_add(FixedHasher.hash_one((p.name, p.tile, p.triple, p.doing)));
        }
        Self(Some((grid, sigs)))
    }

    /// The indices of the people within the square of `radius` around `viewer` (any radius), in
    /// their order in the list the grid was built from.
    pub fn near(&self, viewer: Tile, radius: u32, people: &[Seen]) -> Vec<usize> {
        let within = |i: &usize| in_square(viewer, people[*i].tile, radius);
        match &self.0 {
            None => (0..people.len()).filter(within).collect(),
            Some((g, _)) => g
                .around(viewer, radius)
                .into_iter()
                .filter(within)
                .collect(),
        }
    }
}

/// An object not idle, as perception sees it: (address, state, tiles).
pub type SeenObject<'a> = (&'a str, &'a str, &'a [Tile]);

/// The objects not idle this step with their tiles, in address order, in a [`CellGrid`] (a town
/// of a thousand has thousands of beds and desks in use).
pub struct ObjectGrid<'a> {
    objects: Vec<SeenObject<'a>>,
    grid: CellGrid,
    sigs: CellSigs,
}

impl<'a> ObjectGrid<'a> {
    /// Looks up the tiles of every object with a state.
    pub fn new(map: &'a WorldMap, states: &'a ObjectStates, radius: u32) -> Self {
        let objects: Vec<SeenObject<'a>> = states
            .states
            .iter()
            .map(|(a, st)| (a.as_str(), st.state.as_str(), map.tiles_of(a)))
            .collect();
        let grid = CellGrid::new(
            radius,
            objects
                .iter()
                .enumerate()
                .flat_map(|(i, o)| o.2.iter().map(move |t| (i, *t))),
        );
        let sigs = grid
            .cells
            .iter()
            .map(|(c, ix)| {
                let sum = ix.iter().fold(0u64, |h, &i| {
                    let (address, state, _) = objects[i];
                    h.wrapping_add(FixedHasher.hash_one((address, state)))
                });
                (*c, sum)
            })
            .collect();
        Self {
            objects,
            grid,
            sigs,
        }
    }

    /// The objects with a tile in reach of the square of `radius` around `viewer` (maybe some
    /// farther), in address order.
    pub fn near(&self, viewer: Tile, radius: u32) -> impl Iterator<Item = &SeenObject<'a>> {
        self.grid
            .around(viewer, radius)
            .into_iter()
            .map(|i| &self.objects[i])
    }
}

/// The events one viewer attends to: people and non-idle objects within the square and in the
/// same arena, nearest first, at most `bandwidth`.
pub fn events_in_view<'a, 'b>(
    map: &WorldMap,
    viewer: Tile,
    radius: u32,
    bandwidth: usize,
    people: impl IntoIterator<Item = &'b Seen<'a>>,
    objects: impl IntoIterator<Item = &'b SeenObject<'a>>,
) -> Vec<Perceived<'a>>
where
    'a: 'b,
{
    let here = area(map, viewer);
    let mut out: Vec<Perceived<'a>> = Vec::new();
    for p in people {
        if in_square(viewer, p.tile, radius) && area(map, p.tile) == here {
            let (subject, predicate, object) = p.triple;
            out.push(Perceived {
                subject,
                predicate,
                object,
                who: p.name,
                doing: p.doing,
                distance: euclid(viewer, p.tile),
            });
        }
    }
    for &(address, state, tiles) in objects {
        let nearest = tiles
            .iter()
            .copied()
            .filter(|t| in_square(viewer, *t, radius) && area(map, *t) == here)
            .min_by(|a, b| euclid(viewer, *a).total_cmp(&euclid(viewer, *b)));
        if let Some(t) = nearest {
            let who = address.rsplit(':').next().unwrap_or(address);
            out.push(Perceived {
                subject: address,
                predicate: "is",
                object: state,
                who,
                doing: state,
                distance: euclid(viewer, t),
            });
        }
    }
    // Nearest first; equal distances keep the order above (people, then objects by address).
    out.sort_by(|a, b| a.distance.total_cmp(&b.distance));
    out.truncate(bandwidth);
    out
}

/// Drops events whose triple is among the `retention` newest event memories, and those whose
/// triple an event memory formed within the last `repeat_secs` before `now` holds; with the
/// events kept, the time until which every event given stays known once they are remembered
/// (the earliest a look at the same view could find something new; `i64::MIN` when one is
/// known only as one of the newest, `i64::MAX` for no events).
pub fn unseen<'a>(
    stream: &MemoryStream,
    retention: usize,
    repeat_secs: i64,
    now: GameTime,
    events: Vec<Perceived<'a>>,
) -> (Vec<Perceived<'a>>, i64) {
    let mut recent: Option<Vec<(&str, &str, &str)>> = None;
    let mut quiet_until = i64::MAX;
    let kept = events
        .into_iter()
        .filter(|e| {
            let triple = (e.subject, e.predicate, e.object);
            let last = stream.last_event_of(triple).map(|at| at.0);
            if let Some(at) = last.filter(|at| repeat_secs > 0 && now.0 - at < repeat_secs) {
                quiet_until = quiet_until.min(at + repeat_secs);
                return false;
            }
            let recent =
                recent.get_or_insert_with(|| stream.latest_event_triples(retention).collect());
            if recent.contains(&triple) {
                quiet_until = i64::MIN;
                return false;
            }
            quiet_until = quiet_until.min(now.0.saturating_add(repeat_secs));
            true
        })
        .collect();
    (kept, quiet_until)
}

/// Keywords of an event: the last part of its subject and object (names, objects).
fn keywords(e: &Perceived) -> Vec<String> {
    let last = |s: &str| s.rsplit(':').next().unwrap_or(s).trim().to_string();
    vec![last(e.subject), last(e.object)]
}

/// The perception system.
pub fn perceive(
    clock: Res<SimClock>,
    map: Res<WorldMap>,
    cog: Res<Cognition>,
    objects: Res<ObjectStates>,
    people: Query<(&Identity, &GridPos, &CurrentAction)>,
    mut agents: Query<
        (
            Entity,
            &GridPos,
            &CurrentAction,
            &mut MemoryStream,
            &mut SpatialMemory,
            &mut Scratch,
        ),
        With<Resident>,
    >,
    mut started: Local<bool>,
    mut glances: ResMut<Glances>,
) {
    if !cog.0.ablation.memory() {
        return;
    }
    // Someone whose first action is not decided yet shows nothing to perceive.
    let mut seen: Vec<Seen> = people
        .iter()
        .filter(|(_, _, act)| !act.description.is_empty() || act.event.is_some())
        .map(|(id, pos, act)| Seen {
            name: &id.name,
            tile: pos.tile,
            triple: act.triple_ref(&id.name),
            doing: if act.description.is_empty() {
                "idle"
            } else {
                &act.description
            },
        })
        .collect();
    // In name order, not the order the ECS stores people in (which a load may change), so
    // equally near people are seen in the same order in a run and in its continuation.
    seen.sort_by(|a, b| a.name.cmp(b.name));
    let first = !*started;
    *started = true;
    let c = &cog.0;
    let grid = SeenGrid::new(&seen, c.vision_radius);
    let object_grid = ObjectGrid::new(&map, &objects, c.vision_radius);
    let repeat_secs = c.repeat_minutes as i64 * 60;
    let now = clock.now;
    let known = &glances.0;
    // Each resident looks at the shared picture of the step and writes only its own memory:
    // residents look in parallel (in a town of a thousand this was a fifth of a step), and the
    // results do not depend on who looked first.
    let look = |(agent, pos, action, mut stream, mut spatial, mut scratch): LookItem| {
        if first || pos.prev != pos.tile {
            let prev = (!first).then_some(pos.prev);
            spatial.see_step(&map, prev, pos.tile, c.vision_radius as i32);
        }
        if action.is_asleep() {
            return Look::Asleep;
        }
        let signature = view_signature(
            &grid,
            &object_grid,
            pos.tile,
            c.vision_radius,
            c.attention_bandwidth,
        )
        .filter(|_| repeat_secs > 0);
        if let (Some(sig), Some(g)) = (signature, known.get(&agent))
            && g.signature == sig
            && now.0 < g.quiet_until
        {
            return Look::Rested;
        }
        let near = grid.near(pos.tile, c.vision_radius, &seen);
        let events = events_in_view(
            &map,
            pos.tile,
            c.vision_radius,
            c.attention_bandwidth,
            near.iter().map(|i| &seen[*i]),
            object_grid.near(pos.tile, c.vision_radius),
        );
        let (events, quiet_until) = unseen(&stream, c.retention, repeat_secs, now, events);
        for e in events {
            remember_event(&mut stream, &mut scratch, &e, now);
        }
        // Every event in view is now remembered (just now, or within the window already):
        // the look may rest until the first leaves the window.
        Look::Made(signature.map(|signature| {
            (
                agent,
                Glance {
                    signature,
                    quiet_until,
                },
            )
        }))
    };
    let items: Vec<LookItem> = agents.iter_mut().collect();
    // A village's step is too short to hand to other threads.
    let looked: Vec<Look> = if items.len() >= GRID_FROM {
        items.into_par_iter().with_min_len(32).map(look).collect()
    } else {
        items.into_iter().map(look).collect()
    };
    for look in looked {
        match look {
            Look::Asleep => {}
            Look::Rested => glances.1 += 1,
            Look::Made(g) => {
                glances.2 += 1;
                if let Some((agent, g)) = g {
                    glances.0.insert(agent, g);
                }
            }
        }
    }
}

/// What perception reads and writes of a resident.
type LookItem<'a> = (
    Entity,
    &'a GridPos,
    &'a CurrentAction,
    Mut<'a, MemoryStream>,
    Mut<'a, SpatialMemory>,
    Mut<'a, Scratch>,
);

/// What one resident's look at a step came to.
enum Look {
    /// Asleep: nothing seen.
    Asleep,
    /// Nothing in view changed and all of it is known: no look made.
    Rested,
    /// Looked (and the glance to keep, where there is a grid).
    Made(Option<(Entity, Glance)>),
}

/// An event seen becomes an event memory. Importance: "is idle" is 1 without asking; a text
/// this agent scored before keeps its score; the rest are scored later, together.
fn remember_event(stream: &mut MemoryStream, scratch: &mut Scratch, e: &Perceived, now: GameTime) {
    let description = e.description();
    let idle = e.predicate == "is idle" || (e.predicate == "is" && e.object == "idle");
    let importance = if idle {
        Some(1)
    } else {
        stream.memo_importance(&description)
    };
    stream.add(
        NodeKind::Event,
        NewNode {
            subject: e.subject.to_string(),
            predicate: e.predicate.to_string(),
            object: e.object.to_string(),
            keywords: keywords(e),
            description,
            importance,
            ..default()
        },
        now,
    );
    if let Some(i) = importance {
        scratch.reflection.record(i);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::map::parse_map;
    use crate::sim::time::GameTime;
    use std::path::Path;

    /// Two rooms side by side: "left" x 0..5, "right" x 6..11, a wall at x = 5; a street below.
    fn map() -> WorldMap {
        let mut rows: Vec<String> = (0..12).map(|_| "_____#______".to_string()).collect();
        rows.push("============".into());
        let src = format!(
            r#"( world: "w", width: 12, height: 13, legend: {{ '_': Floor, '#': Wall, '=': Path }},
            terrain: [ {} ],
            sectors: [ ( name: "house", rect: (0, 0, 12, 12), arenas: [
                ( name: "left", rect: (0, 0, 5, 12), objects: [ (kind: "bed", rect: (0, 0, 1, 2)) ] ),
                ( name: "right", rect: (6, 0, 6, 12), objects: [ (kind: "desk", rect: (11, 11, 1, 1)) ] ),
            ] ) ] )"#,
            rows.iter()
                .map(|r| format!("\"{r}\""))
                .collect::<Vec<_>>()
                .join(", ")
        );
        parse_map(Path::new("t.ron"), &src).unwrap()
    }

    fn person<'a>(name: &'a str, x: i32, y: i32, doing: &'a str) -> Seen<'a> {
        Seen {
            name,
            tile: Tile::new(x, y),
            triple: (name, "is", doing),
            doing,
        }
    }

    #[test]
    fn radius_and_arena() {
        let m = map();
        let people = [
            person("Me", 2, 5, "reading"),
            person("Near", 3, 5, "cooking"),
            person("Far", 2, 11, "sleeping"),
            person("Other room", 6, 5, "painting"),
        ];
        let got = events_in_view(&m, Tile::new(2, 5), 4, 8, &people, &[] as &[SeenObject]);
        let names: Vec<&str> = got.iter().map(|e| e.subject).collect();
        assert_eq!(
            names,
            vec!["Me", "Near"],
            "Far is out of the square; Other room is in another arena"
        );
        assert_eq!(got[1].description(), "Near is cooking");
        let wide = events_in_view(&m, Tile::new(2, 5), 8, 8, &people, &[] as &[SeenObject]);
        assert_eq!(wide.len(), 3, "a larger radius reaches Far");
    }

    #[test]
    fn bandwidth_keeps_the_nearest() {
        let m = map();
        let names: Vec<String> = (0..6).map(|i| format!("P{i}")).collect();
        let people: Vec<Seen> = (0..6)
            .map(|i| person(&names[i], 0, 10 - i as i32, "standing"))
            .collect();
        let got = events_in_view(&m, Tile::new(0, 10), 8, 3, &people, &[] as &[SeenObject]);
        assert_eq!(
            got.iter().map(|e| e.subject).collect::<Vec<_>>(),
            vec!["P0", "P1", "P2"]
        );
    }

    fn all_of<'a>(m: &'a WorldMap, objects: &'a ObjectStates) -> Vec<SeenObject<'a>> {
        ObjectGrid::new(m, objects, 8)
            .near(Tile::new(0, 0), 1000)
            .copied()
            .collect()
    }

    #[test]
    fn objects_with_a_state_are_seen_in_the_same_arena() {
        let m = map();
        let mut objects = ObjectStates::default();
        let now = GameTime::parse("2023-02-13 08:00").unwrap();
        objects.set("w:house:left:bed", "being slept in", None, now);
        objects.set("w:house:right:desk", "covered in papers", None, now);
        let got = events_in_view(
            &m,
            Tile::new(1, 3),
            8,
            8,
            &[] as &[Seen],
            &all_of(&m, &objects),
        );
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].description(), "bed is being slept in");
        assert_eq!(got[0].subject, "w:house:left:bed");
        objects.set("w:house:left:bed", "idle", None, now);
        assert!(
            events_in_view(
                &m,
                Tile::new(1, 3),
                8,
                8,
                &[] as &[Seen],
                &all_of(&m, &objects)
            )
            .is_empty(),
            "idle objects are not events"
        );
    }

    #[test]
    fn retention_skips_recent_triples() {
        let mut s = MemoryStream::default();
        let now = GameTime::parse("2023-02-13 08:00").unwrap();
        for who in ["A", "B", "C"] {
            s.add(
                NodeKind::Event,
                NewNode {
                    subject: who.into(),
                    predicate: "is".into(),
                    object: "x".into(),
                    description: format!("{who} is x"),
                    ..default()
                },
                now,
            );
        }
        let ev = |who: &'static str| Perceived {
            subject: who,
            predicate: "is",
            object: "x",
            who,
            doing: "x",
            distance: 0.0,
        };
        let kept = unseen(&s, 2, 0, now, vec![ev("A"), ev("B"), ev("C"), ev("D")]).0;
        assert_eq!(
            kept.iter().map(|e| e.subject).collect::<Vec<_>>(),
            vec!["A", "D"],
            "A fell out of the 2 newest"
        );
        assert_eq!(unseen(&s, 8, 0, now, vec![ev("A")]).0.len(), 0);
        // Within the repeat window A is still known though it left the 2 newest; an hour
        // after it was remembered it may be remembered again.
        let later = |m: i64| GameTime(now.0 + m * 60);
        let (kept, quiet) = unseen(&s, 2, 3600, later(59), vec![ev("A"), ev("D")]);
        assert_eq!(
            kept.iter().map(|e| e.subject).collect::<Vec<_>>(),
            vec!["D"]
        );
        // A stays known until an hour after it was remembered (D, new, an hour from now).
        assert_eq!(quiet, now.0 + 3600);
        let kept = unseen(&s, 2, 3600, later(60), vec![ev("A"), ev("D")]).0;
        assert_eq!(
            kept.iter().map(|e| e.subject).collect::<Vec<_>>(),
            vec!["A", "D"]
        );
    }

    /// The grid finds exactly the people a scan of everyone finds, in the same order, for
    /// viewers anywhere (edges and negative cells included) and radii up to and past its cell.
    #[test]
    fn the_grid_finds_whom_a_scan_of_everyone_finds() {
        let names: Vec<String> = (0..300).map(|i| format!("p{i}")).collect();
        let mut seed = 12345u64;
        let mut next = |m: i32| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % m as u64) as i32
        };
        let people: Vec<Seen> = names
            .iter()
            .map(|n| Seen {
                name: n,
                tile: Tile::new(next(60) - 5, next(40) - 5),
                triple: (n, "is", "idle"),
                doing: "idle",
            })
            .collect();
        assert!(people.len() >= GRID_FROM, "the grid is built");
        for radius in [1, 4, 7] {
            let grid = SeenGrid::new(&people, 4);
            for _ in 0..200 {
                let viewer = Tile::new(next(70) - 10, next(50) - 10);
                let scan: Vec<usize> = (0..people.len())
                    .filter(|i| in_square(viewer, people[*i].tile, radius))
                    .collect();
                assert_eq!(
                    grid.near(viewer, radius, &people),
                    scan,
                    "{viewer:?} r{radius}"
                );
            }
        }
    }

    #[test]
    fn the_object_grid_finds_what_a_scan_of_every_object_finds() {
        let (_, m) =
            crate::sim::map::generate::generate_town(120, 3, Path::new("town.ron")).unwrap();
        let now = GameTime::parse("2023-02-13 08:00").unwrap();
        let mut objects = ObjectStates::default();
        for t in (0..m.width * m.height)
            .step_by(7)
            .map(|i| Tile::new(i % m.width, i / m.width))
        {
            if m.object_at(t).is_some() {
                objects.set(&m.address(t).to_string(), "in use", None, now);
            }
        }
        assert!(objects.states.len() > 100, "{}", objects.states.len());
        let grid = ObjectGrid::new(&m, &objects, 4);
        let every = all_of(&m, &objects);
        let mut seed = 99u64;
        let mut seen = 0;
        let (w, h) = (m.width, m.height);
        for radius in [2, 4, 9] {
            for _ in 0..300 {
                seed = crate::sim::hash::mix64(seed);
                let viewer = Tile::new((seed % w as u64) as i32, ((seed >> 32) % h as u64) as i32);
                let none: &[Seen] = &[];
                let got = events_in_view(&m, viewer, radius, 50, none, grid.near(viewer, radius));
                seen += got.len();
                assert_eq!(
                    got,
                    events_in_view(&m, viewer, radius, 50, none, &every),
                    "{viewer:?} r{radius}"
                );
            }
        }
        assert!(seen > 100, "the viewers saw objects: {seen}");
    }
}
