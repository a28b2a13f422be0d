//! `play` (the window on a scenario or a save) and `replay` (a save's recording in the window,
//! without the model).

use super::{InspectTab, PlayArgs, ReplayArgs, fail};
use crate::SimPlugin;
use crate::config::GameConfig;
use crate::game::PlayOptions;
use crate::game::panels::inspect::Tab;
use crate::llm::config::LlmConfig;

/// `play`: opens the window on the world selected.
pub(super) fn play(args: &PlayArgs) -> i32 {
    match args.world.load() {
        Ok(mut sim) => {
            // The window's own pacing (a living town while the model plans).
            sim.config.cognition.pacing = sim.config.cognition.play_pacing;
            crate::game::run_game(sim, &args.options(), None)
        }
        Err(e) => fail(e),
    }
}

impl PlayArgs {
    /// What the window takes of these options (all but the world).
    fn options(&self) -> PlayOptions {
        PlayOptions {
            screenshot: self.screenshot.clone(),
            frames: self.frames,
            speed: self.speed,
            commands: self.commands.clone(),
            skip_steps: self.skip_steps,
            select: self.select.clone(),
            inspect: self.inspect.map(InspectTab::tab),
            show_help: self.show_help,
            follow: self.follow.clone(),
            frame_bench: None,
        }
    }
}

impl InspectTab {
    /// The inspector's page.
    fn tab(self) -> Tab {
        match self {
            InspectTab::Day => Tab::Day,
            InspectTab::Memory => Tab::Memory,
            InspectTab::Places => Tab::Places,
            InspectTab::Talks => Tab::Talks,
        }
    }
}

/// `replay`: the save's recording in the window, from `--from`.
pub(super) fn replay(args: &ReplayArgs) -> i32 {
    match replay_setup(args) {
        Ok((sim, replay)) => {
            let clock = &sim.load.as_ref().expect("a save").0.world.clock;
            let at = |step: u64| {
                clock
                    .start
                    .plus_secs(step as i64 * clock.sec_per_step as i64)
            };
            println!(
                "replaying {} from {}, {} (step {}; recorded from step {} to {})",
                replay.name,
                at(replay.step()).date_string(),
                at(replay.step()).clock_12h(),
                replay.step(),
                replay.first,
                replay.last
            );
            let window = PlayOptions {
                screenshot: args.screenshot.clone(),
                frames: args.frames,
                speed: args.speed,
                commands: None,
                skip_steps: 0,
                select: args.select.clone(),
                inspect: None,
                show_help: false,
                follow: None,
                frame_bench: None,
            };
            crate::game::run_game(sim, &window, Some((replay, args.paused)))
        }
        Err(e) => fail(e),
    }
}

/// `replay`: the save loaded with no model, and its recording from `--from`.
fn replay_setup(args: &ReplayArgs) -> Result<(SimPlugin, crate::save::replay::Replay), String> {
    let mut config =
        GameConfig::load_or_default(args.config.as_deref()).map_err(|e| e.to_string())?;
    let named =
        crate::save::disk::read_named(std::path::Path::new(&config.saves.dir), &args.save, None)?;
    let dir = named.dir.clone();
    config.llm = LlmConfig::scripted(Vec::new());
    let sim = SimPlugin::from_save_data(&dir, named.data, config)?;
    let Some(loaded) = sim.load.clone() else {
        return Err(format!("{}: not loaded", dir.display()));
    };
    let data = &loaded.0;
    let from = args.from_step(data.world.clock.start, data.world.clock.sec_per_step)?;
    let replay = crate::save::replay::Replay::new(
        &data.meta.name,
        data.movement.clone(),
        from,
        data.world.clock.step,
    )
    .ok_or_else(|| {
        format!(
            "{}: movement.jsonl is empty: the save was made before any step ran",
            dir.display()
        )
    })?;
    Ok((sim, replay))
}
