//! The town a lab runs in: the headless app opened from the run's last checkpoint (or its
//! scenario), run in pieces with checkpoints and a progress line, its sittings' costs kept as it
//! goes; several towns at once on one shared model runtime.

use crate::agent::{Identity, Resident};
use crate::config::GameConfig;
use crate::lab::report;
use crate::lab::report::stats::clock_words;
use crate::lab::runs::folder::Folder;
use crate::llm::Llm;
use crate::sim::clock::SimClock;
use crate::{SimPlugin, run_steps};
use bevy::prelude::*;
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Applies `--set key=value` assignments to a config.
pub fn apply_sets(config: &mut GameConfig, sets: &[String]) -> Result<(), String> {
    for s in sets {
        config.set(s)?;
    }
    Ok(())
}

/// A town the lab runs: the headless app, with checkpoints in the run's folder.
pub struct Town {
    /// The app.
    pub app: App,
    /// Where checkpoints go.
    pub saves: PathBuf,
    /// Whether it came back from a checkpoint.
    pub resumed: bool,
}

/// Opens a town: from the checkpoint in `saves` if there is one (a resumed run), else `sim`.
/// Checkpoints are written by [`Town::checkpoint`] only (no autosaves).
pub fn open_town(sim: SimPlugin, saves: &Path) -> Result<Town, String> {
    open_town_on(sim, saves, None)
}

/// [`open_town`], its requests going to `llm` when given (a handle on a runtime that other
/// towns share: see [`side_by_side`]).
pub fn open_town_on(mut sim: SimPlugin, saves: &Path, llm: Option<Llm>) -> Result<Town, String> {
    let checkpoint = saves.join("checkpoint");
    // A run stopped while its folder was being finished: its last checkpoint had already
    // become the kept `town/` beside the saves. It is the checkpoint again.
    if let Some(town) = saves.parent().map(|p| p.join("town"))
        && town.join("meta.ron").exists()
        && !checkpoint.join("meta.ron").exists()
    {
        std::fs::create_dir_all(saves).map_err(|e| format!("{}: {e}", saves.display()))?;
        std::fs::rename(&town, &checkpoint)
            .map_err(|e| format!("{} → {}: {e}", town.display(), checkpoint.display()))?;
    }
    let resumed = checkpoint.join("meta.ron").exists();
    sim.config.saves.dir = saves.to_string_lossy().into();
    sim.config.saves.autosave_minutes = 0;
    if resumed {
        let meta = crate::save::disk::read_save(&checkpoint)?.meta;
        if meta.scenario != sim.scenario.name {
            return Err(format!(
                "{}: the unfinished run is of {:?}, not {:?}: resume it with its own scenario",
                checkpoint.display(),
                meta.scenario,
                sim.scenario.name
            ));
        }
        sim = SimPlugin::from_save(&checkpoint, sim.config.clone())?;
        sim.config.saves.dir = saves.to_string_lossy().into();
        sim.config.saves.autosave_minutes = 0;
    }
    let mut app = crate::headless_app_on(sim, llm);
    app.update(); // spawn the residents (and apply a checkpoint)
    Ok(Town {
        app,
        saves: saves.to_path_buf(),
        resumed,
    })
}

impl Town {
    /// The clock.
    pub fn clock(&self) -> SimClock {
        self.app.world().resource::<SimClock>().clone()
    }

    /// Writes the checkpoint a resumed run goes on from.
    pub fn checkpoint(&mut self) -> Result<(), String> {
        crate::save::save_named(self.app.world_mut(), "checkpoint").map(|_| ())
    }

    /// Residents by name, sorted.
    pub fn residents(&mut self) -> Vec<(String, Entity)> {
        residents(self.app.world_mut())
    }

    /// Runs until `end` (a step), calling `each(world, true)` at every game hour and
    /// checkpointing after it; draws a progress line with an ETA. Between hours, once
    /// [`checkpoint_every`] of wall time has passed since the last checkpoint, it calls
    /// `each(world, false)` (the run's data written as of now) and checkpoints too, at the end of
    /// a piece of 5 game minutes: a stop then loses at most that much running, not a game hour
    /// (five 25-resident towns side by side take about 40 minutes over their planning hour). A
    /// save takes in the answers already arrived, which wait for their due step as before, and
    /// changes nothing else, so where the extra checkpoints fall (by the wall clock) does not
    /// change what the run gives.
    pub fn run_until(
        &mut self,
        end: u64,
        label: &str,
        mut each: impl FnMut(&mut World, bool) -> Result<(), String>,
    ) -> Result<(), String> {
        let clock = self.clock();
        let per_hour = 3600 / clock.sec_per_step as u64;
        let begin = clock.step;
        let started = Instant::now();
        let every = checkpoint_every();
        let mut saved = Instant::now();
        let mut progress = Progress::new(label);
        let total = work(&clock, begin, end);
        let mut done = 0.0;
        while self.clock().step < end {
            let step = self.clock().step;
            let next_hour = (step / per_hour + 1) * per_hour;
            let to = next_hour.min(end);
            // In pieces of 5 game minutes, so the progress line moves. Residents on their own
            // clocks may run on to the hour's end (its probes need them all at one step), and
            // are brought to one step before a checkpoint between.
            self.app
                .world_mut()
                .resource_mut::<crate::sim::clock::SimPace>()
                .run_ahead_to = Some(to);
            let mut at = step;
            while at < to {
                let n = (30.min(to - at)).max(1);
                run_steps(&mut self.app, n);
                let now = self.clock();
                done += work(&now, at, now.step);
                at = now.step;
                progress.draw(done, total, started, &now.now.to_string());
                if at < to && saved.elapsed() >= every {
                    crate::run_to_one_step(&mut self.app);
                    let now = self.clock();
                    done += work(&now, at, now.step);
                    at = now.step;
                    each(self.app.world_mut(), false)?;
                    self.checkpoint()?;
                    saved = Instant::now();
                }
            }
            if self.clock().step.is_multiple_of(per_hour) || self.clock().step >= end {
                each(self.app.world_mut(), true)?;
                self.checkpoint()?;
                saved = Instant::now();
            }
        }
        progress.end();
        Ok(())
    }
}

/// A stretch of a town's game hours run in one sitting, whose cost is kept as it goes: at each
/// checkpoint it is put into the run's data and written before it, so that a run stopped and
/// resumed keeps each sitting's cost up to its last checkpoint (what a stop cut short is run
/// again and counted once, even a stop between the data's write and its checkpoint:
/// [`report::Cost::at_checkpoint`]).
pub struct Sitting {
    before: crate::llm::metrics::LlmStats,
    started: Instant,
    from: u64,
    agents: usize,
    resumed: bool,
}

impl Sitting {
    /// A sitting beginning now; `resumed`: the run had stopped before it.
    pub fn begin(town: &mut Town, resumed: bool) -> Self {
        Self {
            before: report::stats(town.app.world()),
            started: Instant::now(),
            from: town.clock().step,
            agents: town.residents().len(),
            resumed,
        }
    }

    /// What it has cost up to the world's present step.
    pub fn cost(&self, world: &World) -> report::Cost {
        let c = world.resource::<SimClock>();
        let h = c.step.saturating_sub(self.from) as f64 * c.sec_per_step as f64 / 3600.0;
        report::Cost::of(
            &format!(
                "{} game hours of the town{}",
                report::stats::count(h),
                if self.resumed { " (resumed)" } else { "" }
            ),
            &report::stats(world).since(&self.before),
            self.started.elapsed().as_secs_f64(),
            self.agents,
            h,
        )
    }

    /// Runs `town` to `end` (see [`Town::run_until`]); at every checkpoint the cost so far goes
    /// into `data`'s sitting (`slot`, with the cost it replaces: [`report::Cost::keeping`]), and
    /// `data` is written to `file` before it.
    #[allow(clippy::too_many_arguments)]
    pub fn run<T: Serialize>(
        &self,
        town: &mut Town,
        end: u64,
        label: &str,
        folder: &Folder,
        file: &str,
        data: &mut T,
        slot: impl Fn(&mut T) -> &mut Option<report::Cost>,
    ) -> Result<(), String> {
        town.run_until(end, label, |world, _| {
            let step = world.resource::<SimClock>().step;
            let kept = slot(data);
            *kept = Some(self.cost(world).keeping(step, kept.take()));
            folder.write(file, data)
        })
    }
}

/// The residents of a world by name, sorted.
pub fn residents(w: &mut World) -> Vec<(String, Entity)> {
    let mut q = w.query_filtered::<(Entity, &Identity), With<Resident>>();
    let mut v: Vec<(String, Entity)> = q.iter(w).map(|(e, i)| (i.name.clone(), e)).collect();
    v.sort();
    v
}

/// How much of a run's work the steps `from..to` are, for the progress line's ETA: a step
/// between 06:00 and 23:00 counts one, a night step a hundredth (residents asleep hardly ask the
/// model: five 25-resident towns ran a night at about a wall minute a game hour, an afternoon at
/// one to three wall minutes a game minute). `clock` places the steps in the day.
pub fn work(clock: &SimClock, from: u64, to: u64) -> f64 {
    let sps = clock.sec_per_step as i64;
    (from..to)
        .map(|s| {
            let t = clock.now.plus_secs((s as i64 - clock.step as i64) * sps);
            if (6 * 60..23 * 60).contains(&t.minute_of_day()) {
                1.0
            } else {
                0.01
            }
        })
        .sum()
}

/// A progress line on stderr with an ETA (at most ten redraws a second).
pub struct Progress {
    label: String,
    drawn: Option<Instant>,
}

impl Progress {
    /// A new line.
    pub fn new(label: &str) -> Self {
        Self {
            label: label.into(),
            drawn: None,
        }
    }

    /// Draws `done` of `total` since `started`.
    pub fn draw(&mut self, done: f64, total: f64, started: Instant, what: &str) {
        if self
            .drawn
            .is_some_and(|d| d.elapsed().as_millis() < 100 && done < total)
        {
            return;
        }
        let lines = LINES.load(std::sync::atomic::Ordering::Relaxed);
        if lines
            && self
                .drawn
                .is_some_and(|d| d.elapsed().as_secs() < 60 && done < total)
        {
            return;
        }
        self.drawn = Some(Instant::now());
        let secs = started.elapsed().as_secs_f64();
        let eta = if done > 0.0 {
            secs / done * (total - done).max(0.0)
        } else {
            f64::NAN
        };
        let pct = if total > 0.0 {
            done / total * 100.0
        } else {
            100.0
        };
        let mut err = std::io::stderr();
        let (start, end) = if lines { ("", "\n") } else { ("\r", "      ") };
        let _ = write!(
            err,
            "{start}{}: {pct:>5.1}% | {} elapsed | ETA {} | {what}{end}",
            self.label,
            clock_words(secs),
            if eta.is_finite() {
                clock_words(eta)
            } else {
                "…".into()
            }
        );
        let _ = err.flush();
    }

    /// Ends the line.
    pub fn end(&mut self) {
        if self.drawn.is_some() && !LINES.load(std::sync::atomic::Ordering::Relaxed) {
            eprintln!();
        }
    }
}

/// Whether progress is written a line a minute (towns side by side) instead of one line
/// redrawn in place.
static LINES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Wall seconds between a running town's checkpoints besides its hourly ones (`--checkpoint-minutes`).
static CHECKPOINT_SECS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(600);

/// Sets the wall time between checkpoints within a game hour (0: at every piece of 5 game
/// minutes) for the labs this process runs.
pub fn set_checkpoint_every(every: std::time::Duration) {
    CHECKPOINT_SECS.store(every.as_secs(), std::sync::atomic::Ordering::Relaxed);
}

/// The wall time between checkpoints within a game hour (10 minutes unless set).
pub fn checkpoint_every() -> std::time::Duration {
    std::time::Duration::from_secs(CHECKPOINT_SECS.load(std::sync::atomic::Ordering::Relaxed))
}

/// Runs each of `towns` with `run`: one after another, or (`together`) all at once, each on its
/// own thread with its own handle on one shared model runtime, so that the model decodes the
/// towns' requests in the same batches (a town alone leaves most of a batch empty while its
/// residents wait on each other). Each town still steps only on its own answers, and with the
/// embedded model's `batch_invariant` (the default) an answer does not depend on what shares
/// its batch: a town side by side is bit for bit the town alone. Results in the towns' order;
/// the first error, after every town has stopped.
pub fn side_by_side<K: Send, T: Send>(
    towns: Vec<(K, SimPlugin)>,
    together: bool,
    run: impl Fn(K, SimPlugin, Option<Llm>) -> Result<T, String> + Sync,
) -> Result<Vec<T>, String> {
    if !together || towns.len() < 2 {
        return towns.into_iter().map(|(k, t)| run(k, t, None)).collect();
    }
    let mut config = towns[0].1.config.llm.clone();
    config.use_all_cores();
    let shared = crate::llm::runtime::LlmRuntime::start(&config);
    LINES.store(true, std::sync::atomic::Ordering::Relaxed);
    let results: Vec<Result<T, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = towns
            .into_iter()
            .map(|(k, t)| {
                let llm = Llm::from_runtime(shared.client());
                let run = &run;
                s.spawn(move || run(k, t, Some(llm)))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("a town's thread panicked".into()))
            })
            .collect()
    });
    LINES.store(false, std::sync::atomic::Ordering::Relaxed);
    results.into_iter().collect()
}

/// A town's name in progress lines: "town" alone, "town 3" for the sub-folder `seed-3/` of a
/// run of several.
pub fn town_label(sub: &str) -> String {
    match sub.trim_end_matches('/').strip_prefix("seed-") {
        Some(n) => format!("town {n}"),
        None => "town".into(),
    }
}

/// Looks up residents by name (case-insensitive, a first name alone when it is unique).
pub fn find_residents(
    all: &[(String, Entity)],
    wanted: &[String],
) -> Result<Vec<(String, Entity)>, String> {
    if wanted.is_empty() {
        return Ok(all.to_vec());
    }
    wanted
        .iter()
        .map(|w| {
            let lw = w.trim().to_lowercase();
            let hits: Vec<&(String, Entity)> = all
                .iter()
                .filter(|(n, _)| {
                    let ln = n.to_lowercase();
                    ln == lw || ln.split_whitespace().next() == Some(lw.as_str())
                })
                .collect();
            match hits.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(format!(
                    "--residents: no resident named {w:?} in this town; its residents: {}",
                    all.iter()
                        .map(|(n, _)| n.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )),
                _ => Err(format!("--residents: {w:?} names more than one resident")),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::time::GameTime;

    #[test]
    fn the_progress_counts_nights_at_a_hundredth() {
        // A day from midnight in 10-second steps: 17 waking hours and 7 night hours.
        let mut clock = SimClock::new(GameTime::from_ymd_hms(2023, 2, 13, 0, 0, 0), 10);
        let day = clock.steps_per_day();
        let whole = work(&clock, 0, day);
        assert!((whole - (17.0 * 360.0 + 7.0 * 3.6)).abs() < 1e-6, "{whole}");
        // Midnight to 06:00 is a sixth of an hour's worth of waking steps; counted from a later
        // present, the same steps weigh the same.
        assert!((work(&clock, 0, 6 * 360) - 21.6).abs() < 1e-6);
        for _ in 0..100 {
            clock.advance();
        }
        assert!((work(&clock, 0, day) - whole).abs() < 1e-6);
        assert!((work(&clock, 6 * 360, 7 * 360) - 360.0).abs() < 1e-6);
    }
}
