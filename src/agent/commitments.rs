//! Gatherings a resident said it would go to ([`Commitments`]), shown to its planning in words,
//! and putting one into a day's plan by rule ([`schedule_gathering`], the `plan_gatherings`
//! aid): the gathering takes its window at its place, and what was planned there moves after it,
//! as any inserted action does.

use super::DayPlan;
use super::schedule::{Block, insert_action};
use crate::memory::news::Gathering;
use crate::sim::map::WorldMap;
use crate::sim::time::GameTime;
use bevy::prelude::*;

/// One gathering a resident accepted an invitation to.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Commitment {
    /// What, where, when.
    pub gathering: Gathering,
    /// Who invited them.
    pub asker: String,
    /// When they accepted.
    pub accepted: GameTime,
    /// Whether they were there while it went on.
    pub kept: bool,
}

/// Gatherings a resident accepted an invitation to.
#[derive(Component, Debug, Default, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Commitments {
    /// In the order accepted.
    pub list: Vec<Commitment>,
}

impl Commitments {
    /// Whether the resident already accepted this gathering.
    pub fn has(&self, g: &Gathering) -> bool {
        self.list.iter().any(|c| c.gathering.same(g))
    }

    /// What the resident said it would go to on `day`, in words for its planning, a line ending
    /// in a newline ("Maria Lopez has said yes to: attending party at Hobbs Cafe from 5 PM to
    /// 7 PM (Klaus Mueller's invitation).\n"), or nothing.
    pub fn words(&self, name: &str, day: i64) -> String {
        let items: Vec<String> = self
            .list
            .iter()
            .filter(|c| c.gathering.day == day)
            .map(|c| {
                let g = &c.gathering;
                format!(
                    "{} from {} to {} ({}'s invitation)",
                    g.plan_item(),
                    crate::sim::time::minute_words(g.start),
                    crate::sim::time::minute_words(g.end),
                    c.asker
                )
            })
            .collect();
        if items.is_empty() {
            String::new()
        } else {
            format!("{name} has said yes to: {}.\n", items.join("; "))
        }
    }

    /// The plan items of the gatherings it said it would go to on `day`.
    pub fn items(&self, day: i64) -> Vec<String> {
        self.list
            .iter()
            .filter(|c| c.gathering.day == day)
            .map(|c| c.gathering.plan_item())
            .collect()
    }
}

/// Whether a plan already holds the gathering (a block at its place that says so, inside its
/// window).
pub fn holds_gathering(plan: &DayPlan, g: &Gathering) -> bool {
    let item = g.plan_item();
    plan.blocks.iter().any(|b| {
        b.description == item && b.address == g.address && b.start < g.end && b.end > g.start
    })
}

/// Puts a gathering into the plan for its day, from `now_min` at the earliest: the gathering's
/// window becomes a block at its place; what was planned from its start moves after it, up to
/// the end of the activity under way when it ends (as a conversation or a wait is inserted).
/// Returns whether the plan changed (not the gathering's day, already over, or already there:
/// no change).
pub fn schedule_gathering(plan: &mut DayPlan, g: &Gathering, now_min: u32) -> bool {
    if plan.day != Some(g.day) || holds_gathering(plan, g) {
        return false;
    }
    let start = g.start.max(now_min);
    if start >= g.end {
        return false;
    }
    let window_end = plan
        .at(g.end.saturating_sub(1))
        .map(|i| plan.blocks[i].end)
        .unwrap_or(g.end)
        .max(g.end);
    let id = plan.new_id();
    let block = Block {
        start,
        end: g.end,
        description: g.plan_item(),
        emoji: "🎉".into(),
        address: g.address.clone(),
        id,
        activity: id,
        group: id,
        subtask: true,
        object_state: String::new(),
    };
    plan.blocks = insert_action(std::mem::take(&mut plan.blocks), start, block, window_end);
    plan.current = None;
    true
}

/// The places a gathering may be at: each sector by name, at its largest arena.
pub fn gathering_places(map: &WorldMap) -> Vec<(String, String)> {
    map.sectors
        .iter()
        .filter_map(|s| {
            let a = s
                .arenas
                .iter()
                .map(|a| &map.arenas[*a])
                .max_by_key(|a| a.rect.w * a.rect.h)?;
            Some((
                s.name.clone(),
                format!("{}:{}:{}", map.world, s.name, a.name),
            ))
        })
        .collect()
}

/// The gathering a statement speaks of, if any (see [`parse_gathering`]).
pub fn gathering_in(text: &str, holder: &str, now: GameTime, map: &WorldMap) -> Option<Gathering> {
    crate::memory::news::parse_gathering(text, holder, now, &gathering_places(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::PlanSource;
    use crate::agent::schedule::covers_the_day;

    fn b(start: u32, end: u32, d: &str) -> Block {
        Block {
            start,
            end,
            description: d.into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_gathering_takes_its_window_and_the_plan_still_covers_the_day() {
        let day = 19_402;
        let mut plan = DayPlan::from_blocks(
            day,
            PlanSource::Model,
            420,
            vec![
                b(0, 420, "sleeping"),
                b(420, 1020, "working"),
                b(1020, 1080, "shopping"),
                b(1080, 1200, "dinner"),
                b(1200, 1440, "sleeping"),
            ],
        );
        let g = Gathering::party_on(day);
        assert!(schedule_gathering(&mut plan, &g, 600));
        assert!(covers_the_day(&plan.blocks), "{:?}", plan.blocks);
        let i = plan.at(1020).unwrap();
        assert_eq!(plan.blocks[i].description, "attending party at Hobbs Cafe");
        assert_eq!((plan.blocks[i].start, plan.blocks[i].end), (1020, 1140));
        assert_eq!(plan.blocks[i].address, g.address);
        assert!(
            plan.blocks[i].decided(),
            "the place is decided: no model asked"
        );
        // What was planned from 17:00 follows it, within the activity under way at its end.
        assert_eq!(plan.blocks[plan.at(1140).unwrap()].description, "shopping");
        assert!(!schedule_gathering(&mut plan, &g, 600), "already there");
        let mut other = g.clone();
        other.day += 1;
        assert!(!schedule_gathering(&mut plan, &other, 600), "another day");
        // Accepted while it goes on: from now.
        let mut late = DayPlan::from_blocks(day, PlanSource::Model, 420, vec![b(0, 1440, "x")]);
        assert!(schedule_gathering(&mut late, &g, 1100));
        assert_eq!(
            late.blocks[late.at(1100).unwrap()].description,
            g.plan_item()
        );
        let mut fresh = DayPlan::from_blocks(day, PlanSource::Model, 420, vec![b(0, 1440, "x")]);
        assert!(!schedule_gathering(&mut fresh, &g, 1140), "over");
    }
}
