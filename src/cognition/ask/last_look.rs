//! Residents with nothing to ask for in their coming hours, remembered between steps.
//!
//! Placing and refining the plan look at every resident's next hours at every step, and at a
//! thousand residents nearly all of them find nothing to do: their blocks are placed, refined or
//! already asked for. What such a look finds depends only on the resident's plan, its requests in
//! flight and which blocks lie in the window, so a look is skipped while the plan is unchanged
//! (its change tick), no request was added or removed ([`Pending::generation`]), the day has not
//! wrapped, and no further block has come into the window.

use crate::agent::DayPlan;
use crate::cognition::ask::pending::Pending;
use bevy::ecs::change_detection::Tick;
use bevy::platform::collections::HashMap;
use bevy::prelude::*;

/// What one system saw of each resident at its last look (kept in the system's `Local`).
#[derive(Debug, Default)]
pub struct LastLook(HashMap<Entity, Seen>);

#[derive(Debug, Clone, Copy, PartialEq)]
struct Seen {
    plan: Tick,
    jobs: u64,
    /// Minute of the day of the look.
    from: u32,
    /// The window may grow until its end passes this minute (the next block's start).
    until: u32,
}

impl LastLook {
    /// Whether a look at the window `now..horizon` would find what the last one found, so it
    /// need not be made.
    pub fn still(
        &self,
        agent: Entity,
        plan_tick: Tick,
        pending: &Pending,
        now: u32,
        horizon: u32,
    ) -> bool {
        self.0.get(&agent).is_some_and(|s| {
            s.plan == plan_tick
                && s.jobs == pending.generation()
                && s.from <= now
                && horizon <= s.until
        })
    }

    /// Notes a look made at `now` (after what it changed and asked for).
    pub fn note(
        &mut self,
        agent: Entity,
        plan_tick: Tick,
        plan: &DayPlan,
        pending: &Pending,
        now: u32,
        horizon: u32,
    ) {
        let next = plan.window(now, horizon).end;
        let until = plan.blocks.get(next).map_or(u32::MAX, |b| b.start);
        self.0.insert(
            agent,
            Seen {
                plan: plan_tick,
                jobs: pending.generation(),
                from: now,
                until,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::PlanSource;
    use crate::agent::schedule::Block;
    use crate::cognition::ask::job::Job;
    use crate::llm::{LlmHandle, LlmRequest};

    /// A look is skipped only while the plan, the requests, the day and the blocks in view are
    /// what they were; any of them changing makes it be made again.
    #[test]
    fn a_look_is_skipped_only_while_nothing_it_reads_changed() {
        let block = |start, end| Block {
            start,
            end,
            description: "working".into(),
            ..Default::default()
        };
        let plan = DayPlan::from_blocks(
            0,
            PlanSource::Model,
            420,
            vec![block(0, 420), block(420, 600), block(600, 1440)],
        );
        let mut pending = Pending::default();
        let (a, b) = (
            Entity::from_raw_u32(1).unwrap(),
            Entity::from_raw_u32(2).unwrap(),
        );
        let tick = Tick::new(7);
        let mut last_look = LastLook::default();
        assert!(
            !last_look.still(a, tick, &pending, 430, 550),
            "never looked"
        );
        last_look.note(a, tick, &plan, &pending, 430, 550);
        // The next block starts at 600: the window may grow to it, not past it.
        assert!(last_look.still(a, tick, &pending, 431, 551));
        assert!(last_look.still(a, tick, &pending, 480, 600));
        assert!(
            !last_look.still(a, tick, &pending, 481, 601),
            "a block came into view"
        );
        assert!(
            !last_look.still(b, tick, &pending, 431, 551),
            "another resident"
        );
        assert!(
            !last_look.still(a, Tick::new(8), &pending, 431, 551),
            "the plan changed"
        );
        assert!(!last_look.still(a, tick, &pending, 10, 130), "a new day");
        let copy = pending.clone();
        assert!(
            last_look.still(a, tick, &copy, 431, 551),
            "a copy holds the same jobs"
        );
        pending.push(
            LlmHandle(1),
            LlmRequest::embed("test", "x"),
            Job::Decompose {
                day: 0,
                activity: 1,
            },
            0,
        );
        assert!(
            !last_look.still(a, tick, &pending, 431, 551),
            "a request was added"
        );
        last_look.note(a, tick, &plan, &pending, 431, 551);
        assert!(last_look.still(a, tick, &pending, 432, 552));
        pending.drop_where(|_| true);
        assert!(
            !last_look.still(a, tick, &pending, 432, 552),
            "a request was removed"
        );
        assert!(
            !last_look.still(a, tick, &Pending::default(), 432, 552),
            "a new one"
        );
        // The last block: nothing further can come into view.
        last_look.note(a, tick, &plan, &pending, 700, 820);
        assert!(last_look.still(a, tick, &pending, 1400, 1520));
    }
}
