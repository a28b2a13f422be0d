//! `lab diffusion`: how far facts spread through the town in ordinary conversations (the paper's
//! §7.1.1: Sam's candidacy 1 → 8 of 25, Isabella's party 1 → 13 in two game days).
//!
//! At the start and the end (and, with `every_morning`, at 08:00 each day) every resident is
//! asked each fact's probe (a shaped yes/no with what it would say); a "yes" whose words name the
//! fact counts by interview when a memory carries it, and is **hallucinated** when none does.
//! Every game hour the holders by memory (memories whose words carry the fact, no model) are
//! counted, and at the end the diffusion tree is read from the memories' provenance (who told
//! whom, when, in which conversation) and what carried each fact heard (the model's own words, a
//! template, a rule). The facts are the town's own (its scenario's), or a facts file's.

use crate::SimPlugin;
use crate::lab::facts::{Fact, Source};
use crate::lab::facts::{Hour, Round, holders, probe_round, tree};
use crate::lab::report::stats::{count, mean_sd, pct};
use crate::lab::report::{Cost, cost_section, csv, labelled, stats, table};
use crate::lab::runs::folder::Folder;
use crate::llm::Llm;
use crate::sim::clock::SimClock;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// The facts to follow.
    pub facts: Vec<Fact>,
    /// Game hours to run (the paper: 48).
    pub hours: u32,
    /// Also probe every morning at 08:00.
    pub every_morning: bool,
    /// Towns to run (each its own seed).
    pub seeds: u32,
}

/// One town's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SeedRun {
    /// Its seed.
    pub seed: u32,
    /// Probe rounds, in order.
    pub rounds: Vec<Round>,
    /// Holders every game hour.
    pub hours: Vec<Hour>,
    /// Fact → how each holder came to hold it, at the end.
    pub tree: BTreeMap<String, Vec<Source>>,
    /// What it cost.
    pub costs: Vec<Cost>,
    /// Residents.
    pub residents: usize,
    /// What the town's conversations carried, at the end (the headless summary's talk lines:
    /// lines with a topic, about news, in the model's own words, templates, invitations kept).
    #[serde(default)]
    pub talk: String,
    /// Who talked with whom, how often, and where the waking hours went, at the end.
    #[serde(default)]
    pub social: Option<crate::lab::social::Social>,
    /// The town's cost in the sitting under way, up to its last checkpoint: a run stopped and
    /// resumed keeps each sitting's cost as a phase of its own.
    #[serde(default)]
    pub sitting: Option<Cost>,
    /// The gathering the town follows (the first one organised): invited, planned, came.
    #[serde(default)]
    pub party: Option<crate::lab::gathering::Run>,
    /// Of each fact, what carried the memories of it heard in conversations, at the end.
    #[serde(default)]
    pub heard: BTreeMap<String, crate::lab::facts::HeardBy>,
    /// The aids that were on ("none", or their names).
    #[serde(default)]
    pub aids: String,
    /// Reflections each resident began over the run, at the end.
    #[serde(default)]
    pub reflections: Vec<u32>,
}

/// Runs one town (`sim`) for the options' hours with probes; resumes from the folder.
pub fn run_seed(
    sim: SimPlugin,
    folder: &Folder,
    opts: &Options,
    seed: u32,
) -> Result<SeedRun, String> {
    run_seed_on(sim, folder, opts, seed, None)
}

/// [`run_seed`] on a handle of a shared runtime (towns side by side: [`crate::lab::town::side_by_side`]).
pub fn run_seed_on(
    sim: SimPlugin,
    folder: &Folder,
    opts: &Options,
    seed: u32,
    llm: Option<Llm>,
) -> Result<SeedRun, String> {
    let sub = format!("seed-{seed}");
    let data = format!("{sub}/diffusion.json");
    let mut run: SeedRun = folder.read(&data)?.unwrap_or(SeedRun {
        seed,
        ..Default::default()
    });
    let mut town = crate::lab::town::open_town_on(sim, &folder.work.join(&sub).join("saves"), llm)?;
    // A run stopped after an hour's data was written and before its checkpoint goes on from
    // the checkpoint before: what was written past it is measured again, not kept twice.
    let now = town.clock().now;
    run.hours.retain(|h| h.at <= now);
    run.rounds.retain(|r| r.at <= now);
    if let Some(p) = run.party.as_mut() {
        crate::lab::gathering::rewind(p, now);
    }
    let facts = &opts.facts;
    run.residents = town.residents().len();
    run.aids = town
        .app
        .world()
        .resource::<crate::cognition::config::Cognition>()
        .0
        .aids
        .words();
    if run.party.is_none() {
        run.party = crate::lab::gathering::follow(town.app.world_mut());
    }
    let per_hour = 3600 / town.clock().sec_per_step as u64;
    if run.rounds.is_empty() {
        let before = stats(town.app.world());
        let t = Instant::now();
        let round = probe_round(town.app.world_mut(), facts, "start");
        run.costs.push(Cost::of(
            "probes at the start",
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            run.residents,
            0.0,
        ));
        run.rounds.push(round);
        run.hours.push(holders(town.app.world_mut(), facts));
        town.checkpoint()?;
        folder.write(&data, &run)?;
    }
    let start_step = {
        let start = run.rounds[0].at;
        let c = town.clock();
        c.step - ((c.now.0 - start.0) / c.sec_per_step as i64).max(0) as u64
    };
    let end = start_step + opts.hours as u64 * per_hour;
    // A sitting cut short keeps what it cost up to its last checkpoint, as a phase of its own.
    if let Some(c) = (run.sitting.take()).and_then(|c| c.at_checkpoint(town.clock().step)) {
        run.costs.push(c);
    }
    if town.clock().step < end {
        let before = stats(town.app.world());
        let t = Instant::now();
        let from = town.clock().step;
        let every_morning = opts.every_morning;
        let work = folder.clone();
        let residents = run.residents;
        let phase = move |step: u64| {
            let h = (step - from) as f64 / per_hour as f64;
            if from == start_step {
                format!("{} game hours of the town", count(h))
            } else {
                format!(
                    "{} game hours of the town (resumed at hour {})",
                    count(h),
                    (from - start_step) / per_hour
                )
            }
        };
        let mut saved = std::mem::take(&mut run);
        town.run_until(end, &format!("town {seed}"), |world, on_the_hour| {
            if on_the_hour {
                saved.hours.push(holders(world, facts));
                let now = world.resource::<SimClock>().now;
                if every_morning && now.minute_of_day() == 8 * 60 {
                    let label = format!("morning of {}", now.date_string());
                    saved.rounds.push(probe_round(world, facts, &label));
                }
                if let Some(p) = saved.party.as_mut() {
                    crate::lab::gathering::follow_hour(p, world);
                }
            }
            let step = world.resource::<SimClock>().step;
            let cost = Cost::of(
                &phase(step),
                &stats(world).since(&before),
                t.elapsed().as_secs_f64(),
                residents,
                (step - from) as f64 / per_hour as f64,
            );
            saved.sitting = Some(cost.keeping(step, saved.sitting.take()));
            // What the checkpoint after this goes on from.
            work.write(&data, &saved)
        })?;
        run = saved;
        run.sitting = None;
        let step = town.clock().step;
        run.costs.push(Cost::of(
            &phase(step),
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            run.residents,
            (step - from) as f64 / per_hour as f64,
        ));
        folder.write(&data, &run)?;
    }
    if run.rounds.len() < 2 || run.rounds.last().is_some_and(|r| r.label != "end") {
        let before = stats(town.app.world());
        let t = Instant::now();
        let round = probe_round(town.app.world_mut(), facts, "end");
        run.costs.push(Cost::of(
            "probes at the end",
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            run.residents,
            0.0,
        ));
        run.rounds.push(round);
        run.tree = tree(town.app.world_mut(), facts);
        run.heard = crate::lab::facts::heard_by(town.app.world_mut(), facts);
        run.talk = crate::cognition::talk::report::talk_report(town.app.world_mut())
            .text(run.residents, opts.hours as f64);
        run.reflections = town
            .app
            .world_mut()
            .query::<&crate::cognition::resident::scratch::Scratch>()
            .iter(town.app.world())
            .map(|s| s.reflection.begun)
            .collect();
        let names: Vec<String> = town.residents().into_iter().map(|(n, _)| n).collect();
        run.social = Some(crate::lab::social::social(town.app.world(), &names));
        folder.write(&data, &run)?;
    }
    Ok(run)
}

/// The paper's figures for a fact, "1 → 8 of 25", or "–".
fn paper_words(f: &Fact) -> String {
    f.paper
        .map(|p| format!("{} → {} of {}", p.start, p.end, p.residents))
        .unwrap_or_else(|| "–".into())
}

/// The report's section on one fact over the seeds.
pub fn report(runs: &[SeedRun], facts: &[Fact], folder: &Folder) -> Result<String, String> {
    let mut md = String::from("## Information diffusion\n\n");
    md.push_str(
        "Each resident was asked the fact's probe at the start and at the end. *Holders by memory* \
         count residents with a memory whose words carry the fact (its distinctive words and its \
         subject: `src/agent/carry.rs`), whatever they answered; *holders by interview* those who \
         said yes with an answer that names the fact (every group of the fact's `answer_all`, as \
         whole words) and a memory behind it; a yes that names it with no memory behind it is \
         *hallucinated*. *Heard* counts the memories of the fact heard in conversations and what \
         carried each: the model's own words, a template (the `template_lines` aid) or a rule \
         (the `heard_from_topic` aid).\n\n",
    );
    let mut against = String::new();
    let mut rows = Vec::new();
    let mut data_rows = Vec::new();
    for f in facts {
        let mut starts = Vec::new();
        let mut ends = Vec::new();
        let mut starts_aware = Vec::new();
        let mut ends_aware = Vec::new();
        for r in runs {
            let (Some(s), Some(e)) = (r.rounds.first(), r.rounds.last()) else {
                continue;
            };
            let (sc, ec) = (s.counts(&f.name), e.counts(&f.name));
            let n = sc.residents;
            let (sh, eho) = (sc.holders, ec.holders);
            starts.push(sh as f64 / n.max(1) as f64);
            ends.push(eho as f64 / n.max(1) as f64);
            starts_aware.push(sc.aware as f64);
            ends_aware.push(ec.aware as f64);
            let (contra, en) = e.contradictions();
            let mark = if e.informative() {
                ""
            } else {
                " (not informative)"
            };
            let heard = r
                .heard
                .get(&f.name)
                .map(|h| h.words())
                .unwrap_or_else(|| "–".into());
            rows.push(vec![
                f.name.clone(),
                r.seed.to_string(),
                format!("{sh} → {eho} of {n} ({} → {})", pct(sh, n), pct(eho, n)),
                heard,
                format!(
                    "{} → {} (said yes {} → {}){mark}",
                    sc.aware, ec.aware, sc.yes, ec.yes
                ),
                format!("{} of {}{mark}", ec.hallucinated, ec.yes),
                format!("{contra} of {en} ({})", pct(contra, en)),
                paper_words(f),
            ]);
            for round in &r.rounds {
                for p in round.probes.iter().filter(|p| p.fact == f.name) {
                    data_rows.push(vec![
                        r.seed.to_string(),
                        round.label.clone(),
                        round.at.to_string(),
                        p.fact.clone(),
                        p.resident.clone(),
                        if p.yes { "yes" } else { "no" }.into(),
                        p.class().into(),
                        p.right.to_string(),
                        p.fallback.to_string(),
                        p.contradicts.to_string(),
                        p.says.clone(),
                        p.evidence.clone().unwrap_or_default(),
                    ]);
                }
            }
        }
        if runs.len() > 1 {
            let n = runs.first().map_or(0, |r| r.residents);
            let of = |v: &[f64]| v.iter().map(|x| x * n as f64).collect::<Vec<f64>>();
            let mmm = crate::lab::report::stats::min_median_max;
            rows.push(vec![
                f.name.clone(),
                "mean ± sd".into(),
                format!("{} → {}", mean_sd(&starts), mean_sd(&ends)),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            rows.push(vec![
                f.name.clone(),
                "min / median / max".into(),
                format!("{} → {} of {n}", mmm(&of(&starts)), mmm(&of(&ends))),
                String::new(),
                format!("{} → {}", mmm(&starts_aware), mmm(&ends_aware)),
                String::new(),
                String::new(),
                f.paper
                    .map(|p| {
                        format!(
                            "the original's re-runs: {}–{} of {}",
                            p.reruns.0, p.reruns.1, p.residents
                        )
                    })
                    .unwrap_or_default(),
            ]);
            // Only for the paper's town size and days: the re-runs' ranges are of its residents
            // after two game days.
            if let Some(p) = f.paper.filter(|p| {
                runs.iter().all(|r| {
                    let span = r.rounds.first().zip(r.rounds.last());
                    r.residents == p.residents as usize
                        && span.is_some_and(|(s, e)| e.at.0 - s.at.0 == 48 * 3600)
                })
            }) {
                let (lo, hi) = (p.reruns.0 as f64, p.reruns.1 as f64);
                for (what, v) in [
                    ("holders by memory", of(&ends)),
                    ("holders by interview", ends_aware.clone()),
                ] {
                    let m = crate::lab::report::stats::median(&v);
                    against.push_str(&format!(
                        "- {}: the median town ends with {} of {n} {what}, against the original's re-runs on one model: {}.\n",
                        f.name,
                        crate::lab::report::stats::count(m),
                        crate::lab::report::stats::beside(m, lo, hi)
                    ));
                }
            }
        }
    }
    md.push_str(&table(
        &[
            "fact",
            "seed",
            "holders by memory, start → end",
            "heard in conversations, by what carried it (end)",
            "holders by interview (a yes naming it, a memory behind it), start → end",
            "hallucinated (a yes naming it, no memory behind it) at the end",
            "answers contradicting their own words (end, all facts)",
            "the paper (2 days)",
        ],
        &rows,
    ));
    if !against.is_empty() {
        md.push_str(&format!(
            "\nBeside the spread of the original's re-runs (the end of two game days):\n\n{against}"
        ));
    }
    // The hallucination figure counts only rounds whose answers are informative.
    let ends: Vec<&Round> = runs.iter().filter_map(|r| r.rounds.last()).collect();
    let kept: Vec<&&Round> = ends.iter().filter(|r| r.informative()).collect();
    let all_yes: usize = kept
        .iter()
        .flat_map(|r| r.probes.iter())
        .filter(|p| p.yes)
        .count();
    let halluc: usize = kept
        .iter()
        .flat_map(|r| r.probes.iter())
        .filter(|p| p.class() == "hallucinated")
        .count();
    let (contra, answered) = ends.iter().fold((0, 0), |(c, n), r| {
        let (rc, rn) = r.contradictions();
        (c + rc, n + rn)
    });
    md.push_str(&format!(
        "\nThe first figure is the holders by memory (the memory that carries it for each holder, and its provenance, in tree.csv), whatever they answer; the probes' answers come after. Answers whose own words contradict their yes or no (\"yes\" with \"No, I haven't heard\"): {contra} of {answered} at the end ({}); a town where more than {:.0} % do is marked *not informative* and left out of the next figure.\n\n",
        pct(contra, answered),
        100.0 * crate::lab::ask::CONTRADICTION_LIMIT
    ));
    md.push_str(&format!(
        "Hallucinated answers (a yes naming the fact, no memory behind it) at the end: {halluc} of {all_yes} yes answers ({}) in {} of {} towns with informative answers; the paper: 6 of 453 awareness answers (1.3 %).\n\n",
        pct(halluc, all_yes),
        kept.len(),
        ends.len()
    ));
    folder.write_text(
        "probes.csv",
        &csv(
            &[
                "seed",
                "round",
                "time",
                "fact",
                "resident",
                "answer",
                "class",
                "right",
                "fallback",
                "contradicts",
                "says",
                "evidence",
            ],
            &data_rows,
        ),
    )?;
    // Awareness over game time (holders by memory, every hour), one line per fact and seed.
    let mut series = Vec::new();
    for r in runs {
        for f in facts {
            let pts: Vec<(f64, f64)> = r
                .hours
                .iter()
                .map(|h| {
                    (
                        (h.at.0 - r.hours[0].at.0) as f64 / 3600.0,
                        *h.holders.get(&f.name).unwrap_or(&0) as f64,
                    )
                })
                .collect();
            series.push((format!("{} (seed {})", f.name, r.seed), pts));
        }
    }
    let n = runs.first().map(|r| r.residents).unwrap_or(0);
    crate::lab::report::plot::lines(
        &folder.work.join("awareness.png"),
        "Residents holding each fact (by memory), every game hour",
        "game hours from the start",
        "residents",
        n as f64,
        &series,
    )?;
    md.push_str("![awareness over game time](awareness.png)\n\n");
    let socials: Vec<(u32, &crate::lab::social::Social)> = runs
        .iter()
        .filter_map(|r| r.social.as_ref().map(|s| (r.seed, s)))
        .collect();
    if socials.len() > 1 {
        let per_day: Vec<f64> = socials
            .iter()
            .map(|(_, s)| crate::lab::report::stats::median(&s.per_day()))
            .collect();
        let met: Vec<f64> = socials.iter().map(|(_, s)| s.met_share()).collect();
        md.push_str(&format!(
            "### Social life\n\nConversations per resident per game day (each town's median): {}; share of pairs of residents who talked at least once: {} (the paper's network density, from \"Do you know …?\", went 0.167 → 0.74).\n\n",
            crate::lab::report::stats::min_median_max(&per_day),
            crate::lab::report::stats::min_median_max(&met)
        ));
        md.push_str(&crate::lab::social::Social::towns_telling(
            socials.iter().map(|(_, s)| *s),
        ));
    }
    let parties: Vec<(u32, &crate::lab::gathering::Run)> = runs
        .iter()
        .filter_map(|r| r.party.as_ref().map(|p| (r.seed, p)))
        .collect();
    md.push_str(&super::party::towns_section(&parties, folder)?);
    for (seed, s) in &socials {
        md.push_str(&s.section(
            &format!(", seed {seed}"),
            folder,
            &format!("social-seed-{seed}.csv"),
        )?);
    }
    for r in runs.iter().filter(|r| !r.talk.is_empty()) {
        md.push_str(&format!(
            "### Conversations, seed {}\n\nThe whole conversation log of the town at the end (per agent per game hour of the run):\n\n```\n{}```\n\n",
            r.seed, r.talk
        ));
    }
    for r in runs {
        // The run's hours: from its first probe round to its last.
        let hours = match (r.rounds.first(), r.rounds.last()) {
            (Some(a), Some(b)) => (b.at.0 - a.at.0) as f64 / 3600.0,
            _ => 0.0,
        };
        if let Some(w) = crate::memory::reflect::per_day_words(&r.reflections, hours) {
            md.push_str(&format!(
                "Reflections begun per resident per game day, seed {}: {w} (the paper's residents reflect about two or three times a day).\n\n",
                r.seed
            ));
        }
    }
    // The diffusion tree.
    md.push_str("### Who told whom\n\nFrom the memories' provenance (first memory of the fact each holder has; a told memory names its speaker and conversation, and its chain goes back through every retelling).\n\n");
    let mut tree_rows = Vec::new();
    for r in runs {
        for (fact, sources) in &r.tree {
            let mut rows = Vec::new();
            for s in sources {
                tree_rows.push(vec![
                    r.seed.to_string(),
                    fact.clone(),
                    s.holder.clone(),
                    s.from.clone().unwrap_or_default(),
                    s.at.to_string(),
                    s.conversation.clone().unwrap_or_default(),
                    s.chain.join(" <- "),
                    s.memory.clone(),
                ]);
                rows.push(vec![
                    s.holder.clone(),
                    s.from.clone().unwrap_or_else(|| "(first holder)".into()),
                    s.at.to_string(),
                    s.chain.join(" ← "),
                ]);
            }
            md.push_str(&format!("**{fact}**, seed {}:\n\n", r.seed));
            md.push_str(&table(&["holder", "told by", "when", "chain"], &rows));
            md.push('\n');
        }
    }
    folder.write_text(
        "tree.csv",
        &csv(
            &[
                "seed",
                "fact",
                "holder",
                "from",
                "time",
                "conversation",
                "chain",
                "memory",
            ],
            &tree_rows,
        ),
    )?;
    let several = runs.len() > 1;
    let costs: Vec<Cost> = runs
        .iter()
        .flat_map(|r| labelled(r.seed, several, &r.costs))
        .collect();
    md.push_str(&cost_section(&costs));
    Ok(md)
}

/// What `lab diffusion` is asked (its command line's own options).
#[derive(Debug, Clone)]
pub struct Args {
    /// See `simulacra lab diffusion --help`.
    pub days: f64,
    /// See `simulacra lab diffusion --help`.
    pub every_morning: bool,
    /// See `simulacra lab diffusion --help`.
    pub seeds: u32,
    /// See `simulacra lab diffusion --help`.
    pub together: bool,
    /// See `simulacra lab diffusion --help`.
    pub facts: Option<PathBuf>,
}

/// `lab diffusion`: runs the towns (each its seed, one after another or together) with their probes, and writes the report.
pub fn lab(c: &super::Common, args: Args) -> Result<std::path::PathBuf, String> {
    let Args {
        days,
        every_morning,
        seeds,
        together,
        facts,
    } = args;
    let facts = match &facts {
        Some(p) => crate::lab::facts::read_facts(p)?,
        None => {
            let scenario = c.world()?.scenario;
            crate::lab::facts::check(&scenario.facts)?;
            if scenario.facts.is_empty() {
                return Err(format!(
                    "{}: the scenario names no facts to follow (its `facts`); give them with --facts FILE",
                    scenario.source.display()
                ));
            }
            scenario.facts
        }
    };
    let hours = super::hours(days, "--days")?;
    let towns = c.seeded(seeds)?;
    let base = c.world()?;
    let folder = c.folder("diffusion")?;
    let opts = Options {
        facts: facts.clone(),
        hours,
        every_morning,
        seeds,
    };
    let seed_list: Vec<u32> = (1..=seeds).collect();
    // The facts are an input too: a resume with other facts is refused.
    let facts_json = serde_json::to_string_pretty(&facts).map_err(|e| e.to_string())?;
    crate::lab::runs::inputs::write_inputs_with(
        &folder,
        &base.config,
        &base.scenario_text,
        &seed_list,
        &[("facts.json".into(), facts_json)],
    )?;
    let runs = crate::lab::town::side_by_side(towns, together, |s, sim, llm| {
        run_seed_on(sim, &folder, &opts, s, llm)
    })?;
    let section = report(&runs, &facts, &folder)?;
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
    super::finish_report(
        &folder,
        "Information diffusion",
        &base.config,
        &intro,
        &[section],
        c.started.elapsed().as_secs_f64(),
    )
}
