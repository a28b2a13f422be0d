//! The command line: `play` (the default), `run` (headless), `replay` (a save's recording),
//! `check` (validate files), saves (`saves`, `fork`), `import`/`export` of the original's formats
//! and `bench` (simulation, LLM, retrieval, saves). The commands are parsed here (the options of
//! `play`, `replay`, `run` and `check` in `args.rs`); each family runs in a file of its own.

mod args;
mod bench;
mod check;
mod generate;
mod import;
mod lab;
mod play;
mod run;
mod saves;

pub use args::{CheckArgs, InspectTab, PlayArgs, ReplayArgs, RunArgs, WorldArgs};

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Simulacra: the generative agents of Smallville as a desktop game.
#[derive(Parser, Debug)]
#[command(
    name = "simulacra",
    version = concat!(env!("CARGO_PKG_VERSION"), " (source ", env!("SIMULACRA_SOURCE"), ")"),
    about,
    long_about = None
)]
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
    /// Run a scenario with no window and print a summary (Ctrl-C or SIGTERM ends a run of steps
    /// early: it saves with `--save` and prints the summary of the steps it ran).
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
    /// Towns and casts of any size from a seed, with no model: `generate town --residents 1000`
    /// and `generate cast --map … --residents 1000`.
    #[command(subcommand)]
    Generate(GenerateCommand),
    /// Write our towns in the original Generative Agents' formats.
    #[command(subcommand)]
    Export(ExportCommand),
    /// The paper's measurements, each writing a report folder under labs/: information
    /// diffusion, relationships, the party, interviews under the ablation conditions.
    #[command(subcommand)]
    Lab(lab::LabCommand),
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
    /// Build the town's art atlases (tiles, people, icons) as PNGs from the code that draws them.
    Art {
        /// The folder to write (default: assets/art under the data root, where the window reads them).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// List the GGUF chat models already on this machine (the project's models/, Ollama's,
    /// LM Studio's and Hugging Face's stores) with their parameters, quantisation, size and
    /// context length read from each file's header; what is passed over is said.
    Models,
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

/// `generate` subcommands.
#[derive(Subcommand, Debug)]
pub enum GenerateCommand {
    /// A town with a bedroom for each of `--residents` people and places to work, study and
    /// spend free time (shops, cafés, pubs, colleges, parks) in districts; checked, then written.
    Town {
        /// People it must house (nine bedrooms a house).
        #[arg(long)]
        residents: usize,
        /// The seed: the same seed and size give the same file.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The map file to write (e.g. maps/town1000.ron).
        #[arg(long)]
        out: PathBuf,
    },
    /// A scenario of `--residents` people for a town: homes, jobs or studies with hours,
    /// favourite places, neighbours, co-workers and friends; checked against the town, then written.
    Cast {
        /// The town: a bundled map name or a map file.
        #[arg(long)]
        map: String,
        /// How many residents.
        #[arg(long)]
        residents: usize,
        /// The seed: the same seed, town and size give the same file.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// The scenario file to write (e.g. config/scenarios/town1000.ron).
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

/// Benchmarks.
#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Frame times of the real window (needs a display: under Xvfb, `xvfb-run -a simulacra bench
    /// frames`): median and 99th percentile, and the simulation's part of each frame.
    Frames {
        /// World selection (`--scripted-llm` for no model).
        #[command(flatten)]
        world: WorldArgs,
        /// Seconds to measure (after 120 frames of warm-up).
        #[arg(long, default_value_t = 20.0, value_parser = args::positive)]
        seconds: f32,
        /// Speed multiplier (0 = as fast as possible, the default).
        #[arg(long, default_value_t = 0)]
        speed: u32,
        /// Steps to run before the window opens (4600 = 12:46, lunch at Hobbs Cafe).
        #[arg(long, default_value_t = 4600)]
        skip_steps: u64,
    },
    /// A generated town of each size run headless against a pool of endpoints: stand-in
    /// servers started here (every shape answered after a delay from the throughput model
    /// given; no model) or real servers (`--servers`). Pace, the simulation's own share of wall
    /// time, requests in flight per endpoint, affinity, peak memory and save time.
    Scale {
        /// Town sizes, residents.
        #[arg(long, value_delimiter = ',', default_value = "100,300,1000")]
        sizes: Vec<usize>,
        /// Numbers of endpoints to try at each size.
        #[arg(long, value_delimiter = ',', default_value = "4")]
        endpoints: Vec<usize>,
        /// Stand-ins: tokens per second per request.
        #[arg(long, default_value_t = 40.0, value_parser = args::positive)]
        tokens_per_s: f32,
        /// Stand-ins: requests each serves at once (more wait in its queue).
        #[arg(long, default_value_t = 32)]
        batch: usize,
        /// Stand-ins: seconds to the first token (a quarter of it for a cached prefix).
        #[arg(long, default_value_t = 0.15, value_parser = args::positive)]
        ttft: f32,
        /// Requests in flight per endpoint (default: the batch).
        #[arg(long)]
        concurrency: Option<u32>,
        /// Spread requests by load alone, not keeping residents on their own endpoint.
        #[arg(long)]
        no_affinity: bool,
        /// Game hours measured.
        #[arg(long, default_value_t = 1.0, value_parser = args::game_hours)]
        hours: f64,
        /// When they begin (the day's plans are made first thing).
        #[arg(long, default_value = "2023-02-13 07:00")]
        from: String,
        /// Seed of the generated towns and casts.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Real OpenAI-compatible servers (base URLs ending in /v1) instead of stand-ins; the
        /// first N are used for N endpoints.
        #[arg(long, value_delimiter = ',')]
        servers: Vec<String>,
        /// The real servers' model name.
        #[arg(long, default_value = "default")]
        model: String,
        /// Where the towns, casts and saves go.
        #[arg(long, default_value = "out/scale")]
        out: PathBuf,
        /// Continue a saved town (a save folder, e.g. an earlier run's `out/scale/save-1000`)
        /// instead of a new one: its residents and their memories, from its time (`--sizes`
        /// and `--from` are not used); measures a later day, when memories are many.
        #[arg(long)]
        load: Option<PathBuf>,
    },
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
        /// Read the weights as the file holds them (by default a Q4_1, Q5_0 or Q5_1 file is read
        /// from its Q8_0 copy, as the game does).
        #[arg(long)]
        as_file: bool,
        /// The model's layers put on a GPU (default: all that fit, in a build with a GPU
        /// backend; 0: the CPU only, to compare on one machine).
        #[arg(long)]
        gpu_layers: Option<u32>,
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
        #[arg(long, default_value_t = 0.0, value_parser = args::game_hours)]
        warmup: f64,
        /// Game hours measured.
        #[arg(long, default_value_t = 1.0, value_parser = args::game_hours)]
        hours: f64,
        /// Measure each scenario again beside this many programs that each keep a core busy,
        /// and print the speed as a share of the idle run's.
        #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
        busy_cores: u32,
        /// Another build of this program (the previous commit's, say): the same measurement is
        /// run with it and with this one in turn, A B A B, each as its own process, and the
        /// ratio of their wall times printed.
        #[arg(long)]
        against: Option<PathBuf>,
        /// Rounds of A B with `--against`.
        #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..=20))]
        rounds: u32,
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

/// Threads whose panic is caught where they are joined and reported there (the game goes on).
const PANICS_HANDLED_BY_JOIN: &[&str] = &["autosave"];

/// Makes a panic on any thread but the main one end the process with its message (exit code
/// 101), as a panic on the main thread does: the LLM router, a backend's worker or a stand-in
/// server that stopped would otherwise leave the simulation waiting for answers that never
/// come, spinning. Threads that are joined and report their panic themselves are left be.
pub fn exit_on_thread_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        let name = std::thread::current()
            .name()
            .unwrap_or("unnamed")
            .to_string();
        if name != "main" && !PANICS_HANDLED_BY_JOIN.contains(&name.as_str()) {
            eprintln!(
                "error: the thread '{name}' stopped on the error above; the run cannot go on without it"
            );
            std::process::exit(101);
        }
    }));
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
        show_help: false,
        follow: None,
    }));
    match command {
        Command::Play(args) => play::play(&args),
        Command::Replay(args) => play::replay(&args),
        Command::Run(args) => run::run(&args),
        Command::Fork { from, to, config } => saves::fork(&from, &to, config.as_deref()),
        Command::Saves { config } => saves::list(config.as_deref()),
        Command::Models => {
            let listing = crate::llm::models::list(&crate::llm::models::Roots::of_this_user());
            print!("{}", crate::llm::models::report(&listing));
            0
        }
        Command::Art { out } => {
            let dir = out.unwrap_or_else(|| {
                crate::data::data_root().join(crate::game::world::sprites::ART_DIR)
            });
            match crate::game::world::sprites::write_atlases(&dir) {
                Ok(paths) => {
                    for path in paths {
                        println!("wrote {}", path.display());
                    }
                    0
                }
                Err(e) => fail(e),
            }
        }
        Command::Check(args) => check::check(&args),
        Command::Import(command) => import::import(command),
        Command::Export(command) => import::export(command),
        Command::Generate(command) => generate::generate(command),
        Command::Bench(command) => bench::bench(command),
        Command::Lab(command) => lab::lab(command),
    }
}

/// Says what went wrong on standard error; the exit code of a command that failed.
fn fail(e: String) -> i32 {
    eprintln!("error: {e}");
    2
}

#[cfg(test)]
mod tests {
    use super::Cli;
    use clap::Parser;

    #[test]
    fn spans_of_game_time_that_cannot_be_run_are_refused_when_read() {
        // `--warmup -1e30` once overflowed the game clock (a panic); NaN and negative hours
        // printed nonsense.
        for (flag, value) in [("--warmup", "-1e30"), ("--hours", "NaN"), ("--hours", "-1")] {
            let arg = format!("{flag}={value}");
            let e = Cli::try_parse_from(["simulacra", "bench", "day", arg.as_str()]).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains(flag) && text.contains("game hours from 0"),
                "{text}"
            );
        }
        let e = Cli::try_parse_from(["simulacra", "lab", "diffusion", "--days=inf"]).unwrap_err();
        assert!(e.to_string().contains("game days"), "{e}");
        assert!(Cli::try_parse_from(["simulacra", "bench", "day", "--hours", "0.5"]).is_ok());
    }
}
