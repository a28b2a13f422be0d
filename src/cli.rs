//! The command line: `play` (the default), `run` (headless), `check` (validate files) and
//! `bench` (simulation and LLM throughput).

use crate::SimPlugin;
use crate::config::GameConfig;
use crate::llm::config::LlmConfig;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// Simulacra: the generative agents of Smallville as a desktop game.
#[derive(Parser, Debug)]
#[command(name = "simulacra", version, about, long_about = None)]
pub struct Cli {
    /// What to do (default: play).
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Open the game window on a scenario.
    Play(PlayArgs),
    /// Run a scenario with no window and print a summary.
    Run(RunArgs),
    /// Validate a scenario, its map and the config, and report the first problem.
    Check(WorldArgs),
    /// Measure throughput.
    #[command(subcommand)]
    Bench(BenchCommand),
}

/// Which world to load.
#[derive(Args, Debug, Clone)]
pub struct WorldArgs {
    /// A bundled scenario name (the_ville_n25, the_ville_n3) or a path to a scenario file.
    #[arg(long, default_value = "the_ville_n25")]
    pub scenario: String,
    /// A bundled map name (smallville) or a path; overrides the scenario's map.
    #[arg(long)]
    pub map: Option<String>,
    /// Config file (default: config/simulacra.ron).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Use the scripted LLM backend instead of the configured ones (no model needed).
    #[arg(long)]
    pub scripted_llm: bool,
    /// Residents follow the deterministic daily routine instead of planning with the model.
    #[arg(long)]
    pub routine: bool,
}

impl WorldArgs {
    /// Loads and validates everything.
    pub fn load(&self) -> Result<SimPlugin, String> {
        let mut config = GameConfig::load_or_default(self.config.as_deref()).map_err(|e| e.to_string())?;
        if self.scripted_llm {
            config.llm = LlmConfig::scripted(Vec::new());
        }
        if self.routine {
            config.cognition.planning = crate::cognition::config::Planning::Routine;
        }
        SimPlugin::load(&self.scenario, self.map.as_deref(), config).map_err(|e| e.to_string())
    }
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
    /// Run this many steps before the window opens (e.g. 2700 = 07:30 on the first day).
    #[arg(long, default_value_t = 0)]
    pub skip_steps: u64,
    /// Open the inspector on this person (e.g. "Isabella Rodriguez").
    #[arg(long)]
    pub select: Option<String>,
    /// The inspector page to open first.
    #[arg(long, value_enum)]
    pub inspect: Option<InspectTab>,
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
}

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Headless simulation steps per second (25 residents on their routine).
    Sim {
        /// World selection.
        #[command(flatten)]
        world: WorldArgs,
        /// Steps per round.
        #[arg(long, default_value_t = 8640)]
        steps: u64,
        /// Rounds.
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// LLM throughput: the runtime against a bare llama.cpp loop at several concurrencies.
    Llm {
        /// The GGUF model.
        #[arg(long, default_value = "models/SmolLM2-135M-Instruct.Q4_1.gguf")]
        model: String,
        /// CPU threads (default: all cores but one).
        #[arg(long)]
        threads: Option<u32>,
        /// Most tokens generated per request.
        #[arg(long, default_value_t = 64)]
        tokens: u32,
        /// Concurrency levels.
        #[arg(long, value_delimiter = ',', default_value = "1,4,8,16")]
        levels: Vec<usize>,
        /// Runs per measurement (the best counts).
        #[arg(long, default_value_t = 3)]
        rounds: u32,
    },
    /// Retrieval speed over many memories, embedder throughput, and retrieval quality
    /// (recall@5) of each available embedder on a labelled set.
    Retrieval {
        /// The labelled set (format: bench/README.md).
        #[arg(long, default_value = "bench/retrieval_set.ron")]
        set: PathBuf,
        /// Memories in the synthetic stream for the speed test.
        #[arg(long, default_value_t = 10_000)]
        memories: usize,
        /// Timed retrievals.
        #[arg(long, default_value_t = 20)]
        rounds: u32,
        /// CPU threads for the embedders.
        #[arg(long, default_value_t = 2)]
        threads: u32,
    },
}

/// Runs the parsed command line; returns the process exit code.
pub fn main_with(cli: Cli) -> i32 {
    let command = cli.command.unwrap_or(Command::Play(PlayArgs {
        world: WorldArgs { scenario: "the_ville_n25".into(), map: None, config: None, scripted_llm: false, routine: false },
        screenshot: None,
        frames: 90,
        speed: None,
        skip_steps: 0,
        select: None,
        inspect: None,
    }));
    let fail = |e: String| {
        eprintln!("error: {e}");
        2
    };
    match command {
        Command::Play(args) => match args.world.load() {
            Ok(sim) => crate::game::run_game(sim, &args),
            Err(e) => fail(e),
        },
        Command::Run(args) => match args.world.load() {
            Ok(sim) => match crate::headless::run(sim, args.steps, !args.quiet, args.history.as_deref()) {
                Ok(summary) => {
                    print!("{summary}");
                    0
                }
                Err(e) => fail(e),
            },
            Err(e) => fail(e),
        },
        Command::Check(world) => match world.load() {
            Ok(sim) => {
                println!(
                    "ok: {} ({} residents) on {} ({}×{} tiles, {} sectors, {} arenas); {} prompt templates in {}",
                    sim.scenario.source.display(),
                    sim.scenario.residents.len(),
                    sim.map.source.display(),
                    sim.map.width,
                    sim.map.height,
                    sim.map.sectors.len(),
                    sim.map.arenas.len(),
                    crate::cognition::prompts::SPECS.len(),
                    crate::config::resolve_path(&sim.config.cognition.prompts).display()
                );
                0
            }
            Err(e) => fail(e),
        },
        Command::Bench(BenchCommand::Sim { mut world, steps, rounds }) => {
            world.scripted_llm = true;
            world.routine = true;
            match world.load() {
                Ok(sim) => {
                    let n = sim.scenario.residents.len();
                    let rates = crate::headless::bench_steps(sim, steps, rounds);
                    let best = rates.iter().cloned().fold(0.0, f64::max);
                    let list: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
                    println!("headless steps/s with {n} residents on the routine, {steps} steps × {rounds} rounds: [{}]; best {best:.0} steps/s (a game day in {:.3} s)", list.join(", "), 8640.0 / best);
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Bench(BenchCommand::Llm { model, threads, tokens, levels, rounds }) => match crate::llm::bench::run(&model, threads, tokens, &levels, rounds) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
        Command::Bench(BenchCommand::Retrieval { set, memories, rounds, threads }) => match crate::memory::bench::run(&crate::config::resolve_path(&set.to_string_lossy()), memories, rounds, threads) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
    }
}
