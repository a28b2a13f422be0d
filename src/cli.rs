//! The command line: `play` (the default), `run` (headless), `replay` (a save's recording),
//! `check` (validate files), saves (`saves`, `fork`), `import`/`export` of the original's formats
//! and `bench` (simulation, LLM, retrieval, saves).

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
    /// Play a save's recorded day in the window, without the model: pause, scrub and speed up.
    Replay(ReplayArgs),
    /// Validate a scenario, its map and the config, and report the first problem; `--probe` also
    /// contacts every configured LLM backend.
    Check(CheckArgs),
    /// Measure throughput.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Convert towns made for the original Generative Agents into ours.
    #[command(subcommand)]
    Import(ImportCommand),
    /// Write our towns in the original Generative Agents' formats.
    #[command(subcommand)]
    Export(ExportCommand),
    /// Copy a save under a new name (to try another course from the same moment).
    Fork {
        /// The save to copy (name in the saves folder, `latest`, or a path).
        from: String,
        /// The new save's name.
        to: String,
        /// Config file (for the saves folder; default: config/simulacra.ron).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// List the saves in the saves folder, newest last.
    Saves {
        /// Config file (for the saves folder; default: config/simulacra.ron).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// `import` subcommands.
#[derive(Subcommand, Debug)]
pub enum ImportCommand {
    /// A town made for the original, its matrix folder (maze_meta_info.json, maze/*.csv,
    /// special_blocks/*.csv) or its Tiled map (.tmj/.json/.tmx with the legends beside it), to a
    /// map file of ours; prints what it read and what it defaulted or skipped.
    Map {
        /// The matrix folder (or the folder holding `matrix/`), or the Tiled map file.
        folder: PathBuf,
        /// The map file to write (e.g. maps/my_town.ron).
        #[arg(long)]
        out: PathBuf,
    },
    /// The original's base simulation folder (reverie/meta.json, environment/0.json,
    /// personas/*/bootstrap_memory/) to a scenario of ours on a given map; prints what it read
    /// and what it derived, defaulted or skipped.
    Scenario {
        /// The base simulation folder (e.g. storage/base_the_ville_n25).
        folder: PathBuf,
        /// The town: a bundled map name, a map file, or the original's matrix folder or Tiled map.
        #[arg(long)]
        map: String,
        /// The scenario file to write (e.g. config/scenarios/my_town.ron).
        #[arg(long)]
        out: PathBuf,
    },
}

/// `export` subcommands.
#[derive(Subcommand, Debug)]
pub enum ExportCommand {
    /// A map (bundled name, map file or matrix folder) to the original's matrix folder.
    Map {
        /// The map: a bundled name (smallville) or a path.
        map: String,
        /// The folder to write (it gets maze_meta_info.json, maze/ and special_blocks/).
        #[arg(long)]
        out: PathBuf,
    },
}

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
        if let Some(name) = &self.load {
            let dir =
                crate::save::disk::resolve(std::path::Path::new(&config.saves.dir), name, None);
            return SimPlugin::from_save(&dir, config);
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
    /// A simulated day with the configured model (by default the embedded one): game hours per
    /// wall hour, LLM calls and tokens per agent per game hour, time waiting on the LLM.
    Day {
        /// Scenarios to measure, one after the other.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "the_ville_n3,the_ville_n25"
        )]
        scenarios: Vec<String>,
        /// Config file (default: config/simulacra.ron).
        #[arg(long)]
        config: Option<PathBuf>,
        /// Measure from this game time.
        #[arg(long, default_value = "2023-02-13 07:00")]
        from: String,
        /// Untimed game hours before `from` (0: the measured hours include the day's planning,
        /// made at `from` on a first day).
        #[arg(long, default_value_t = 0.0)]
        warmup: f64,
        /// Game hours measured.
        #[arg(long, default_value_t = 1.0)]
        hours: f64,
    },
    /// Save and load times and size on disk after a simulated day (scripted answers, the real
    /// embedder's vectors), or of an existing save.
    Save {
        /// The scenario to simulate.
        #[arg(long, default_value = "the_ville_n25")]
        scenario: String,
        /// Steps to simulate first (8640: a day).
        #[arg(long, default_value_t = 8640)]
        steps: u64,
        /// Measure this save instead (a name in the saves folder or a path).
        #[arg(long)]
        load: Option<String>,
        /// Timed rounds.
        #[arg(long, default_value_t = 5)]
        rounds: u32,
        /// Config file (default: config/simulacra.ron).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// The same shaped requests through the embedded llama.cpp backend and through a real
    /// OpenAI-compatible server on the same model (llama-cpp-python's, started from set-up's
    /// virtual environment, or the one at `--server`): valid answers and throughput.
    Server {
        /// The GGUF model (both sides).
        #[arg(long, default_value = "models/SmolLM2-135M-Instruct.Q4_1.gguf")]
        model: String,
        /// Shaped requests (the six kinds in turn).
        #[arg(long, default_value_t = 100)]
        requests: usize,
        /// CPU threads, for both sides (default: all cores).
        #[arg(long)]
        threads: Option<u32>,
        /// A running server's base URL (…/v1) instead of starting llama-cpp-python's.
        #[arg(long)]
        server: Option<String>,
        /// Only the requests of one kind (integer, choice, yes/no, lines, integers, json).
        #[arg(long)]
        only: Option<String>,
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
        world: WorldArgs::default(),
        screenshot: None,
        commands: None,
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
            Ok(sim) => crate::game::run_game(sim, &args, None),
            Err(e) => fail(e),
        },
        Command::Replay(args) => match replay_setup(&args) {
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
                let window = PlayArgs {
                    world: WorldArgs::default(),
                    screenshot: args.screenshot.clone(),
                    frames: args.frames,
                    speed: args.speed,
                    commands: None,
                    skip_steps: 0,
                    select: args.select.clone(),
                    inspect: None,
                };
                crate::game::run_game(sim, &window, Some((replay, args.paused)))
            }
            Err(e) => fail(e),
        },
        Command::Run(args) => match args.world.load() {
            Ok(sim) => {
                let done = match &args.commands {
                    Some(file) => crate::headless::run_commands(
                        sim,
                        file,
                        args.history.as_deref(),
                        args.save.as_deref(),
                    ),
                    None => crate::headless::run(
                        sim,
                        args.steps,
                        !args.quiet,
                        args.history.as_deref(),
                        args.save.as_deref(),
                    ),
                };
                match done {
                    Ok(summary) => {
                        print!("{summary}");
                        0
                    }
                    Err(e) => fail(e),
                }
            }
            Err(e) => fail(e),
        },
        Command::Fork { from, to, config } => {
            match GameConfig::load_or_default(config.as_deref())
                .map_err(|e| e.to_string())
                .and_then(|c| {
                    crate::save::disk::fork(std::path::Path::new(&c.saves.dir), &from, &to)
                }) {
                Ok(dir) => {
                    println!("forked {from} → {}", dir.display());
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Saves { config } => match GameConfig::load_or_default(config.as_deref()) {
            Ok(c) => {
                println!(
                    "{}",
                    crate::save::disk::describe(std::path::Path::new(&c.saves.dir))
                );
                0
            }
            Err(e) => fail(e.to_string()),
        },
        Command::Check(CheckArgs { world, probe }) => match world.load() {
            Ok(sim) if probe => {
                let (report, ok) = crate::llm::probe::probe(&sim.config.llm);
                print!("{report}");
                if ok { 0 } else { 1 }
            }
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
        Command::Import(ImportCommand::Map { folder, out }) => {
            let source = if folder.is_dir() || crate::sim::map::tiled_map::is_tiled_file(&folder) {
                crate::sim::map::load_map_reporting(&folder)
            } else {
                Err(crate::data_error::DataError::new(
                    &folder,
                    0,
                    "",
                    "not a matrix folder nor a Tiled map (.tmj, .json, .tmx)",
                ))
            };
            match source {
                Ok((map, report)) => {
                    println!("read:");
                    print!("{report}");
                    let text = crate::sim::map::write_ron_beside(
                        &map,
                        &format!(
                            "Imported by `simulacra import map` from {}.\nFormat: maps/README.md.",
                            folder.display()
                        ),
                        Some(out.parent().unwrap_or(std::path::Path::new(""))),
                    );
                    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    // The written file must load back as the same town.
                    match std::fs::write(&out, &text)
                        .map_err(|e| format!("{}: {e}", out.display()))
                        .and_then(|_| crate::sim::map::load_map(&out).map_err(|e| e.to_string()))
                    {
                        Ok(_) => {
                            println!("wrote {}", out.display());
                            0
                        }
                        Err(e) => fail(e),
                    }
                }
                Err(e) => fail(e.to_string()),
            }
        }
        Command::Import(ImportCommand::Scenario { folder, map, out }) => {
            let map_path = crate::config::resolve_data("maps", &map);
            let result = crate::sim::map::load_map(&map_path)
                .map_err(|e| e.to_string())
                .and_then(|m| {
                    // A bundled map keeps its name; a path becomes absolute, so the scenario
                    // finds it from wherever the scenario is written.
                    let bundled = map_path.starts_with(crate::config::data_root().join("maps"));
                    let map_ref = match std::fs::canonicalize(&map_path) {
                        Ok(p) if !bundled => p.display().to_string(),
                        _ => map.clone(),
                    };
                    crate::agent::original::import_people(&folder, &m, &map_ref)
                        .map_err(|e| e.to_string())
                });
            match result {
                Ok((scenario, report)) => {
                    println!("read:");
                    print!("{report}");
                    let text = crate::agent::original::scenario_text(
                        &scenario,
                        &format!(
                            "Imported by `simulacra import scenario` from {}.\nFormat: config/README.md (scenarios).",
                            folder.display()
                        ),
                    );
                    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
                        let _ = std::fs::create_dir_all(dir);
                    }
                    match std::fs::write(&out, &text) {
                        Ok(()) => {
                            // The written scenario must load with its map.
                            match crate::SimPlugin::load(
                                &out.display().to_string(),
                                None,
                                GameConfig::default(),
                            ) {
                                Ok(_) => {
                                    println!("wrote {}", out.display());
                                    0
                                }
                                Err(e) => fail(format!("the written scenario does not load: {e}")),
                            }
                        }
                        Err(e) => fail(format!("{}: {e}", out.display())),
                    }
                }
                Err(e) => fail(e),
            }
        }
        Command::Export(ExportCommand::Map { map, out }) => {
            let path = crate::config::resolve_data("maps", &map);
            match crate::sim::map::load_map(&path)
                .map_err(|e| e.to_string())
                .and_then(|m| crate::sim::map::original::export_matrix(&m, &out))
            {
                Ok(files) => {
                    println!(
                        "wrote the matrix folder {} ({} files); open it with the original by copying it over environment/frontend_server/static_dirs/assets/the_ville/matrix/",
                        out.display(),
                        files.len()
                    );
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Bench(BenchCommand::Sim {
            mut world,
            steps,
            rounds,
        }) => {
            world.scripted_llm = true;
            world.routine = true;
            match world.load() {
                Ok(mut sim) => {
                    sim.config.saves.autosave_minutes = 0; // nothing but steps is timed
                    let n = sim.scenario.residents.len();
                    let rates = crate::headless::bench_steps(sim, steps, rounds);
                    let best = rates.iter().cloned().fold(0.0, f64::max);
                    let list: Vec<String> = rates.iter().map(|r| format!("{r:.0}")).collect();
                    println!(
                        "headless steps/s with {n} residents on the routine, {steps} steps × {rounds} rounds: [{}]; best {best:.0} steps/s (a game day in {:.3} s)",
                        list.join(", "),
                        8640.0 / best
                    );
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Bench(BenchCommand::Llm {
            model,
            threads,
            tokens,
            levels,
            rounds,
        }) => match crate::llm::bench::run(&model, threads, tokens, &levels, rounds) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
        Command::Bench(BenchCommand::Day {
            scenarios,
            config,
            from,
            warmup,
            hours,
        }) => {
            let Some(from) = crate::sim::time::GameTime::parse(&from) else {
                return fail(format!("--from: bad date-time {from:?}"));
            };
            for scenario in scenarios {
                let world = WorldArgs {
                    scenario: scenario.clone(),
                    config: config.clone(),
                    ..WorldArgs::default()
                };
                let mut sim = match world.load() {
                    Ok(s) => s,
                    Err(e) => return fail(e),
                };
                sim.config.saves.autosave_minutes = 0; // nothing but the day is timed
                let r = crate::headless::bench_day(sim, from, warmup, hours);
                let chat = r.stats.chat_total();
                let d = r.agents as f64 * r.game_hours;
                println!(
                    "{scenario}: {} agents, {:.1} game hours from {from} in {:.0} s wall ({:.0} s untimed warm-up before): {:.2} game hours per wall hour; waiting on the LLM {:.0}% of the wall time",
                    r.agents,
                    r.game_hours,
                    r.wall_secs,
                    r.warmup_secs,
                    r.game_hours / (r.wall_secs / 3600.0),
                    100.0 * r.waited_secs / r.wall_secs.max(1e-9)
                );
                println!(
                    "  per agent per game hour: {:.1} chat requests ({:.1} answered by the model, the rest from the cache), {:.0} tokens ({:.0} prompt, {:.0} of them from the prefix cache, + {:.0} generated); {} fail-safe answers in all",
                    chat.calls as f64 / d,
                    (chat.calls - chat.cache_hits) as f64 / d,
                    (chat.prompt_tokens + chat.gen_tokens) as f64 / d,
                    chat.prompt_tokens as f64 / d,
                    chat.cached_prompt_tokens as f64 / d,
                    chat.gen_tokens as f64 / d,
                    chat.fallbacks
                );
                print!("{}", r.stats.per_agent_hour(r.agents, r.game_hours));
            }
            0
        }
        Command::Bench(BenchCommand::Save {
            scenario,
            steps,
            load,
            rounds,
            config,
        }) => match crate::save::bench::run(&crate::save::bench::SaveBench {
            scenario,
            steps,
            load,
            rounds,
            config,
        }) {
            Ok(report) => {
                print!("{report}");
                0
            }
            Err(e) => fail(e),
        },
        Command::Bench(BenchCommand::Server {
            model,
            requests,
            threads,
            server,
            only,
        }) => {
            let threads = threads.unwrap_or_else(|| {
                std::thread::available_parallelism()
                    .map(|n| n.get() as u32)
                    .unwrap_or(2)
            });
            match crate::llm::bench_server::run(
                &model,
                requests,
                threads,
                server.as_deref(),
                only.as_deref(),
            ) {
                Ok(()) => 0,
                Err(e) => fail(e),
            }
        }
        Command::Bench(BenchCommand::Retrieval {
            set,
            memories,
            rounds,
            threads,
        }) => match crate::memory::bench::run(
            &crate::config::resolve_path(&set.to_string_lossy()),
            memories,
            rounds,
            threads,
        ) {
            Ok(()) => 0,
            Err(e) => fail(e),
        },
    }
}

/// `replay`: the save loaded with no model, and its recording from `--from`.
fn replay_setup(args: &ReplayArgs) -> Result<(SimPlugin, crate::save::replay::Replay), String> {
    let mut config =
        GameConfig::load_or_default(args.config.as_deref()).map_err(|e| e.to_string())?;
    let dir = crate::save::disk::resolve(std::path::Path::new(&config.saves.dir), &args.save, None);
    config.llm = LlmConfig::scripted(Vec::new());
    let sim = SimPlugin::from_save(&dir, config)?;
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
