//! `simulacra lab …`: the paper's measurements, each writing a report folder (see `src/lab`).

use super::args::WorldArgs;
use super::fail;
use crate::SimPlugin;
use crate::cognition::config::Ablation;
use crate::lab::{self, Folder};
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
        #[arg(long, default_value_t = 2.0)]
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
        #[arg(long, default_value_t = 2.0)]
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
        #[arg(long, default_value_t = 0.0)]
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
        return match lab::status::status(out, name.as_deref()) {
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

/// The world and config of a lab, with `--set` applied.
fn world(a: &LabArgs) -> Result<SimPlugin, String> {
    let mut sim = a.world.load()?;
    lab::apply_sets(&mut sim.config, &a.sets)?;
    sim.config.llm.check_files()?;
    Ok(sim)
}

fn folder(a: &LabArgs, kind: &str) -> Result<Folder, String> {
    lab::set_checkpoint_every(std::time::Duration::from_secs(
        a.checkpoint_minutes.saturating_mul(60),
    ));
    let name = a.name.clone().unwrap_or_else(|| kind.to_string());
    Folder::open(&a.out, &name, a.resume)
}

/// `seeds` towns of the lab's world (checked: 1 to 20), each with its own seed; with more than
/// one, conversation lines are sampled at temperature 0.7 unless the config sets one.
fn seeded(a: &LabArgs, seeds: u32) -> Result<Vec<(u32, SimPlugin)>, String> {
    if seeds == 0 || seeds > 20 {
        return Err("--seeds: between 1 and 20".into());
    }
    let mut towns = Vec::new();
    for s in 1..=seeds {
        let mut sim = world(a)?;
        if seeds > 1 {
            sim.config.cognition.seed = s;
            if sim.config.cognition.talk_temperature == 0.0 {
                sim.config.cognition.talk_temperature = 0.7;
            }
        }
        towns.push((s, sim));
    }
    Ok(towns)
}

fn hours(days: f64, what: &str) -> Result<u32, String> {
    if !(0.0..=30.0).contains(&days) {
        return Err(format!("{what}: {days} is not between 0 and 30"));
    }
    Ok((days * 24.0).round() as u32)
}

fn run(command: LabCommand) -> Result<PathBuf, String> {
    let t = Instant::now();
    match command {
        LabCommand::Diffusion {
            lab: a,
            days,
            every_morning,
            seeds,
            together,
            facts,
        } => {
            let facts = match &facts {
                Some(p) => lab::facts::read_facts(p)?,
                None => lab::facts::smallville(),
            };
            let hours = hours(days, "--days")?;
            let towns = seeded(&a, seeds)?;
            let base = world(&a)?;
            let folder = folder(&a, "diffusion")?;
            let opts = lab::diffusion::Options {
                facts: facts.clone(),
                hours,
                every_morning,
                seeds,
            };
            let seed_list: Vec<u32> = (1..=seeds).collect();
            // The facts are an input too: a resume with other facts is refused.
            let facts_json = serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())?;
            lab::report::write_inputs_with(
                &folder,
                &base.config,
                &base.scenario_text,
                &seed_list,
                &[("facts.json".into(), facts_json)],
            )?;
            let runs = lab::side_by_side(towns, together, |s, sim, llm| {
                lab::diffusion::run_seed_on(sim, &folder, &opts, s, llm)
            })?;
            let section = lab::diffusion::report(&runs, &facts, &folder)?;
            let intro = format!(
                "{} residents of {}, {hours} game hours from {}, {} town(s){}.\n",
                runs.first().map(|r| r.residents).unwrap_or(0),
                base.scenario.name,
                runs.first()
                    .and_then(|r| r.rounds.first())
                    .map(|r| r.at.to_string())
                    .unwrap_or_default(),
                seeds,
                if seeds > 1 {
                    " (conversation lines sampled, each town its own seed)"
                } else {
                    ""
                }
            );
            lab::finish_report(
                &folder,
                "Information diffusion",
                &base.config,
                &intro,
                &[section],
                t.elapsed().as_secs_f64(),
            )
        }
        LabCommand::Relationships {
            lab: a,
            days,
            seeds,
            together,
            towns,
        } => {
            // Kept towns are asked as they are, after their days.
            let hours = if towns.is_some() {
                0
            } else {
                hours(days, "--days")?
            };
            // The towns to ask (seed, sub-folder, first round): run here (`--seeds`), or kept by
            // a finished run (`--towns`) beside the scenario at its start, made from the first
            // kept town's own scenario, map, settings and start (`seed` 0, in `start/`).
            let mut runs: Vec<((u32, String, &str), SimPlugin)> = Vec::new();
            let sim = match &towns {
                Some(dir) => {
                    let config = world(&a)?.config;
                    let kept = lab::towns_in(dir)?;
                    let n = kept.len();
                    for (seed, path) in &kept {
                        let town = SimPlugin::from_save(path, config.clone())?;
                        runs.push(((*seed, lab::town_folder(*seed, n), "end"), town));
                    }
                    let mut start = SimPlugin::from_save(&kept[0].1, config)?;
                    start.load = None;
                    if let Some(((seed, _, _), _)) = runs.iter().find(|(_, t)| {
                        t.scenario.name != start.scenario.name
                            || t.scenario.start != start.scenario.start
                    }) {
                        return Err(format!(
                            "--towns: the towns in {} are not of one scenario and start (town {seed} differs from town {})",
                            dir.display(),
                            kept[0].0
                        ));
                    }
                    runs.insert(0, ((0, "start/".into(), "start"), start.clone()));
                    start
                }
                None => {
                    let seeded = seeded(&a, seeds)?;
                    let n = seeded.len();
                    for (seed, town) in seeded {
                        runs.push(((seed, lab::town_folder(seed, n), "start"), town));
                    }
                    world(&a)?
                }
            };
            let folder = folder(&a, "relationships")?;
            let seed_list: Vec<u32> = runs
                .iter()
                .map(|((s, _, _), _)| *s)
                .filter(|s| *s > 0)
                .collect();
            lab::report::write_inputs(&folder, &sim.config, &sim.scenario_text, &seed_list)?;
            let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
            let mut done = lab::side_by_side(runs, together, |(seed, sub, first), town, llm| {
                let run = lab::relationships::run_on(town, &folder, &sub, hours, first, llm)?;
                Ok((seed, run))
            })?;
            let scenario = if towns.is_some() {
                Some(done.remove(0).1)
            } else {
                None
            };
            let n = done.len();
            let section = lab::relationships::towns_report(&done, scenario.as_ref(), &folder)?;
            let residents = done
                .first()
                .map(|(_, r)| r.rounds[0].names.len())
                .unwrap_or(0);
            let intro = match &towns {
                Some(dir) => format!(
                    "{residents} residents of {name}: the scenario at its start, and the {n} town(s) kept in {}.\n",
                    dir.display()
                ),
                None => format!(
                    "{residents} residents of {name}; {hours} game hours between the rounds; {n} town(s){}.\n",
                    if n > 1 {
                        " (conversation lines sampled, each town its own seed)"
                    } else {
                        ""
                    }
                ),
            };
            lab::finish_report(
                &folder,
                "Relationships",
                &config,
                &intro,
                &[section],
                t.elapsed().as_secs_f64(),
            )
        }
        LabCommand::Party {
            lab: a,
            gathering,
            seeds,
            together,
        } => {
            let towns = seeded(&a, seeds)?;
            let sim = world(&a)?;
            let folder = folder(&a, "party")?;
            let seed_list: Vec<u32> = towns.iter().map(|(s, _)| *s).collect();
            lab::report::write_inputs(&folder, &sim.config, &sim.scenario_text, &seed_list)?;
            let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
            let n = towns.len();
            let runs = lab::side_by_side(towns, together, |seed, town, llm| {
                let run =
                    lab::party::run_on(town, &folder, &lab::town_folder(seed, n), &gathering, llm)?;
                Ok((seed, run))
            })?;
            let section = lab::party::towns_report(&runs, &folder)?;
            lab::finish_report(
                &folder,
                "The party",
                &config,
                &format!("{name}; {n} town(s).\n"),
                &[section],
                t.elapsed().as_secs_f64(),
            )
        }
        LabCommand::Invitations {
            lab: a,
            gathering,
            towns,
        } => {
            let sim = world(&a)?;
            let config = sim.config.clone();
            let mut worlds: Vec<(String, SimPlugin)> = Vec::new();
            match &towns {
                Some(dir) => {
                    for (seed, path) in lab::towns_in(dir)? {
                        // A kept town runs on its own settings: `--set` changes them here.
                        let mut town = SimPlugin::from_save(&path, config.clone())?;
                        lab::apply_sets(&mut town.config, &a.sets)?;
                        worlds.push((format!("town {seed}"), town));
                    }
                }
                None => worlds.push(("town".into(), sim.clone())),
            }
            // What the towns run on (a kept town's own settings, `--set` applied).
            let config = worlds
                .first()
                .map(|(_, w)| w.config.clone())
                .unwrap_or(config);
            let worlds_weigh_first = config.cognition.social.weigh_first;
            let folder = folder(&a, "invitations")?;
            lab::report::write_inputs(&folder, &config, &sim.scenario_text, &[])?;
            let runs = worlds
                .into_iter()
                .map(|(label, town)| lab::invitations::run(town, &label, &gathering))
                .collect::<Result<Vec<_>, _>>()?;
            let weigh_first = worlds_weigh_first;
            let section = lab::invitations::report(&runs, &folder, weigh_first)?;
            lab::finish_report(
                &folder,
                "Invitations",
                &config,
                &format!("{}; {} town(s).\n", sim.scenario.name, runs.len()),
                &[section],
                t.elapsed().as_secs_f64(),
            )
        }
        LabCommand::Status { .. } => Err("`lab status` runs nothing (answered in `lab`)".into()),
        LabCommand::Interviews {
            lab: a,
            residents,
            questions,
            human,
            conditions,
            judge,
            hours: h,
            seed,
        } => {
            let questions = match &questions {
                Some(p) => lab::interviews::read_questions(p)?,
                None => lab::interviews::parse_questions(
                    lab::interviews::DEFAULT_QUESTIONS,
                    "(the default questions)",
                )?,
            };
            let human_path = human.clone();
            let human = human
                .as_deref()
                .map(lab::interviews::read_human)
                .transpose()?;
            let conditions: Vec<Ablation> = conditions
                .iter()
                .map(|c| {
                    Ablation::ALL
                        .into_iter()
                        .find(|a| format!("{a:?}").eq_ignore_ascii_case(c.trim()))
                        .ok_or_else(|| {
                            format!("--conditions: {c:?} is none of Full, NoReflection, NoReflectionNoPlanning, NoMemory")
                        })
                })
                .collect::<Result<_, _>>()?;
            if conditions.is_empty() {
                return Err("--conditions: name at least one".into());
            }
            let hours = hours(h / 24.0, "--hours")?;
            let mut sim = world(&a)?;
            if let Some(j) = &judge {
                if !sim.config.llm.backends.iter().any(|b| b.name() == j) {
                    return Err(format!(
                        "--judge: no backend named {j:?} in the config; its backends: {}",
                        sim.config
                            .llm
                            .backends
                            .iter()
                            .map(|b| b.name().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                sim.config.llm.routes.insert("lab_judge".into(), j.clone());
            }
            // Residents named (here and in the human answers) are checked before any work.
            {
                let mut app = crate::headless_app(sim.clone());
                app.update();
                let all = lab::residents(app.world_mut());
                lab::find_residents(&all, &residents)?;
                if let (Some(h), Some(path)) = (&human, &human_path) {
                    lab::interviews::check_human(h, &all, path)?;
                }
            }
            let folder = folder(&a, "interviews")?;
            lab::report::write_inputs(&folder, &sim.config, &sim.scenario_text, &[seed])?;
            let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
            // The moment every condition is interviewed at: a checkpoint in the run's folder.
            let saves = folder.work.join("saves");
            let checkpoint = saves.join("checkpoint");
            if !checkpoint.join("meta.ron").exists() || h > 0.0 {
                let mut town = lab::open_town(sim, &saves)?;
                // The step they are at, kept so that a run stopped on the way goes on to it.
                let end = match folder.read::<u64>("interview_step.json")? {
                    Some(end) => end,
                    None => {
                        let c = town.clock();
                        let end = c.step + hours as u64 * (3600 / c.sec_per_step as u64);
                        folder.write("interview_step.json", &end)?;
                        end
                    }
                };
                town.run_until(end, "town before the interviews", |_, _| Ok(()))?;
                town.checkpoint()?;
            }
            let make = |cond: Ablation| -> Result<SimPlugin, String> {
                let mut s = SimPlugin::from_save(&checkpoint, config.clone())?;
                s.config.cognition.ablation = cond;
                s.config.saves.autosave_minutes = 0;
                s.config.saves.dir = folder.work.join("forks").to_string_lossy().into();
                Ok(s)
            };
            let opts = lab::interviews::Options {
                residents,
                questions,
                conditions,
                human,
                judge,
                seed,
            };
            let run = lab::interviews::run(&make, &folder, &opts)?;
            let section = lab::interviews::report(&run, &folder)?;
            lab::finish_report(
                &folder,
                "Interviews",
                &config,
                &format!("{name}.\n"),
                &[section],
                t.elapsed().as_secs_f64(),
            )
        }
    }
}
