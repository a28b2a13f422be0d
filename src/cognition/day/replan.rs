//! Re-planning the rest of a day after a whispered inner voice. The whisper is a high-importance
//! thought; the resident then asks the model for a new activity for each hour left (from the end
//! of what it is doing now, or within the hour), with the thought and the old plan in the prompt.
//! The new hours replace the old ones from that minute on; what came before stays, and the plan
//! still covers the day. An hour the model leaves unusable keeps its old activity.

use crate::agent::routine::block_at;
use crate::agent::schedule::Block;
use crate::agent::{DayPlan, Identity, Outlook, PlanSource, Resident};
use crate::cognition::ask::asker::Asker;
use crate::cognition::ask::job::Job;
use crate::cognition::ask::job::take;
use crate::cognition::ask::pending::Pending;
use crate::cognition::ask::prompts::Who;
use crate::cognition::ask::prompts::one_line;
use crate::cognition::config::Cognition;
use crate::cognition::day::activity::is_sleep;
use crate::cognition::day::plan::{add_plan_thought, hour_answers, hours_schema};
use crate::llm::{LlmValue, OutputShape};
use crate::memory::stream::MemoryStream;
use crate::sim::clock::SimClock;
use crate::sim::time::minute_label;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};

/// A resident that is to re-plan the rest of its day around a new thought.
#[derive(Component, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Replan {
    /// The thought (the whisper as remembered).
    pub thought: String,
}

/// The minute a re-plan starts at `now`: the end of the block under way, at most an hour ahead,
/// never before waking.
pub fn replan_from(plan: &DayPlan, now: u32) -> u32 {
    let end = plan
        .at(now)
        .map(|i| plan.blocks[i].end)
        .unwrap_or(now)
        .min(now + 60);
    end.max(plan.wake_min).max(now)
}

/// The blocks of a plan re-planned from `from` to `bed`: the blocks before `from` kept (the one
/// crossing it cut there), one block per answered hour after it (an hour without a usable answer
/// keeps its old activity; equal neighbours merged), sleep from `bed`. Covers the day when the
/// old plan did. New blocks have id 0 (the caller numbers them).
pub fn replan_blocks(old: &[Block], from: u32, bed: u32, answers: &[(u32, String)]) -> Vec<Block> {
    let mut out: Vec<Block> = old
        .iter()
        .filter(|b| b.start < from)
        .map(|b| Block {
            end: b.end.min(from),
            ..b.clone()
        })
        .collect();
    let bed = bed.clamp(from, 1440);
    let mut push = |start: u32, end: u32, d: String| {
        if end <= start {
            return;
        }
        match out.last_mut() {
            Some(last)
                if last.id == 0
                    && last.end == start
                    && last.description.eq_ignore_ascii_case(&d) =>
            {
                last.end = end
            }
            _ => out.push(Block {
                start,
                end,
                description: d,
                ..Default::default()
            }),
        }
    };
    let mut m = from;
    while m < bed {
        let end = ((m / 60 + 1) * 60).min(bed);
        let text = answers
            .iter()
            .find(|(h, t)| *h == m / 60 && t.len() >= 3)
            .map(|(_, t)| t.clone())
            .or_else(|| block_at(old, m).map(|i| old[i].description.clone()))
            .unwrap_or_else(|| "relaxing".into());
        push(m, end, text);
        m = end;
    }
    push(bed, 1440, "sleeping".into());
    out
}

/// Asks for the rest of the day of each resident that has a new thought to plan around (once its
/// day's plan is the model's own).
pub fn request_replans(
    mut ask: Asker,
    mut commands: Commands,
    mut agents: Query<(
        Entity,
        &Resident,
        &Identity,
        &Outlook,
        &DayPlan,
        &Replan,
        Option<&crate::agent::commitments::Commitments>,
        &mut Pending,
    )>,
) {
    let now = ask.clock.now.minute_of_day();
    let day = ask.clock.now.day();
    for (agent, resident, id, outlook, plan, replan, commitments, mut pending) in &mut agents {
        if plan.day != Some(day) || plan.source != PlanSource::Model {
            continue; // the day's own plan comes first (it sees the thought when it retrieves)
        }
        commands.entity(agent).remove::<Replan>();
        let bed = resident.persona.sleep_min.min(1440);
        let from = replan_from(plan, now);
        if from >= bed {
            continue;
        }
        let labels: Vec<String> = std::iter::once(from)
            .chain((from / 60 + 1..bed.div_ceil(60)).map(|h| h * 60))
            .map(minute_label)
            .collect();
        let schedule = plan
            .hourly
            .iter()
            .filter(|b| b.end > from && !is_sleep(&b.description))
            .map(|b| format!("{} {}", minute_label(b.start.max(from)), b.description))
            .collect::<Vec<_>>()
            .join("\n");
        let who = Who::of(resident, outlook, &id.name, ask.clock.now);
        let date = ask.clock.now.date_string();
        let thought = one_line(&replan.thought);
        let hours = labels.join(", ");
        let said_yes = commitments
            .map(|c| c.words(&id.name, day))
            .unwrap_or_default();
        let req = ask.chat(
            "replan",
            &who,
            &[
                ("date", &date),
                ("thought", &thought),
                ("schedule", &schedule),
                ("hours", &hours),
                ("commitments", &said_yes),
            ],
            OutputShape::Json(hours_schema(&labels)),
            30 + 28 * labels.len() as u32,
        );
        let slack = ask.cfg.0.decision_slack_steps;
        ask.ask(agent, &mut pending, req, Job::Replan { day, from }, slack);
    }
}

/// The new hours arrived: they replace the plan from their first minute on (and are remembered).
pub fn apply_replans(
    clock: Res<SimClock>,
    cog: Res<Cognition>,
    mut agents: Query<(
        &Resident,
        &Identity,
        &mut DayPlan,
        &mut MemoryStream,
        &mut Pending,
    )>,
) {
    for (resident, id, mut plan, mut stream, mut pending) in &mut agents {
        for ((day, from), reply) in
            take!(pending, clock.step, cog.real_time(), Replan { day, from })
        {
            let LlmValue::Json(v) = &reply.value else {
                continue;
            };
            if plan.day != Some(day) || reply.is_fallback() {
                continue;
            }
            // The plan moves on while the model thinks: start no earlier than now.
            let from = from.max(clock.now.minute_of_day().min(1439));
            let answers = hour_answers(v, &id.name);
            let bed = resident.persona.sleep_min.min(1440);
            let mut blocks = replan_blocks(&plan.blocks, from, bed, &answers);
            for b in blocks.iter_mut().filter(|b| b.id == 0) {
                let nid = plan.new_id();
                b.id = nid;
                b.activity = nid;
                b.group = nid;
            }
            let hourly = replan_blocks(&plan.hourly, from, bed, &answers);
            let items: Vec<String> = hourly
                .iter()
                .filter(|b| b.start >= from && !is_sleep(&b.description))
                .map(|b| format!("{} {}", minute_label(b.start), b.description))
                .collect();
            plan.blocks = blocks;
            plan.hourly = hourly;
            plan.current = None;
            plan.split_into_hours(|b| is_sleep(&b.description));
            if !items.is_empty() {
                let text = format!(
                    "{} changed the plan for the rest of {}: {}.",
                    id.name,
                    clock.now.date_string(),
                    items.join("; ")
                );
                add_plan_thought(
                    &mut stream,
                    &id.name,
                    text,
                    vec!["plan".into()],
                    &clock,
                    &cog,
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::schedule::covers_the_day;

    fn block(start: u32, end: u32, d: &str, id: u32) -> Block {
        Block {
            start,
            end,
            description: d.into(),
            id,
            activity: id,
            group: id,
            ..Default::default()
        }
    }

    #[test]
    fn the_rest_of_the_day_is_replaced_and_the_morning_kept() {
        let old = vec![
            block(0, 420, "sleeping", 1),
            block(420, 600, "working at the cafe", 2),
            block(600, 615, "serving coffee", 3),
            block(615, 1320, "working at the cafe", 4),
            block(1320, 1440, "sleeping", 5),
        ];
        let answers = vec![
            (10, "writing a campaign speech".to_string()),
            (11, "writing a campaign speech".to_string()),
            (12, "x".to_string()), // unusable: the old activity stays
            (13, "meeting voters in the park".to_string()),
        ];
        let new = replan_blocks(&old, 615, 1320, &answers);
        assert!(covers_the_day(&new), "{new:#?}");
        assert_eq!(&new[..3], &old[..3], "the morning is kept");
        assert_eq!(
            (new[3].start, new[3].end, new[3].description.as_str()),
            (615, 720, "writing a campaign speech")
        );
        assert_eq!(
            (new[4].start, new[4].end, new[4].description.as_str()),
            (720, 780, "working at the cafe")
        );
        assert_eq!(new[5].description, "meeting voters in the park");
        assert_eq!(new.last().map(|b| b.start), Some(1320));
        // Cut inside a block: it ends where the new plan starts.
        let cut = replan_blocks(&old, 500, 1320, &[]);
        assert!(covers_the_day(&cut));
        assert_eq!((cut[1].start, cut[1].end), (420, 500));
    }

    #[test]
    fn a_replan_starts_after_the_block_under_way() {
        let mut plan = DayPlan::from_blocks(
            0,
            PlanSource::Model,
            420,
            vec![
                block(0, 420, "sleeping", 0),
                block(420, 600, "working", 0),
                block(600, 1440, "sleeping", 0),
            ],
        );
        assert_eq!(replan_from(&plan, 500), 560, "at most an hour ahead");
        assert_eq!(replan_from(&plan, 590), 600);
        assert_eq!(replan_from(&plan, 100), 420, "never before waking");
        plan.wake_min = 0;
        assert_eq!(replan_from(&plan, 100), 160);
    }
}
