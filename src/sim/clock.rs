//! The simulation clock and its pacing. One step is `sec_per_step` game seconds (10 by
//! default); the pace decides how many steps run per real second (paused, 1×, 2×, 4×, …, or as
//! fast as possible). Steps run in the [`SimStep`](super::SimStep) schedule, driven from
//! `Update` by [`drive_steps`], so a frame never waits on anything but whole, bounded steps.

use super::time::GameTime;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// Game date-time and step counter.
#[derive(Resource, Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimClock {
    /// When the simulation began.
    pub start: GameTime,
    /// Now.
    pub now: GameTime,
    /// Steps done since the start.
    pub step: u64,
    /// Game seconds per step.
    pub sec_per_step: u32,
}

impl SimClock {
    /// A clock at `start`.
    pub fn new(start: GameTime, sec_per_step: u32) -> Self {
        Self {
            start,
            now: start,
            step: 0,
            sec_per_step: sec_per_step.max(1),
        }
    }

    /// Advances one step.
    pub fn advance(&mut self) {
        self.step += 1;
        self.now = self.now.plus_secs(self.sec_per_step as i64);
    }

    /// Steps in one game day.
    pub fn steps_per_day(&self) -> u64 {
        86_400 / self.sec_per_step as u64
    }

    /// The game time after `n` more steps.
    pub fn after_steps(&self, n: u64) -> GameTime {
        self.now.plus_secs(n as i64 * self.sec_per_step as i64)
    }
}

/// How fast the simulation runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Speed {
    /// A multiple of the base rate (1×, 2×, 4×, …).
    Times(u32),
    /// As many steps as fit in the frame budget.
    Max,
}

impl Speed {
    /// The next faster speed.
    pub fn faster(self) -> Self {
        match self {
            Speed::Times(n) if n >= 64 => Speed::Max,
            Speed::Times(n) => Speed::Times(n * 2),
            Speed::Max => Speed::Max,
        }
    }

    /// The next slower speed.
    pub fn slower(self) -> Self {
        match self {
            Speed::Max => Speed::Times(64),
            Speed::Times(n) => Speed::Times((n / 2).max(1)),
        }
    }

    /// "4x" or "max".
    pub fn label(self) -> String {
        match self {
            Speed::Times(n) => format!("{n}x"),
            Speed::Max => "max".into(),
        }
    }
}

/// Pacing of steps against real time.
#[derive(Resource, Debug, Clone)]
pub struct SimPace {
    /// No steps run while paused (the frame goes on).
    pub paused: bool,
    /// The speed.
    pub speed: Speed,
    /// Steps per real second at 1×.
    pub steps_per_second_at_1x: f32,
    /// Real time a frame may spend on steps at the fastest speeds.
    pub frame_budget: Duration,
    /// Fraction of the next step already elapsed (0..1), for drawing motion between tiles.
    pub progress: f32,
    /// Steps requested explicitly (tests, headless runs, "run N"); they run regardless of pause.
    pub requested: u64,
    /// Most requested steps run in one frame, so a headless run can report progress.
    pub max_requested_per_frame: u64,
    /// When a step must wait for answers, block the frame until they come (headless runs,
    /// which draw nothing) instead of trying again next frame (the window).
    pub block_on_answers: bool,
    /// Only requested steps ever run (headless runs: `run N` moves the clock, `resume` and
    /// `speed` do not set it running free).
    pub requested_only: bool,
    /// Once set (by a signal, in `simulacra run`), a step blocked on answers stops waiting and
    /// is left unrun, so the run can end, save and report what it did.
    pub stop: Option<&'static std::sync::atomic::AtomicBool>,
    /// Requested steps run on clocks of their own ([`OwnStep`]): where the gate can plan
    /// passes ([`StepGate::plan`]), residents whose answers are in and who are apart from
    /// everyone still waiting run ahead of them, up to the end of what was requested (or
    /// [`run_ahead_to`](Self::run_ahead_to)). Everyone is at one step again when the requested
    /// steps are done.
    pub own_clocks: bool,
    /// How far ahead residents on their own clocks may run past the requested steps (a step
    /// number): a run in chunks with nothing between them that needs one step for all (`bench
    /// day`) lets them run on to its end.
    pub run_ahead_to: Option<u64>,
}

impl Default for SimPace {
    fn default() -> Self {
        Self {
            paused: false,
            speed: Speed::Times(1),
            steps_per_second_at_1x: 4.0,
            frame_budget: Duration::from_millis(12),
            progress: 0.0,
            requested: 0,
            max_requested_per_frame: 1000,
            block_on_answers: false,
            requested_only: false,
            stop: None,
            own_clocks: false,
            run_ahead_to: None,
        }
    }
}

impl SimPace {
    /// Whether [`SimPace::stop`] is set.
    pub fn stopping(&self) -> bool {
        self.stop
            .is_some_and(|s| s.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// A pace that runs only requested steps (headless runs and tests).
    pub fn manual() -> Self {
        Self {
            paused: true,
            ..default()
        }
    }
}

/// What decides whether the next step may run: cognition installs a check for answers the
/// step needs and a way to fetch answers that have arrived (the clock itself knows nothing of
/// the LLM). The HUD and the headless summary read how much time waited.
#[derive(Resource, Default)]
pub struct StepGate {
    /// Answers still missing that step `n` needs (`None`: steps never wait), kept in
    /// [`Awaited`] between the rounds of one check.
    pub blocked_by: Option<fn(&mut World, u64, &mut Awaited) -> usize>,
    /// Takes answers that have arrived, waiting up to the given time for the first, and notes
    /// their keys in [`Awaited::arrived`]; returns how many were taken.
    pub pump: Option<fn(&mut World, Option<Duration>, &mut Awaited) -> usize>,
    /// Sends the requests a step made (run after every step: they leave together, not one by
    /// one as they are made).
    pub send: Option<fn(&mut World)>,
    /// Answers the current step is waiting for (0 when it is not waiting).
    pub waiting: usize,
    /// Real time spent blocked on answers (headless runs).
    pub waited: Duration,
    /// Steps that had to wait at least once.
    pub waited_steps: u64,
    /// Times a blocked step woke to take the answers that had arrived (headless runs).
    pub rounds: u64,
    /// Real time blocked, shared out among the purposes of the answers missing while it
    /// passed (each missing answer an equal share), by purpose.
    pub waited_on: std::collections::BTreeMap<String, Duration>,
    /// Real time blocked while a single answer was missing (the town waiting on one request).
    pub waited_on_one: Duration,
    /// Real time blocked, times the residents then apart from every answer missing
    /// ([`Awaited::apart`]), and times all residents: their ratio is the share of the town the
    /// wait did not concern (what residents on clocks of their own could use at most).
    pub waited_apart: Duration,
    pub waited_residents: Duration,
    /// Plans the next pass of residents on their own clocks ([`SimPace::own_clocks`]): the
    /// step it runs and who is elsewhere meanwhile, or `None` when nobody may run before the
    /// given step (the horizon) until more answers come. It marks those who run with their next
    /// [`OwnStep`].
    pub plan: Option<fn(&mut World, u64) -> Option<Pass>>,
    /// Whether a step ran for everyone at once in this process (the first always does).
    pub stepped: bool,
    /// Passes run on own clocks, and the most steps a pass ran ahead of the slowest resident.
    pub passes: u64,
    pub most_ahead: u64,
}

/// One pass of residents on their own clocks: the whole step schedule run at `step` with
/// `elsewhere` hidden from it (by [`Elsewhere`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Pass {
    pub step: u64,
    pub elsewhere: Vec<Entity>,
}

/// Steps an entity on its own clock has done (its next step), where residents run ahead of
/// each other ([`SimPace::own_clocks`]); the [`SimClock`] between passes is the slowest's.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnStep(pub u64);

/// Hidden from every query while a pass of others runs: a disabling component (registered in
/// the sim plugin), put on and taken off around each pass, never there between passes.
#[derive(Component, Debug, Clone, Copy, Default)]
pub struct Elsewhere;

impl StepGate {
    /// Lays `spent` at the doors of the answers still missing in `awaited`, by the labels its
    /// owner gave them (nothing where it gave none).
    fn blame(&mut self, awaited: &Awaited, spent: Duration) {
        let n = awaited.keys.len();
        if n == 0 || awaited.labels.is_empty() {
            return;
        }
        self.waited_apart += spent.mul_f64(awaited.apart as f64);
        self.waited_residents += spent.mul_f64(awaited.residents as f64);
        if n == 1 {
            self.waited_on_one += spent;
        }
        for (name, missing) in awaited.labels.iter().zip(&awaited.missing) {
            if *missing > 0 {
                *self.waited_on.entry(name.clone()).or_default() +=
                    spent.mul_f64(*missing as f64 / n as f64);
            }
        }
    }
}

/// What one gate check is still waiting for. Between the rounds of a check no system runs and
/// answers only arrive, so the first round looks at every resident's work and lists what is
/// missing, and later rounds strike off what arrived (a town of a thousand has tens of
/// thousands of requests in flight, and a round comes with nearly every answer).
#[derive(Debug, Default)]
pub struct Awaited {
    /// Whether the first round has looked at everything.
    pub listed: bool,
    /// What is missing: (resident, request) keys of the gate's owner, each with what it is
    /// for (an index into `labels`).
    pub keys: std::collections::HashMap<(Entity, u64), usize>,
    /// What the pump took since the last round, by the same keys.
    pub arrived: Vec<(Entity, u64)>,
    /// What the missing answers are for (the owner's labels, each once: purposes);
    /// `missing` beside it counts those still missing of each, kept by the owner as it
    /// strikes keys off, so a round's blame costs nothing per key.
    pub labels: Vec<String>,
    /// Missing answers by label (the same order as `labels`).
    pub missing: Vec<usize>,
    /// Of the owner's `residents`, those the missing answers do not concern when the wait
    /// began: none of theirs is missing, and none is near one whose is (the owner's measure).
    pub apart: usize,
    pub residents: usize,
}

/// Whether the next step may run now; in blocking mode waits until it may.
fn gate_open(world: &mut World) -> bool {
    let (Some(blocked_by), pump) = world
        .get_resource::<StepGate>()
        .map(|g| (g.blocked_by, g.pump))
        .unwrap_or((None, None))
    else {
        return true;
    };
    let step = world.resource::<SimClock>().step;
    let mut counted = false;
    let mut awaited = Awaited::default();
    loop {
        let n = blocked_by(world, step, &mut awaited);
        world.resource_mut::<StepGate>().waiting = n;
        if n == 0 {
            return true;
        }
        if !counted {
            counted = true;
            world.resource_mut::<StepGate>().waited_steps += 1;
        }
        let Some(pump) = pump else { return false };
        if pump(world, None, &mut awaited) > 0 {
            continue;
        }
        if !wait_round(world, pump, &mut awaited) {
            return false;
        }
    }
}

/// One round of waiting for answers where the pace blocks (headless): up to 200 ms for the
/// first, the time laid at the doors of what was missing. `false` where the pace does not block
/// or is stopping.
fn wait_round(
    world: &mut World,
    pump: fn(&mut World, Option<Duration>, &mut Awaited) -> usize,
    awaited: &mut Awaited,
) -> bool {
    if !world.resource::<SimPace>().block_on_answers || world.resource::<SimPace>().stopping() {
        return false;
    }
    let t = Instant::now();
    pump(world, Some(Duration::from_millis(200)), awaited);
    let spent = t.elapsed();
    // Blamed on what was missing before this round's answers are struck off.
    let mut g = world.resource_mut::<StepGate>();
    g.waited += spent;
    g.rounds += 1;
    g.blame(awaited, spent);
    true
}

/// No step runs while this resource exists (a replay shows a recording instead).
#[derive(Resource, Debug, Clone, Copy, Default)]
pub struct Frozen;

/// Runs the steps due this frame: requested ones first, then those the pace calls for. A step
/// that needs answers still missing waits (see [`StepGate`]); the frame itself never does,
/// unless the pace says to block (headless runs).
pub fn drive_steps(world: &mut World) {
    if world.contains_resource::<Frozen>() {
        return;
    }
    let dt = world.resource::<Time<Real>>().delta_secs();
    let mut pace = world.resource_mut::<SimPace>();
    let requested = pace.requested.min(pace.max_requested_per_frame);
    let budget = pace.frame_budget;
    let (mut due, until_budget) = if pace.paused || pace.requested_only {
        (0u64, false)
    } else {
        match pace.speed {
            Speed::Max => (u64::MAX, true),
            Speed::Times(n) => {
                let acc = pace.progress + dt.min(0.25) * pace.steps_per_second_at_1x * n as f32;
                let whole = acc.floor();
                pace.progress = acc - whole;
                (whole as u64, true)
            }
        }
    };
    if matches!(pace.speed, Speed::Max) || pace.paused {
        pace.progress = 0.0;
    }
    let started = Instant::now();
    if requested > 0 && own_clocks_ready(world) {
        own_steps(world, requested);
        return;
    }
    for _ in 0..requested {
        if !gate_open(world) {
            return;
        }
        world.resource_mut::<SimPace>().requested -= 1;
        run_step(world);
        if !world.resource::<SimPace>().block_on_answers && started.elapsed() >= budget * 4 {
            return; // the window stays responsive while skipping ahead
        }
    }
    while due > 0 {
        if !gate_open(world) {
            // Waiting for the model: hold the drawn motion at the tile reached.
            world.resource_mut::<SimPace>().progress =
                1.0_f32.min(world.resource::<SimPace>().progress);
            break;
        }
        run_step(world);
        due -= 1;
        if until_budget && started.elapsed() >= budget {
            // Behind: drop the backlog rather than spiral (the game slows, it never freezes).
            world.resource_mut::<SimPace>().progress = 0.0;
            break;
        }
    }
}

/// One step, then what it asked for is sent.
fn run_step(world: &mut World) {
    world.run_schedule(super::SimStep);
    if let Some(send) = world.get_resource::<StepGate>().and_then(|g| g.send) {
        send(world);
    }
    if let Some(mut g) = world.get_resource_mut::<StepGate>()
        && !g.stepped
    {
        g.stepped = true;
    }
}

/// Whether requested steps run on own clocks now: asked for, a gate that plans passes, and a
/// first step already run for everyone at once.
fn own_clocks_ready(world: &World) -> bool {
    world.resource::<SimPace>().own_clocks
        && world
            .get_resource::<StepGate>()
            .is_some_and(|g| g.plan.is_some() && g.stepped)
}

/// Runs passes until the slowest resident has done `requested` more steps (or, not blocking, until
/// nobody may run now). Between passes the clock is the slowest's.
fn own_steps(world: &mut World, requested: u64) {
    let target = world.resource::<SimClock>().step + requested;
    let horizon = world
        .resource::<SimPace>()
        .run_ahead_to
        .map_or(target, |h| h.max(target));
    while world.resource::<SimClock>().step < target {
        let before = world.resource::<SimClock>().step;
        let ran = next_pass(world, horizon);
        let after = world.resource::<SimClock>().step;
        let mut pace = world.resource_mut::<SimPace>();
        pace.requested = pace.requested.saturating_sub(after - before);
        if !ran {
            return;
        }
    }
}

/// Plans and runs the next pass, waiting for answers while nobody may run (as [`gate_open`]
/// does for a whole step). Returns whether a pass ran.
fn next_pass(world: &mut World, horizon: u64) -> bool {
    let (Some(plan), blocked_by, pump) = world
        .get_resource::<StepGate>()
        .map(|g| (g.plan, g.blocked_by, g.pump))
        .unwrap_or((None, None, None))
    else {
        return false;
    };
    let mut awaited = Awaited::default();
    let mut counted = false;
    loop {
        if let Some(pass) = plan(world, horizon) {
            world.resource_mut::<StepGate>().waiting = 0;
            run_pass(world, pass);
            return true;
        }
        let frontier = world.resource::<SimClock>().step;
        let n = blocked_by.map_or(0, |b| b(world, frontier, &mut awaited));
        world.resource_mut::<StepGate>().waiting = n;
        if !counted {
            counted = true;
            world.resource_mut::<StepGate>().waited_steps += 1;
        }
        let Some(pump) = pump else { return false };
        if pump(world, None, &mut awaited) > 0 {
            continue;
        }
        if n == 0 || !wait_round(world, pump, &mut awaited) {
            return false;
        }
    }
}

/// Runs the step schedule at the pass's step with the others elsewhere, then sets the clock to
/// the slowest resident's step.
fn run_pass(world: &mut World, pass: Pass) {
    let frontier = world.resource::<SimClock>().clone();
    for e in &pass.elsewhere {
        if let Ok(mut e) = world.get_entity_mut(*e) {
            e.insert(Elsewhere);
        }
    }
    {
        let mut clock = world.resource_mut::<SimClock>();
        clock.step = pass.step;
        clock.now = frontier.after_steps(pass.step - frontier.step);
    }
    run_step(world);
    for e in &pass.elsewhere {
        if let Ok(mut e) = world.get_entity_mut(*e) {
            e.remove::<Elsewhere>();
        }
    }
    let slowest = world
        .query::<&OwnStep>()
        .iter(world)
        .map(|s| s.0)
        .min()
        .unwrap_or(pass.step + 1)
        .max(frontier.step);
    let mut g = world.resource_mut::<StepGate>();
    g.passes += 1;
    g.most_ahead = g.most_ahead.max(pass.step.saturating_sub(frontier.step));
    let mut clock = world.resource_mut::<SimClock>();
    clock.step = slowest;
    clock.now = frontier.after_steps(slowest - frontier.step);
}

/// Advances the clock at the end of each step.
pub fn advance_clock(mut clock: ResMut<SimClock>) {
    clock.advance();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_and_days() {
        let mut c = SimClock::new(GameTime::parse("2023-02-13 00:00").unwrap(), 10);
        assert_eq!(c.steps_per_day(), 8640);
        for _ in 0..8640 {
            c.advance();
        }
        assert_eq!(c.now, GameTime::parse("2023-02-14 00:00").unwrap());
        assert_eq!(c.step, 8640);
        assert_eq!(
            c.after_steps(6),
            GameTime::parse("2023-02-14 00:01").unwrap()
        );
    }

    #[test]
    fn speeds_step_up_and_down() {
        assert_eq!(Speed::Times(1).faster(), Speed::Times(2));
        assert_eq!(Speed::Times(64).faster(), Speed::Max);
        assert_eq!(Speed::Max.slower(), Speed::Times(64));
        assert_eq!(Speed::Times(1).slower(), Speed::Times(1));
        assert_eq!(Speed::Times(8).label(), "8x");
    }
}
