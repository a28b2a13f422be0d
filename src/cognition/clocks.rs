//! Residents on clocks of their own (`sim.own_clocks`): who runs the next pass while others
//! wait for the model. A pass is the whole step, run at one step for some residents with the
//! rest elsewhere; what a resident meets in it is what it would have met in lock-step:
//!
//! - residents at one step within [`coupling`] tiles of each other, and two who talk, run
//!   together or not at all, and none of them runs while an answer it needs by then is missing;
//! - a resident runs step `t` only while everyone behind it, at step `s`, stands farther than
//!   the reach (sight and a step each way) plus the `t + 1 − s` tiles either may walk meanwhile:
//!   whoever catches up never comes within sight of where the one ahead already is, nor of an
//!   object it set there;
//! - nobody runs past the horizon (the end of what was asked for), so everyone is at one step
//!   again when a run's chunk ends.
//!
//! So who runs with whom follows from where people stand and what they wait for, never from how
//! fast the model answers, and the day is the lock-step day.

use crate::agent::conversation::{Conversation, Talking};
use crate::agent::{GridPos, Resident};
use crate::cognition::ask::pending::Pending;
use crate::cognition::config::Cognition;
use crate::sim::clock::{OwnStep, Pass, SimClock};
use bevy::prelude::*;
use std::collections::HashSet;

/// A resident as a pass is planned.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    pub tile: (i32, i32),
    /// Its own next step.
    pub step: u64,
    /// Whether an answer it needs by that step is missing.
    pub blocked: bool,
    /// Index of whom it talks with, if anyone.
    pub partner: Option<usize>,
}

/// Tiles within which a resident sees people and objects, with a step either way: sight or the
/// tiles a walker steps around, whichever is wider, and two more.
pub fn reach(vision_radius: u32) -> i32 {
    vision_radius.max(crate::agent::STEP_AROUND_TILES as u32) as i32 + 2
}

/// Tiles within which two residents at one step run together: the reach and a step each.
pub fn coupling(reach: i32) -> i32 {
    reach + 2
}

fn apart(a: (i32, i32), b: (i32, i32)) -> i32 {
    (a.0 - b.0).abs().max((a.1 - b.1).abs())
}

/// The next pass: its step and the indices of who runs it, or `None` when nobody may run
/// before `horizon` until more answers come. The earliest step anyone may run goes first.
pub fn next_pass(people: &[Standing], reach: i32, horizon: u64) -> Option<(u64, Vec<usize>)> {
    let n = people.len();
    // Groups: partners, and residents at one step within the coupling distance.
    let mut group: Vec<usize> = (0..n).collect();
    fn root(g: &mut [usize], mut i: usize) -> usize {
        while g[i] != i {
            g[i] = g[g[i]];
            i = g[i];
        }
        i
    }
    let couple = coupling(reach);
    for i in 0..n {
        for j in i + 1..n {
            let (a, b) = (&people[i], &people[j]);
            let partners = a.partner == Some(j) || b.partner == Some(i);
            if partners || (a.step == b.step && apart(a.tile, b.tile) <= couple) {
                let (ri, rj) = (root(&mut group, i), root(&mut group, j));
                group[ri] = rj;
            }
        }
    }
    let roots: Vec<usize> = (0..n).map(|i| root(&mut group, i)).collect();
    let mut best: Option<(u64, Vec<usize>)> = None;
    for r in roots
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
    {
        let members: Vec<usize> = (0..n).filter(|i| roots[*i] == r).collect();
        // Partners a step apart (never in a sound run) let the one behind catch up.
        let t = members.iter().map(|i| people[*i].step).min().unwrap_or(0);
        let runners: Vec<usize> = members
            .into_iter()
            .filter(|i| people[*i].step == t)
            .collect();
        if t >= horizon || best.as_ref().is_some_and(|(b, _)| *b < t) {
            continue;
        }
        if runners.iter().any(|i| people[*i].blocked) {
            continue;
        }
        let clear = (0..n)
            .filter(|j| roots[*j] != r && people[*j].step < t)
            .all(|j| {
                let lead = (t + 1 - people[j].step) as i32;
                runners
                    .iter()
                    .all(|i| apart(people[*i].tile, people[j].tile) > reach + lead + 1)
            });
        if !clear {
            continue;
        }
        match &mut best {
            Some((b, v)) if *b == t => v.extend(runners),
            _ => best = Some((t, runners)),
        }
    }
    best.map(|(t, mut v)| {
        v.sort_unstable();
        (t, v)
    })
}

/// Plans the next pass for the step gate ([`StepGate::plan`](crate::sim::clock::StepGate)):
/// marks who runs it with its next [`OwnStep`] and lists the rest, and their unfinished
/// conversations, as elsewhere.
pub(super) fn plan_pass(world: &mut World, horizon: u64) -> Option<Pass> {
    let frontier = world.resource::<SimClock>().step;
    let cog = world.resource::<Cognition>();
    let real_time = cog.real_time();
    let reach = reach(cog.0.vision_radius);
    // An answer everyone waits for (the importance scale's vectors) holds every pass.
    let mut others = world.query_filtered::<&Pending, Without<Resident>>();
    if !real_time && others.iter(world).any(|p| p.blocking(frontier) > 0) {
        return None;
    }
    let mut q = world.query_filtered::<(
        Entity,
        &GridPos,
        &Pending,
        Option<&Talking>,
        Option<&OwnStep>,
    ), With<Resident>>();
    let found: Vec<(Entity, Standing, Option<Entity>)> = q
        .iter(world)
        .map(|(e, pos, pending, talking, own)| {
            let step = own.map_or(frontier, |s| s.0.max(frontier));
            (
                e,
                Standing {
                    tile: (pos.tile.x, pos.tile.y),
                    step,
                    blocked: !real_time && pending.blocking(step) > 0,
                    partner: None,
                },
                talking.map(|t| t.partner),
            )
        })
        .collect();
    let index: std::collections::HashMap<Entity, usize> =
        found.iter().enumerate().map(|(i, f)| (f.0, i)).collect();
    let people: Vec<Standing> = found
        .iter()
        .map(|(_, s, partner)| Standing {
            partner: partner.and_then(|p| index.get(&p).copied()),
            ..s.clone()
        })
        .collect();
    let (step, runners) = next_pass(&people, reach, horizon)?;
    let running: HashSet<Entity> = runners.iter().map(|i| found[*i].0).collect();
    let mut elsewhere = Vec::new();
    for (e, s, _) in &found {
        let next = if running.contains(e) {
            step + 1
        } else {
            s.step
        };
        world.entity_mut(*e).insert(OwnStep(next));
        if !running.contains(e) {
            elsewhere.push(*e);
        }
    }
    let mut convs = world.query::<(Entity, &Conversation)>();
    elsewhere.extend(
        convs
            .iter(world)
            .filter(|(_, c)| {
                c.ended.is_none()
                    && c.people
                        .iter()
                        .any(|m| index.contains_key(m) && !running.contains(m))
            })
            .map(|(e, _)| e),
    );
    Some(Pass { step, elsewhere })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(x: i32, step: u64) -> Standing {
        Standing {
            tile: (x, 0),
            step,
            blocked: false,
            partner: None,
        }
    }

    #[test]
    fn a_resident_far_from_two_who_wait_runs_ahead_and_near_ones_wait_with_them() {
        let r = 10;
        let mut people = vec![at(0, 5), at(1, 5), at(12, 5), at(40, 5)];
        people[0].partner = Some(1);
        people[1].partner = Some(0);
        people[1].blocked = true;
        // The pair waits; 11 tiles from one of them is within the coupling distance (12): it
        // waits with them; 40 tiles away runs.
        assert_eq!(next_pass(&people, r, 100), Some((5, vec![3])));
        // Nobody waits: everyone at one step runs at once.
        people[1].blocked = false;
        assert_eq!(next_pass(&people, r, 100), Some((5, vec![0, 1, 2, 3])));
        // The horizon holds everyone.
        assert_eq!(next_pass(&people, r, 5), None);
    }

    #[test]
    fn one_ahead_runs_on_only_while_it_stays_out_of_reach_of_those_behind() {
        let r = 10;
        let mut people = vec![at(0, 5), at(40, 20)];
        people[0].blocked = true;
        // 40 tiles: more than 10 + (21 - 5) + 1 = 27.
        assert_eq!(next_pass(&people, r, 100), Some((20, vec![1])));
        people[1].step = 30; // 10 + 26 + 1 = 37 < 40: still free
        assert_eq!(next_pass(&people, r, 100), Some((30, vec![1])));
        people[1].step = 33; // 10 + 29 + 1 = 40: not more than 40
        assert_eq!(next_pass(&people, r, 100), None);
        // The one behind runs as soon as its answer is in.
        people[0].blocked = false;
        assert_eq!(next_pass(&people, r, 100), Some((5, vec![0])));
    }

    #[test]
    fn the_slowest_always_runs_once_its_answers_are_in() {
        let r = 10;
        let people = vec![at(0, 3), at(2, 9), at(5, 4)];
        // Those ahead are too near; the one furthest behind has nobody behind it.
        assert_eq!(next_pass(&people, r, 100), Some((3, vec![0])));
    }
}
