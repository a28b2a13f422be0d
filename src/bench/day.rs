//! `simulacra bench day` and `simulacra bench sim`: a simulated day's pace with the configured
//! model (game hours per wall hour, LLM calls and tokens per agent per game hour), and headless
//! steps per second with residents on their routine.

use crate::llm::Llm;
use crate::sim::clock::SimClock;
use crate::{SimPlugin, headless_app};
use bevy::prelude::*;
use std::time::Instant;

/// What `simulacra bench day` measures.
#[derive(Debug, Clone)]
pub struct DayBench {
    /// Residents.
    pub agents: usize,
    /// Game hours measured.
    pub game_hours: f64,
    /// Wall seconds they took.
    pub wall_secs: f64,
    /// Wall seconds game time waited on the LLM.
    pub waited_secs: f64,
    /// Of those, the seconds laid at each purpose's door (shared among the answers missing).
    pub waited_on: Vec<(String, f64)>,
    /// Of those, the seconds the town waited on a single answer.
    pub waited_on_one: f64,
    /// The share of the residents the wait did not concern, over the time waited (none of
    /// their answers missing, none near a resident whose was): the most residents on clocks of
    /// their own could have run ahead.
    pub waited_apart: f64,
    /// LLM metrics over the measured hours only.
    pub stats: crate::llm::metrics::LlmStats,
    /// The warm-up's wall seconds.
    pub warmup_secs: f64,
    /// What the conversations carried (the whole run, warm-up included), as text.
    pub talk: String,
    /// What the embedded model ran over the measured hours (decodes, batch sizes, tokens).
    pub model: crate::llm::backend::llama::ModelWork,
    /// Requests asked within the hours still unanswered at their end (asked ahead), and the
    /// wall seconds their answers took after it: `stats` counts their tokens (a request is
    /// counted when asked, its tokens when answered), `wall_secs` not their time.
    pub ahead: (usize, f64),
    /// Reflections each resident began within the measured hours.
    pub reflections: Vec<u32>,
    /// Residents on clocks of their own (`sim.own_clocks`): the passes run over the measured
    /// hours (0 in lock-step), the steps measured, and the most steps one ran ahead of the
    /// slowest resident.
    pub passes: (u64, u64, u64),
}

/// Reflections each resident has begun so far, by name.
fn reflections_begun(world: &mut World) -> Vec<(String, u32)> {
    let mut q = world.query::<(
        &crate::agent::Identity,
        &crate::cognition::resident::scratch::Scratch,
    )>();
    let mut v: Vec<(String, u32)> = q
        .iter(world)
        .map(|(id, s)| (id.name.clone(), s.reflection.begun))
        .collect();
    v.sort();
    v
}

/// Runs a scenario from `from - warmup_hours` (untimed: the day's planning) and then measures
/// `hours` game hours with the configured (default: local) model.
pub fn bench_day(
    mut sim: SimPlugin,
    from: crate::sim::time::GameTime,
    warmup_hours: f64,
    hours: f64,
) -> DayBench {
    let sec = sim.config.sim.sec_per_step as f64;
    sim.scenario.start = from.plus_secs(-(warmup_hours * 3600.0) as i64);
    let agents = sim.scenario.residents.len();
    let mut app = headless_app(sim);
    let t0 = Instant::now();
    crate::run_steps(&mut app, (warmup_hours * 3600.0 / sec) as u64);
    let warmup_secs = t0.elapsed().as_secs_f64();
    let before = app.world().resource::<Llm>().stats();
    let gate = app.world().resource::<crate::sim::clock::StepGate>();
    let (waited_before, on_before, one_before) =
        (gate.waited, gate.waited_on.clone(), gate.waited_on_one);
    let apart_before = (gate.waited_apart, gate.waited_residents);
    let passes_before = gate.passes;
    let model_before = crate::llm::backend::llama::model_work();
    let reflected_before = reflections_begun(app.world_mut());
    // Nothing between the chunks below needs one step for all: residents on their own clocks
    // run on to the end of the measured hours.
    let end = app.world().resource::<SimClock>().step + (hours * 3600.0 / sec) as u64;
    app.world_mut()
        .resource_mut::<crate::sim::clock::SimPace>()
        .run_ahead_to = Some(end);
    let t = Instant::now();
    // Ten game minutes at a time, with a line on stderr for each, and each game hour's
    // per-purpose table: long runs show their progress, and the first hours, which carry the
    // day's planning, show apart from later ones.
    let total = (hours * 3600.0 / sec) as u64;
    let chunk = ((600.0 / sec) as u64).max(1);
    let per_hour = ((3600.0 / sec) as u64).max(1);
    let hm = |app: &App| app.world().resource::<SimClock>().now.hh_mm();
    let mut done = 0;
    let mut hour_stats = app.world().resource::<Llm>().stats();
    let mut hour_from = hm(&app);
    let mut hour_steps = 0;
    let (mut hour_on, mut hour_one) = (on_before.clone(), one_before);
    let (mut hour_model, mut hour_t) = (model_before, Instant::now());
    let begin = end - total;
    while done < total {
        let n = chunk.min(total - done);
        crate::run_steps(&mut app, n);
        // The slowest may have come on further than asked (to where those ahead stood).
        let now = app.world().resource::<SimClock>().step - begin;
        hour_steps += now - done;
        done = now;
        let now = app.world().resource::<Llm>().stats();
        let chat = now.since(&before).chat_total();
        let a = agents.max(1) as f64 * (done as f64 * sec / 3600.0);
        eprintln!(
            "  {} after {:.0} s wall: so far per agent per game hour {:.1} chat requests, {:.0} tokens; {} retried, {} fail-safe in all",
            hm(&app),
            t.elapsed().as_secs_f64(),
            chat.calls as f64 / a,
            (chat.prompt_tokens + chat.gen_tokens) as f64 / a,
            chat.retries,
            chat.fallbacks
        );
        if hour_steps >= per_hour || done == total {
            let h = hour_steps as f64 * sec / 3600.0;
            eprintln!("  {hour_from}–{}:", hm(&app));
            eprint!("{}", now.since(&hour_stats).per_agent_hour(agents, h));
            let gate = app.world().resource::<crate::sim::clock::StepGate>();
            let on: Vec<String> = waited_since(gate, &hour_on)
                .iter()
                .filter(|(_, s)| *s >= 0.5)
                .map(|(p, s)| format!("{p} {s:.0} s"))
                .collect();
            eprintln!(
                "  waited on: {}; on a single answer {:.0} s",
                on.join(", "),
                (gate.waited_on_one - hour_one).as_secs_f64()
            );
            // What the model ran this hour: how full its batches were, hour by hour.
            let model_now = crate::llm::backend::llama::model_work();
            eprint!(
                "{}",
                model_now
                    .since(&hour_model)
                    .report(hour_t.elapsed().as_secs_f64())
            );
            (hour_model, hour_t) = (model_now, Instant::now());
            (hour_on, hour_one) = (gate.waited_on.clone(), gate.waited_on_one);
            hour_stats = now;
            hour_from = hm(&app);
            hour_steps = 0;
        }
    }
    let wall_secs = t.elapsed().as_secs_f64();
    let model = crate::llm::backend::llama::model_work().since(&model_before);
    let ahead = answer_what_was_asked(app.world_mut());
    let reflections = reflections_begun(app.world_mut())
        .into_iter()
        .map(|(name, n)| {
            let before = reflected_before.iter().find(|(b, _)| *b == name);
            n - before.map_or(0, |(_, b)| (*b).min(n))
        })
        .collect();
    let after = app.world().resource::<Llm>().stats();
    let gate = app.world().resource::<crate::sim::clock::StepGate>();
    let waited = gate.waited - waited_before;
    let waited_on = waited_since(gate, &on_before);
    let waited_on_one = (gate.waited_on_one - one_before).as_secs_f64();
    let passes = (gate.passes - passes_before, total, gate.most_ahead);
    let waited_apart = (gate.waited_apart - apart_before.0).as_secs_f64()
        / (gate.waited_residents - apart_before.1)
            .as_secs_f64()
            .max(1e-9);
    let talk = crate::cognition::talk::report::talk_report(app.world_mut())
        .text(agents, hours + warmup_hours);
    DayBench {
        talk,
        model,
        agents,
        game_hours: hours,
        wall_secs,
        waited_secs: waited.as_secs_f64(),
        waited_on,
        waited_on_one,
        waited_apart,
        stats: after.since(&before),
        warmup_secs,
        ahead,
        reflections,
        passes,
    }
}

/// Waits (no step runs) until every request asked so far is answered, so the measured hours'
/// tokens are those of all they asked however fast the model was (runs of the same day then
/// count the same tokens); the answers are dropped (the run is over). Returns how many were
/// unanswered and the seconds they took.
fn answer_what_was_asked(world: &mut World) -> (usize, f64) {
    let t = Instant::now();
    world.resource_scope(|world, mut llm: Mut<Llm>| {
        let ahead = llm.pending();
        // (A request stuck past every time limit would fail safe long before this.)
        while llm.pending() > 0 && t.elapsed() < std::time::Duration::from_secs(3600) {
            let _ = llm.wait_reply(std::time::Duration::from_millis(200), world.entities());
        }
        (ahead, t.elapsed().as_secs_f64())
    })
}

/// Seconds waited on each purpose since `before` (the gate's `waited_on` then), the most
/// first, those with none left out.
fn waited_since(
    gate: &crate::sim::clock::StepGate,
    before: &std::collections::BTreeMap<String, std::time::Duration>,
) -> Vec<(String, f64)> {
    let mut v: Vec<(String, f64)> = gate
        .waited_on
        .iter()
        .map(|(p, d)| {
            let was = before.get(p).copied().unwrap_or_default();
            (p.clone(), d.saturating_sub(was).as_secs_f64())
        })
        .filter(|(_, s)| *s > 0.0)
        .collect();
    v.sort_by(|a, b| b.1.total_cmp(&a.1));
    v
}

impl DayBench {
    /// The requests asked ahead that were answered after the hours (nothing when none was).
    pub fn ahead_line(&self) -> String {
        match self.ahead {
            (0, _) => String::new(),
            (n, secs) => format!(
                "  {n} request(s) asked within the hours were still unanswered at their end (asked ahead), answered in {secs:.0} s more: their tokens are counted above, their time is not\n"
            ),
        }
    }

    /// Reflections begun per resident per game day over the measured hours (the paper's
    /// residents reflect "roughly two or three times a day").
    pub fn reflections_line(&self) -> String {
        crate::memory::reflect::per_day_words(&self.reflections, self.game_hours)
            .map(|w| {
                format!(
                    "  reflections begun per resident per game day: {w} (the paper's residents: about two or three)\n"
                )
            })
            .unwrap_or_default()
    }

    /// "residents on clocks of their own: 812 passes, …" (nothing in lock-step).
    pub fn passes_line(&self) -> String {
        if self.passes.0 == 0 {
            return String::new();
        }
        format!(
            "  residents on clocks of their own: {} passes of the step ({:.2} per step of the slowest), one at most {} steps ahead of the slowest\n",
            self.passes.0,
            self.passes.0 as f64 / self.passes.1.max(1) as f64,
            self.passes.2
        )
    }

    /// "game time waited on: converse 120 s (31%), …; on a single answer 40% of the wait".
    pub fn waited_on_line(&self) -> String {
        let total = self.waited_secs.max(1e-9);
        let parts: Vec<String> = self
            .waited_on
            .iter()
            .map(|(p, s)| format!("{p} {s:.0} s ({:.0}%)", 100.0 * s / total))
            .collect();
        format!(
            "  game time waited on (each missing answer an equal share of the wait): {}; on a single answer {:.0} s ({:.0}% of the wait); while it waited, {:.0}% of the residents were apart from every answer missing (none of theirs missing, beyond sight and a step of all whose were)\n",
            if parts.is_empty() {
                "nothing".into()
            } else {
                parts.join(", ")
            },
            self.waited_on_one,
            100.0 * self.waited_on_one / total,
            100.0 * self.waited_apart
        )
    }
}

/// Headless steps per second with the scenario's residents on their routine.
pub fn bench_steps(sim: SimPlugin, steps: u64, rounds: u32) -> Vec<f64> {
    (0..rounds)
        .map(|_| {
            let mut app = headless_app(sim.clone());
            crate::run_steps(&mut app, 1); // start-up outside the timing
            let t = Instant::now();
            crate::run_steps(&mut app, steps);
            steps as f64 / t.elapsed().as_secs_f64()
        })
        .collect()
}
