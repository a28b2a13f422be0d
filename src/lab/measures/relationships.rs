//! `lab relationships`: who knows whom, start → end (the paper's §7.1.2: network density
//! 0.167 → 0.74). Every resident is asked "Do you know <name>?" about every other (a shaped yes
//! or no, checked against the memory stream as the diffusion probes are); two residents are
//! joined when both say yes, and the density is η = 2|E| / (|V|(|V| − 1)). Who met whom, and how
//! often, comes from the conversation log.

use crate::SimPlugin;
use crate::lab::knowing::{KnowRound, graphml, know_round, met_list};
use crate::lab::report::{Cost, cost_section, csv, labelled, stats, table};
use crate::lab::runs::folder::Folder;
use crate::lab::town::Sitting;
use crate::lab::town::open_town_on;
use crate::llm::Llm;
use bevy::prelude::*;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Instant;

/// A relationships run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// Start and end rounds.
    pub rounds: Vec<KnowRound>,
    /// Conversations per pair over the run.
    pub met: Vec<(String, String, usize)>,
    /// Who talked with whom, how often, and where the waking hours went, at the last round.
    #[serde(default)]
    pub social: Option<crate::lab::social::Social>,
    /// Costs.
    pub costs: Vec<Cost>,
    /// The cost of the sitting under way, up to its last checkpoint (see [`Sitting`]).
    #[serde(default)]
    pub sitting: Option<Cost>,
}

/// Runs the town `hours` game hours between two rounds (0: one round only).
pub fn run(sim: SimPlugin, folder: &Folder, hours: u32) -> Result<Run, String> {
    run_on(sim, folder, "", hours, "start", None)
}

/// [`run`] in a sub-folder of the run's (`sub`: `""`, or `"seed-3/"` for one town of several),
/// its first round labelled `first` ("start"; "end" for a town read after its days), its
/// requests going to `llm` when given (towns side by side: [`crate::lab::town::side_by_side`]).
pub fn run_on(
    sim: SimPlugin,
    folder: &Folder,
    sub: &str,
    hours: u32,
    first: &str,
    llm: Option<Llm>,
) -> Result<Run, String> {
    let data = format!("{sub}relationships.json");
    let data = data.as_str();
    let mut run: Run = folder.read(data)?.unwrap_or_default();
    let mut town = open_town_on(sim, &folder.work.join(sub).join("saves"), llm)?;
    let label = crate::lab::town::town_label(sub);
    let agents = town.residents().len();
    if run.rounds.is_empty() {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), first, &label);
        run.costs.push(Cost::of(
            &format!("who-knows-whom ({first})"),
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            agents,
            0.0,
        ));
        run.rounds.push(r);
        town.checkpoint()?;
        folder.write(data, &run)?;
    }
    if hours == 0 {
        // One round, of the town as it is (a save read after its days: what its logs hold).
        if run.social.is_none() {
            run.met = met_list(town.app.world());
            let names: Vec<String> = town.residents().into_iter().map(|(n, _)| n).collect();
            run.social = Some(crate::lab::social::social(town.app.world(), &names));
            folder.write(data, &run)?;
        }
        return Ok(run);
    }
    let c = town.clock();
    let start = run.rounds[0].at;
    let start_step = c.step - ((c.now.0 - start.0) / c.sec_per_step as i64).max(0) as u64;
    let end = start_step + hours as u64 * (3600 / c.sec_per_step as u64);
    // A sitting cut short keeps what it cost up to its last checkpoint, as a phase of its own.
    let resumed = run.sitting.is_some();
    if let Some(cost) = (run.sitting.take()).and_then(|cost| cost.at_checkpoint(c.step)) {
        run.costs.push(cost);
    }
    if c.step < end {
        let sitting = Sitting::begin(&mut town, resumed || c.step > start_step);
        sitting.run(&mut town, end, &label, folder, data, &mut run, |r| {
            &mut r.sitting
        })?;
        run.sitting = None;
        run.costs.push(sitting.cost(town.app.world()));
        folder.write(data, &run)?;
    }
    if run.rounds.len() < 2 {
        let before = stats(town.app.world());
        let t = Instant::now();
        let r = know_round(town.app.world_mut(), "end", &label);
        run.costs.push(Cost::of(
            "who-knows-whom at the end",
            &stats(town.app.world()).since(&before),
            t.elapsed().as_secs_f64(),
            agents,
            0.0,
        ));
        run.rounds.push(r);
        run.met = met_list(town.app.world());
        let names: Vec<String> = town.residents().into_iter().map(|(n, _)| n).collect();
        run.social = Some(crate::lab::social::social(town.app.world(), &names));
        folder.write(data, &run)?;
    }
    Ok(run)
}

/// The columns of [`KnowRound::row`].
const ROUND_COLUMNS: [&str; 6] = [
    "density (mutual yes)",
    "density (grounded)",
    "density (by memory)",
    "edges",
    "yes with no memory behind it",
    "answers contradicting their own words",
];

/// How the densities are read, and the paper's.
fn explained() -> String {
    format!(
        "Every resident was asked \"Do you know <name>?\" about every other. Two residents are joined when both said yes; *grounded* joins need a memory naming the other on both sides; *by memory* joins are the pairs where each holds a memory naming the other, whatever they answered (the figure that needs no answer to mean anything). Density η = 2|E| / (|V|(|V| − 1)). A round where more than {:.0} % of answers contradict their own words (\"yes\" with \"No, I don't know her\") is marked *not informative*. The paper: 0.167 → 0.74 over two game days; 6 of 453 awareness answers (1.3 %) hallucinated.\n\n",
        100.0 * crate::lab::ask::CONTRADICTION_LIMIT
    )
}

/// Writes a town's answers (`knows.csv`), its graphs as GraphML (`knows-<round>.graphml`) and
/// the last round's graph (`knows.png`, new joins since the first round or `base` in colour)
/// into `sub` of the run's folder.
fn files(run: &Run, folder: &Folder, sub: &str, base: Option<&KnowRound>) -> Result<(), String> {
    let mut data = Vec::new();
    for r in &run.rounds {
        for k in &r.answers {
            data.push(vec![
                r.label.clone(),
                k.asker.clone(),
                k.about.clone(),
                if k.yes { "yes" } else { "no" }.into(),
                k.grounded.to_string(),
                k.fallback.to_string(),
                k.contradicts.to_string(),
                k.says.clone(),
            ]);
        }
        folder.write_text(
            &format!("{sub}knows-{}.graphml", r.label),
            &graphml(r, &run.met),
        )?;
    }
    folder.write_text(
        &format!("{sub}knows.csv"),
        &csv(
            &[
                "round",
                "asker",
                "about",
                "answer",
                "grounded",
                "fallback",
                "contradicts",
                "says",
            ],
            &data,
        ),
    )?;
    if let Some(last) = run.rounds.last() {
        let first = base
            .or(run.rounds.first())
            .filter(|f| f.label != last.label);
        crate::lab::report::plot::graph(
            &folder.work.join(sub).join("knows.png"),
            &format!(
                "Who knows whom ({}; mutual yes; new since the start in colour)",
                last.at
            ),
            &last.names,
            &last.edges(false),
            first.map(|f| f.edges(false)).as_ref(),
        )?;
    }
    Ok(())
}

/// The report's section.
pub fn report(run: &Run, folder: &Folder) -> Result<String, String> {
    let mut md = String::from("## Relationships\n\n");
    md.push_str(&explained());
    let rows: Vec<Vec<String>> = run
        .rounds
        .iter()
        .map(|r| [vec![r.label.clone(), r.at.to_string()], r.row()].concat())
        .collect();
    md.push_str(&table(
        &[&["round", "time"][..], &ROUND_COLUMNS[..]].concat(),
        &rows,
    ));
    md.push('\n');
    files(run, folder, "", None)?;
    if !run.rounds.is_empty() {
        md.push_str(
            "![who knows whom](knows.png)\n\nThe graphs as GraphML (for Gephi or networkx): ",
        );
        md.push_str(
            &run.rounds
                .iter()
                .map(|r| format!("`knows-{}.graphml`", r.label))
                .collect::<Vec<_>>()
                .join(", "),
        );
        md.push_str(".\n\n");
    }
    if !run.met.is_empty() {
        let mut met = run.met.clone();
        met.sort_by_key(|m| std::cmp::Reverse(m.2));
        let rows: Vec<Vec<String>> = met
            .iter()
            .take(15)
            .map(|(a, b, n)| vec![a.clone(), b.clone(), n.to_string()])
            .collect();
        md.push_str(&format!(
            "### Who met whom\n\n{} pairs talked during the run; the most often:\n\n",
            met.len()
        ));
        md.push_str(&table(&["resident", "resident", "conversations"], &rows));
        md.push('\n');
    }
    if let Some(s) = &run.social {
        md.push_str(&s.section("", folder, "social.csv")?);
    }
    md.push_str(&cost_section(&run.costs));
    Ok(md)
}

/// The section of a run of several towns (`seed`, its run): each town's rounds, min / median /
/// max of each density per round over the towns beside the paper; each town's answers, graphs
/// and social life in `seed-<n>/`. `scenario`: the round of the scenario at its start that kept
/// towns (asked once, after their days) are shown beside: one row, out of the spread.
pub fn towns_report(
    towns: &[(u32, Run)],
    scenario: Option<&Run>,
    folder: &Folder,
) -> Result<String, String> {
    let base = scenario.and_then(|s| s.rounds.first());
    let scenario_costs: Vec<Cost> = scenario
        .map(|s| s.costs.iter().map(|c| c.prefixed("the scenario")).collect())
        .unwrap_or_default();
    if let [(_, one)] = towns {
        let mut one = one.clone();
        one.rounds.splice(0..0, base.cloned());
        one.costs.splice(0..0, scenario_costs);
        return report(&one, folder);
    }
    let mut md = format!("## Relationships, {} towns\n\n", towns.len());
    md.push_str(&explained());
    let mut rows = Vec::new();
    if let Some(b) = base {
        rows.push(
            [
                vec!["the scenario".into(), b.label.clone(), b.at.to_string()],
                b.row(),
            ]
            .concat(),
        );
    }
    // Densities by round label (in the order first seen): mutual yes, grounded, by memory; and
    // how many of its rounds were not informative.
    let mut by_round: Vec<(String, [Vec<f64>; 3], usize)> = Vec::new();
    for (seed, run) in towns {
        for r in &run.rounds {
            rows.push(
                [
                    vec![seed.to_string(), r.label.clone(), r.at.to_string()],
                    r.row(),
                ]
                .concat(),
            );
            let i = match by_round.iter().position(|(l, _, _)| l == &r.label) {
                Some(i) => i,
                None => {
                    by_round.push((r.label.clone(), Default::default(), 0));
                    by_round.len() - 1
                }
            };
            let (_, d, mute) = &mut by_round[i];
            d[0].push(r.density(false));
            d[1].push(r.density(true));
            d[2].push(r.density_by_memory());
            *mute += usize::from(!r.contradictions().1);
        }
    }
    let mmm = |v: &Vec<f64>| crate::lab::report::stats::min_median_max(v);
    for (label, d, mute) in &by_round {
        let mut row = vec!["min / median / max".into(), label.clone(), String::new()];
        row.extend(d.iter().map(mmm));
        if *mute > 0 {
            row[3].push_str(&format!(" ({mute} of {} not informative)", d[0].len()));
        }
        row.extend([String::new(), String::new(), String::new()]);
        rows.push(row);
    }
    rows.push(
        [
            vec![
                "the paper".into(),
                "start → end".into(),
                "2 game days".into(),
            ],
            vec!["0.167 → 0.74".into()],
            vec![String::new(); 5],
        ]
        .concat(),
    );
    md.push_str(&table(
        &[&["town", "round", "time"][..], &ROUND_COLUMNS[..]].concat(),
        &rows,
    ));
    md.push_str("\nEach town's answers (`knows.csv`), graphs (`knows-<round>.graphml`, `knows.png`) and residents' conversations (`social.csv`) are in its folder `seed-<n>/`");
    if let Some(sc) = scenario {
        md.push_str("; the scenario's in `start/`");
        files(sc, folder, "start/", None)?;
    }
    md.push_str(".\n\n");
    md.push_str(&crate::lab::social::Social::towns_telling(
        towns.iter().filter_map(|(_, r)| r.social.as_ref()),
    ));
    let mut costs = scenario_costs;
    for (seed, run) in towns {
        let sub = crate::lab::runs::folder::town_folder(*seed, towns.len());
        files(run, folder, &sub, base)?;
        md.push_str(&format!(
            "### Town {seed}\n\n![who knows whom, town {seed}]({sub}knows.png)\n\n"
        ));
        if let Some(s) = &run.social {
            md.push_str(&format!(
                "Social life {}; {} pairs talked.\n\n",
                s.line(),
                run.met.len()
            ));
            md.push_str(&s.telling_paragraph());
            s.write_csv(folder, &format!("{sub}social.csv"))?;
        }
        costs.extend(labelled(*seed, true, &run.costs));
    }
    md.push_str(&cost_section(&costs));
    Ok(md)
}

/// What `lab relationships` is asked (its command line's own options).
#[derive(Debug, Clone)]
pub struct Args {
    /// See `simulacra lab relationships --help`.
    pub days: f64,
    /// See `simulacra lab relationships --help`.
    pub seeds: u32,
    /// See `simulacra lab relationships --help`.
    pub together: bool,
    /// See `simulacra lab relationships --help`.
    pub towns: Option<PathBuf>,
}

/// `lab relationships`: runs the towns (or asks those a finished run kept, beside the scenario at its start) and writes the report.
pub fn lab(c: &super::Common, args: Args) -> Result<std::path::PathBuf, String> {
    let Args {
        days,
        seeds,
        together,
        towns,
    } = args;
    // Kept towns are asked as they are, after their days.
    let hours = if towns.is_some() {
        0
    } else {
        super::hours(days, "--days")?
    };
    // The towns to ask (seed, sub-folder, first round): run here (`--seeds`), or kept by
    // a finished run (`--towns`) beside the scenario at its start, made from the first
    // kept town's own scenario, map, settings and start (`seed` 0, in `start/`).
    let mut runs: Vec<((u32, String, &str), SimPlugin)> = Vec::new();
    let sim = match &towns {
        Some(dir) => {
            let config = c.world()?.config;
            let kept = crate::lab::runs::folder::towns_in(dir)?;
            let n = kept.len();
            for (seed, path) in &kept {
                let town = SimPlugin::from_save(path, config.clone())?;
                runs.push((
                    (
                        *seed,
                        crate::lab::runs::folder::town_folder(*seed, n),
                        "end",
                    ),
                    town,
                ));
            }
            let mut start = SimPlugin::from_save(&kept[0].1, config)?;
            start.load = None;
            if let Some(((seed, _, _), _)) = runs.iter().find(|(_, t)| {
                t.scenario.name != start.scenario.name || t.scenario.start != start.scenario.start
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
            let seeded = c.seeded(seeds)?;
            let n = seeded.len();
            for (seed, town) in seeded {
                runs.push((
                    (
                        seed,
                        crate::lab::runs::folder::town_folder(seed, n),
                        "start",
                    ),
                    town,
                ));
            }
            c.world()?
        }
    };
    let folder = c.folder("relationships")?;
    let seed_list: Vec<u32> = runs
        .iter()
        .map(|((s, _, _), _)| *s)
        .filter(|s| *s > 0)
        .collect();
    crate::lab::runs::inputs::write_inputs(&folder, &sim.config, &sim.scenario_text, &seed_list)?;
    let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
    let mut done =
        crate::lab::town::side_by_side(runs, together, |(seed, sub, first), town, llm| {
            let run = run_on(town, &folder, &sub, hours, first, llm)?;
            Ok((seed, run))
        })?;
    let scenario = if towns.is_some() {
        Some(done.remove(0).1)
    } else {
        None
    };
    let n = done.len();
    let section = towns_report(&done, scenario.as_ref(), &folder)?;
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
    super::finish_report(
        &folder,
        "Relationships",
        &config,
        &intro,
        &[section],
        c.started.elapsed().as_secs_f64(),
    )
}
