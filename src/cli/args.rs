//! The options of `play`, `replay`, `run` and `check`, and the world selection they share
//! (scenario, map, config, or a save to continue).

use crate::SimPlugin;
use crate::config::GameConfig;
use crate::llm::config::LlmConfig;
use clap::Args;
use std::path::PathBuf;

/// `replay` options.
#[derive(Args, Debug, Clone)]
pub struct ReplayArgs {
    /// The save: a name in the saves folder, `latest`, or a path to a save folder.
    pub save: String,
    /// Where to start: a step (`3000`), a time on the first day (`12:30`) or a date-time
    /// (`"2023-02-13 12:30"`). Default: the beginning.
    #[arg(long)]
    pub from: Option<String>,
    /// Start at this speed multiplier (1, 2, 4, … 64; 0 = 256×).
    #[arg(long)]
    pub speed: Option<u32>,
    /// Start paused.
    #[arg(long)]
    pub paused: bool,
    /// Config file (for the saves folder; default: config/simulacra.ron).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Save a screenshot of the window to this PNG after `--frames` frames, then quit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Frames to run before the screenshot.
    #[arg(long, default_value_t = 90)]
    pub frames: u32,
    /// Open the inspector on this person.
    #[arg(long)]
    pub select: Option<String>,
}

impl ReplayArgs {
    /// The step `--from` names in a simulation that began at `start`.
    pub fn from_step(
        &self,
        start: crate::sim::time::GameTime,
        sec_per_step: u32,
    ) -> Result<u64, String> {
        let Some(text) = self.from.as_deref().map(str::trim) else {
            return Ok(0);
        };
        if let Ok(step) = text.parse::<u64>() {
            return Ok(step);
        }
        let at = crate::sim::time::GameTime::parse(text)
            .or_else(|| {
                crate::sim::time::parse_clock(text)
                    .map(|s| crate::sim::time::GameTime(start.day() * 86_400 + s as i64))
            })
            .ok_or_else(|| {
                format!("--from: {text:?} is neither a step, a time (12:30) nor a date-time (\"2023-02-13 12:30\")")
            })?;
        if at < start {
            return Err(format!(
                "--from: {at} is before the simulation began ({start})"
            ));
        }
        Ok(((at.0 - start.0) / sec_per_step.max(1) as i64) as u64)
    }
}

/// Which world to load.
#[derive(Args, Debug, Clone)]
pub struct WorldArgs {
    /// A bundled scenario name (the_ville_n25, the_ville_n3) or a path to a scenario file.
    #[arg(long, default_value = "the_ville_n25")]
    pub scenario: String,
    /// A bundled map name (smallville) or a path (a map file, or a town made for the original:
    /// its matrix folder or Tiled map); overrides the scenario's map.
    #[arg(long)]
    pub map: Option<String>,
    /// Config file (default: config/simulacra.ron).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Use the scripted LLM backend instead of the configured ones (no model needed).
    #[arg(long)]
    pub scripted_llm: bool,
    /// The chat model the embedded llama.cpp runs instead of the configured one: a name
    /// `simulacra models` lists (an Ollama tag such as `llama3.2:3b`, an LM Studio or Hugging
    /// Face name) or a GGUF file's path; its chat template is the file's own.
    #[arg(long, conflicts_with = "scripted_llm")]
    pub model: Option<String>,
    /// Residents follow the deterministic daily routine instead of planning with the model.
    #[arg(long)]
    pub routine: bool,
    /// Start at this game time instead of the scenario's ("2023-02-13 07:00").
    #[arg(long)]
    pub start: Option<String>,
    /// Continue a saved simulation: a name in the saves folder, `latest` (the newest save or
    /// autosave there) or a path to a save folder. Its scenario, map and settings are used;
    /// the LLM backends are this machine's.
    #[arg(long, conflicts_with_all = ["scenario", "map", "start", "routine"])]
    pub load: Option<String>,
}

impl Default for WorldArgs {
    fn default() -> Self {
        Self {
            scenario: "the_ville_n25".into(),
            map: None,
            config: None,
            scripted_llm: false,
            model: None,
            routine: false,
            start: None,
            load: None,
        }
    }
}

impl WorldArgs {
    /// Loads and validates everything.
    pub fn load(&self) -> Result<SimPlugin, String> {
        let mut config =
            GameConfig::load_or_default(self.config.as_deref()).map_err(|e| e.to_string())?;
        if self.scripted_llm {
            config.llm = LlmConfig::scripted(Vec::new());
        }
        if let Some(name) = &self.model {
            let roots = crate::llm::models::Roots::of_this_user();
            let (path, store, info) = crate::llm::models::resolve(name, &roots)?;
            config
                .llm
                .use_model(&path, store != crate::llm::models::Store::Project)?;
            eprintln!(
                "--model {name}: {} ({} parameters, {}), from {}",
                path.display(),
                info.parameters_words(),
                info.quantisation,
                store.label()
            );
            if config.cognition.suit_model(info.parameters) {
                eprintln!(
                    "--model {name}: {} parameters, so the settings for a big model: prompt_memories {}, importance asked of the model",
                    info.parameters_words(),
                    config.cognition.prompt_memories
                );
            }
        }
        if let Some(name) = &self.load {
            let named =
                crate::save::disk::read_named(std::path::Path::new(&config.saves.dir), name, None)?;
            for p in &named.passed_over {
                eprintln!("--load {name}: passed over, it does not load: {p}");
            }
            return SimPlugin::from_save_data(&named.dir, named.data, config);
        }
        if self.routine {
            config.cognition.planning = crate::cognition::config::Planning::Routine;
        }
        let mut sim = SimPlugin::load(&self.scenario, self.map.as_deref(), config)
            .map_err(|e| e.to_string())?;
        if let Some(start) = &self.start {
            sim.scenario.start = crate::sim::time::GameTime::parse(start).ok_or_else(|| {
                format!("--start: bad date-time {start:?}; write \"YYYY-MM-DD HH:MM\"")
            })?;
        }
        Ok(sim)
    }
}

/// `check` options.
#[derive(Args, Debug, Clone)]
pub struct CheckArgs {
    /// World selection.
    #[command(flatten)]
    pub world: WorldArgs,
    /// Contact every configured LLM backend and say what it found: reachable, models, the
    /// dialect a server takes shaped requests in, embeddings and their size, round-trip times.
    #[arg(long)]
    pub probe: bool,
}

/// `play` options.
#[derive(Args, Debug, Clone)]
pub struct PlayArgs {
    /// World selection.
    #[command(flatten)]
    pub world: WorldArgs,
    /// Save a screenshot of the window to this PNG after `--frames` frames, then quit.
    #[arg(long)]
    pub screenshot: Option<PathBuf>,
    /// Frames to run before the screenshot.
    #[arg(long, default_value_t = 90)]
    pub frames: u32,
    /// Start at this speed multiplier (1, 2, 4, …) .
    #[arg(long)]
    pub speed: Option<u32>,
    /// Console commands to type into the game, one every few frames once the previous is done
    /// (a scripted session: `goto isabella`, `talk isabella`, `say hello`, …).
    #[arg(long)]
    pub commands: Option<PathBuf>,
    /// Run this many steps before the window opens (e.g. 2700 = 07:30 on the first day).
    #[arg(long, default_value_t = 0)]
    pub skip_steps: u64,
    /// Open the inspector on this person (e.g. "Isabella Rodriguez").
    #[arg(long)]
    pub select: Option<String>,
    /// The inspector page to open first.
    #[arg(long, value_enum)]
    pub inspect: Option<InspectTab>,
    /// Open the help overlay at the start (it opens by itself on a first start).
    #[arg(long)]
    pub show_help: bool,
    /// Follow this person with the camera, without opening the inspector.
    #[arg(long)]
    pub follow: Option<String>,
}

/// Inspector pages.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InspectTab {
    /// Today's plan.
    Day,
    /// The memory stream.
    Memory,
    /// Known places.
    Places,
    /// Their conversations.
    Talks,
}

/// `run` options.
#[derive(Args, Debug, Clone)]
pub struct RunArgs {
    /// World selection.
    #[command(flatten)]
    pub world: WorldArgs,
    /// Steps to run (8640 = one game day at 10 s per step).
    #[arg(long, default_value_t = 8640)]
    pub steps: u64,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    /// A history file in the original project's format (`Name,Whisper` CSV, statements separated
    /// by semicolons) whose statements become the residents' thoughts before the run.
    #[arg(long)]
    pub history: Option<PathBuf>,
    /// Console commands to run, one per line (`-` reads standard input): each runs at the step
    /// it is read, `run N` advances N steps, and what the console answers is printed. With this,
    /// steps advance only through `run N` (`--steps` is not used).
    #[arg(long)]
    pub commands: Option<PathBuf>,
    /// Save the simulation under this name when the run ends (in the saves folder).
    #[arg(long)]
    pub save: Option<String>,
}

/// The most game hours an option takes (ten years of game time): more is a typo, and would run
/// past what a game time can hold.
pub const MAX_GAME_HOURS: f64 = 24.0 * 3653.0;

/// A span of game hours for an option (`--hours`, `--warmup`): a finite number from 0 to
/// [`MAX_GAME_HOURS`]; `NaN`, a negative or an endless span is refused with what is taken.
pub fn game_hours(s: &str) -> Result<f64, String> {
    span(s, MAX_GAME_HOURS, "game hours")
}

/// A span of game days for an option (`--days`): as [`game_hours`], in days.
pub fn game_days(s: &str) -> Result<f64, String> {
    span(s, MAX_GAME_HOURS / 24.0, "game days")
}

/// A positive finite number (seconds, a rate) for an option.
pub fn positive(s: &str) -> Result<f32, String> {
    let v: f32 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && v > 0.0 {
        Ok(v)
    } else {
        Err(format!("{s:?}: a number above 0 is taken"))
    }
}

fn span(s: &str, max: f64, unit: &str) -> Result<f64, String> {
    let v: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a number"))?;
    if v.is_finite() && (0.0..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{s:?}: {unit} from 0 to {max} are taken"))
    }
}

#[cfg(test)]
mod value_tests {
    use super::*;

    #[test]
    fn spans_of_game_time_are_finite_and_not_negative() {
        assert_eq!(game_hours("1.5"), Ok(1.5));
        assert_eq!(game_hours("0"), Ok(0.0));
        for bad in ["NaN", "-1", "-1e30", "1e30", "inf", "", "two"] {
            let e = game_hours(bad).unwrap_err();
            assert!(e.contains(&format!("{bad:?}")), "{e}");
        }
        assert_eq!(game_days("2"), Ok(2.0));
        assert!(game_days("-0.5").is_err() && game_days("NaN").is_err());
        assert_eq!(positive("0.15"), Ok(0.15));
        assert!(positive("0").is_err() && positive("NaN").is_err() && positive("-3").is_err());
    }
}
