//! `simulacra lab …`: the paper's measurements, each writing a report folder (see `src/lab`).

use super::args::WorldArgs;
use super::fail;
use crate::lab::measures::{self, Common};
use clap::{Args, Subcommand};
use std::path::PathBuf;
use std::time::Instant;

/// Options every lab takes.
#[derive(Args, Debug, Clone)]
pub struct LabArgs {
    /// World selection (a scenario, or `--load` a save).
    #[command(flatten)]
    pub world: WorldArgs,
    /// The run's name: its report goes to `<out>/<name>-<date>/`.
    #[arg(long)]
    pub name: Option<String>,
    /// Where report folders go.
    #[arg(long, default_value = "labs")]
    pub out: PathBuf,
    /// Change a config field for this run, e.g. `--set cognition.ablation=NoReflection` or
    /// `--set cognition.retrieval.decay=0.99` (repeatable).
    #[arg(long = "set", value_name = "FIELD=VALUE")]
    pub sets: Vec<String>,
    /// Aids to turn on: `none` (what residents say, hear, decide and do is their model's),
    /// `all`, or names separated by commas (`template_lines`, `heard_from_topic`,
    /// `plan_gatherings`, `ask_until_yes`; docs/society.md). Default: the config's (none).
    #[arg(long, value_name = "LIST")]
    pub aids: Option<String>,
    /// Go on with the unfinished run of this name (from its last checkpoint and the phases it
    /// finished).
    #[arg(long)]
    pub resume: bool,
    /// With `--resume`: go on under a build whose code differs from the one the run began with
    /// (`simulacra --version` shows a build's source; the run's is in its `build.txt`). Without
    /// it such a resume is refused; with it each build is added to `build.txt` and the report
    /// says the sittings ran on more than one.
    #[arg(long)]
    pub other_build: bool,
    /// Wall minutes between a town's checkpoints within a game hour (it checkpoints every game
    /// hour too), taken at the end of a piece of 5 game minutes: a stop while the town runs loses
    /// about this much running and the piece under way. 0: every 5 game minutes.
    #[arg(long, default_value_t = 10)]
    pub checkpoint_minutes: u64,
}

/// The labs.
#[derive(Subcommand, Debug)]
pub enum LabCommand {
    /// Information diffusion: every resident is asked whether it knows each fact (Sam Moore's
    /// candidacy, Isabella's Valentine's Day party) at the start and the end of N game days; each
    /// yes is checked against its memories (grounded or hallucinated); holders are counted every
    /// game hour; the diffusion tree (who told whom, when, in which conversation) is read from
    /// the memories' provenance. On 2 cores with the embedded model (an AVX2 machine, November
    /// 2026): the 3-person town about 2 minutes per game hour; the 25-person town about 10
    /// minutes for its planning hour and 1–1½ minutes per probe round, a whole day about
    /// 900,000 tokens; towns side by side (`--together`) 0.79× the time of one after another;
    /// `--seeds 5 --days 2` about 9 million tokens, 13–20 hours. On a slower 2-core machine (a
    /// first-generation Zen at 2.0 GHz, prompts read about 5× slower) five towns together took
    /// about 9 hours from midnight to 15:00 of their first day (nights at about a minute per game
    /// hour, waking hours at 1–3 minutes per game minute): there `--seeds 5 --days 2` is about 40
    /// hours of running, in sittings (`--resume`; `lab status` shows where each town stands).
    Diffusion {
        /// Common options.
        #[command(flatten)]
        lab: LabArgs,
        /// Game days to run (the paper: 2).
        #[arg(long, default_value_t = 2.0, value_parser = super::args::game_days)]
        days: f64,
        /// Also ask the probes every morning at 08:00.
        #[arg(long)]
        every_morning: bool,
        /// Towns to run, each with its own seed (conversation lines are then sampled at
        /// temperature 0.7 unless `cognition.talk_temperature` is set), for the spread.
        #[arg(long, default_value_t = 1)]
        seeds: u32,
        /// Run the towns at once, on one model whose batches they share, instead of one after
        /// another: faster, and (with the embedded model's `batch_invariant`, the default)
        /// each town the same bit for bit as run alone.
        #[arg(long)]
        together: bool,
        /// The facts to follow (RON list of facts; default: the paper's two in Smallville).
        #[arg(long)]
        facts: Option<PathBuf>,
    },
    /// Relationships: every resident is asked "Do you know <name>?" about every other at the
    /// start and after N game days; network density (mutual yes) start → end, as a PNG graph
    /// and GraphML; who met whom from the conversation log. On 2 cores with the embedded model:
    /// 600 questions for 25 residents take about 5 minutes per round, plus the days run.
    Relationships {
        /// Common options.
        #[command(flatten)]
        lab: LabArgs,
        /// Game days between the two rounds (0: one round, now).
        #[arg(long, default_value_t = 2.0, value_parser = super::args::game_days)]
        days: f64,
        /// Towns to run, each with its own seed (as `lab diffusion --seeds`), for the spread.
        #[arg(long, default_value_t = 1)]
        seeds: u32,
        /// Run the towns at once on one model (as `lab diffusion --together`).
        #[arg(long)]
        together: bool,
        /// Ask the towns a finished run of several left (its report folder: `seed-<n>/town`,
        /// as after `lab diffusion --seeds 5`) instead of running towns: one round of each
        /// after its days, beside one round of the scenario at its start (the towns' own
        /// scenario, settings and start; `--config` or `--scripted-llm` choose the model).
        #[arg(long, conflicts_with_all = ["seeds", "days", "scenario", "map", "start", "load", "routine"])]
        towns: Option<PathBuf>,
    },
    /// The party: who was invited (from their memories), who planned to come (a plan item at
    /// the place during it), who came (the movement log) and why the invited others did not
    /// (a conflict, not interested, no plan). Runs the town until the gathering is over (from a
    /// save made after it, only reads). From the 25-person town's start to 19:00 on February 14
    /// on 2 cores with the embedded model: about 2 hours.
    Party {
        /// Common options.
        #[command(flatten)]
        lab: LabArgs,
        /// Which gathering (a word of its name; default: the first one organised).
        #[arg(long, default_value = "")]
        gathering: String,
        /// Towns to run, each with its own seed (as `lab diffusion --seeds`), for the spread.
        /// (A diffusion run's report follows the same gathering in each of its towns.)
        #[arg(long, default_value_t = 1)]
        seeds: u32,
        /// Run the towns at once on one model (as `lab diffusion --together`).
        #[arg(long)]
        together: bool,
    },
    /// Interviews under the ablation conditions (full / no reflection / no reflection and no
    /// planning / no memory), the same town at the same moment for each; answers compared two
    /// at a time by a judge model and rated with TrueSkill; Kruskal–Wallis over the conditions.
    /// On 2 cores with the embedded model: 5 residents × 25 questions × 4 conditions (500
    /// answers, 3,000 comparisons) take about 25 minutes.
    Interviews {
        /// Common options.
        #[command(flatten)]
        lab: LabArgs,
        /// Residents to interview, comma-separated (default: all).
        #[arg(long, value_delimiter = ',')]
        residents: Vec<String>,
        /// Questions file (`category: question` per line; default: the paper's categories).
        #[arg(long)]
        questions: Option<PathBuf>,
        /// Human-written answers (`resident | question | answer` per line), the crowdworker
        /// baseline.
        #[arg(long)]
        human: Option<PathBuf>,
        /// Conditions, comma-separated.
        #[arg(
            long,
            value_delimiter = ',',
            default_value = "Full,NoReflection,NoReflectionNoPlanning,NoMemory"
        )]
        conditions: Vec<String>,
        /// The backend that judges (a configured backend's name; default: the default one).
        #[arg(long)]
        judge: Option<String>,
        /// Game hours to run the town before the interviews (with a scenario; 0: at its start).
        #[arg(long, default_value_t = 0.0, value_parser = super::args::game_hours)]
        hours: f64,
        /// Seed of the order of the comparisons.
        #[arg(long, default_value_t = 1)]
        seed: u32,
    },
    /// Invitations, asked at one moment: every resident of a town (a save, `--load`, or each
    /// town a finished run kept, `--towns`) is asked whether it accepts the organiser's
    /// invitation to a gathering, with the request the town sends when she invites it; nothing
    /// is written and the town does not move. The decisions beside what each named as in its
    /// way, per town and over all: how a model, a prompt or a switch decides (e.g. `--set
    /// cognition.social.weigh_first=false`) without the game days a party needs. On 2 cores with
    /// the embedded model, about half a minute for each 25-resident town.
    Invitations {
        /// Common options.
        #[command(flatten)]
        lab: LabArgs,
        /// Which gathering (a word of its name; default: the first one organised).
        #[arg(long, default_value = "")]
        gathering: String,
        /// Ask the towns a finished run of several left (its report folder: `seed-<n>/town`)
        /// instead of the one world.
        #[arg(long, conflicts_with_all = ["scenario", "map", "start", "load", "routine"])]
        towns: Option<PathBuf>,
    },
    /// Where the unfinished runs in a folder stand, read from their files (ask it while a run
    /// works): whether a process works in each now, the command and builds it began with, and
    /// for each town its checkpoint's game time, the holders of each fact at its last game hour
    /// and the probes asked (diffusion), and the running its sittings have taken so far.
    Status {
        /// The folder the runs were started with (`--out`).
        #[arg(long, default_value = "labs")]
        out: PathBuf,
        /// Only the runs of this name (`--name`).
        #[arg(long)]
        name: Option<String>,
    },
}

/// Runs a lab; the exit code.
pub fn lab(command: LabCommand) -> i32 {
    if let LabCommand::Status { out, name } = &command {
        return match crate::lab::runs::status::status(out, name.as_deref()) {
            Ok(s) => {
                print!("{s}");
                0
            }
            Err(e) => fail(e),
        };
    }
    match run(command) {
        Ok(dir) => {
            println!("report: {}", dir.join("report.md").display());
            0
        }
        Err(e) => fail(e),
    }
}

/// Hands a lab's options to its measurement.
fn run(command: LabCommand) -> Result<PathBuf, String> {
    let started = Instant::now();
    let with = |a: LabArgs, go: &dyn Fn(&Common) -> Result<PathBuf, String>| {
        let world = a.world.clone();
        let load = move || world.load();
        go(&Common {
            load: &load,
            name: a.name,
            out: a.out,
            sets: a.sets,
            aids: a.aids,
            resume: a.resume,
            checkpoint_minutes: a.checkpoint_minutes,
            started,
        })
    };
    match command {
        LabCommand::Diffusion {
            lab,
            days,
            every_morning,
            seeds,
            together,
            facts,
        } => with(lab, &|c| {
            measures::diffusion::lab(
                c,
                measures::diffusion::Args {
                    days,
                    every_morning,
                    seeds,
                    together,
                    facts: facts.clone(),
                },
            )
        }),
        LabCommand::Relationships {
            lab,
            days,
            seeds,
            together,
            towns,
        } => with(lab, &|c| {
            measures::relationships::lab(
                c,
                measures::relationships::Args {
                    days,
                    seeds,
                    together,
                    towns: towns.clone(),
                },
            )
        }),
        LabCommand::Party {
            lab,
            gathering,
            seeds,
            together,
        } => with(lab, &|c| {
            measures::party::lab(
                c,
                measures::party::Args {
                    gathering: gathering.clone(),
                    seeds,
                    together,
                },
            )
        }),
        LabCommand::Invitations {
            lab,
            gathering,
            towns,
        } => with(lab, &|c| {
            measures::invitations::lab(
                c,
                measures::invitations::Args {
                    gathering: gathering.clone(),
                    towns: towns.clone(),
                },
            )
        }),
        LabCommand::Interviews {
            lab,
            residents,
            questions,
            human,
            conditions,
            judge,
            hours,
            seed,
        } => with(lab, &|c| {
            measures::interviews::lab(
                c,
                measures::interviews::Args {
                    residents: residents.clone(),
                    questions: questions.clone(),
                    human: human.clone(),
                    conditions: conditions.clone(),
                    judge: judge.clone(),
                    hours,
                    seed,
                },
            )
        }),
        LabCommand::Status { .. } => Err("`lab status` runs nothing (answered in `lab`)".into()),
    }
}
