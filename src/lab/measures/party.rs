//! `lab party`: who was invited to a gathering, who planned to come, who came, and why the
//! others did not (the paper's §7.1.3: 12 invited, 5 came; of the 7 who did not, 3 had
//! conflicts and 4 were interested but made no plan).
//!
//! The gathering is the one a resident organises first-hand (read from the organiser's memories
//! without a model). Invited: told of it with the choice to go (an invitation, or news of it
//! second-hand), whatever the answer. Accepted: its last answer was yes. Planned: an invited
//! resident whose own planning had an item at its place during it, as the plans stood when it
//! began. Came: an invited resident at its place at any moment during it, read from the movement
//! log; present: anyone there. Why not: the answer's grammar-checked choice of what was in its
//! way (a conflict), declined as not interested, or no plan to go.

use crate::SimPlugin;
use crate::lab::gathering::{
    Run, Tally, find_gathering, guests, guests_csv, plans_of, streams_of, tally, window,
};
use crate::lab::report::{Cost, cost_section, labelled, table};
use crate::lab::runs::folder::Folder;
use crate::lab::town::Sitting;
use crate::lab::town::open_town_on;
use crate::llm::Llm;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use std::collections::BTreeMap;

/// The gathering in each town of a run of several (`seed`, its followed gathering), with
/// min / median / max over the towns beside the paper; `party-seed-<n>.csv` per town.
pub fn towns_section(towns: &[(u32, &Run)], folder: &Folder) -> Result<String, String> {
    let towns: Vec<&(u32, &Run)> = towns.iter().filter(|(_, r)| !r.guests.is_empty()).collect();
    let Some(g) = towns.first().and_then(|(_, r)| r.gathering.as_ref()) else {
        return Ok(String::new());
    };
    let (from, to) = window(g);
    let mut md = format!(
        "### The gathering

{} at {} organised by {}, {from} – {to}. {DEFINITIONS} Each resident per town: `party-seed-<n>.csv`.

",
        g.what, g.place, g.organiser
    );
    // Against the paper's town only for a town of its 25 (24 guests besides the organiser).
    let paper_like = towns.iter().all(|(_, r)| r.guests.len() == 24);
    let mut rows = Vec::new();
    let mut cols: [Vec<f64>; 5] = Default::default();
    for (seed, r) in &towns {
        let t = tally(r);
        for (c, v) in cols
            .iter_mut()
            .zip([t.invited, t.accepted, t.planned, t.came, t.present])
        {
            c.push(v as f64);
        }
        rows.push(row(&seed.to_string(), &t));
        folder.write_text(&format!("party-seed-{seed}.csv"), &guests_csv(&r.guests))?;
    }
    let mut against = String::new();
    if towns.len() > 1 {
        let mut why_all: BTreeMap<String, usize> = BTreeMap::new();
        for (_, r) in &towns {
            for (k, v) in tally(r).why {
                *why_all.entry(k).or_default() += v;
            }
        }
        let beside = |v: &[f64], lo: f64, hi: f64| {
            let m = crate::lab::report::stats::median(v);
            let said = crate::lab::report::stats::count(m);
            if paper_like {
                let by = crate::lab::report::stats::beside(m, lo, hi);
                format!("{said}, against the paper's town: {by}")
            } else {
                said
            }
        };
        let passed: usize = towns
            .iter()
            .flat_map(|(_, r)| &r.guests)
            .filter(|x| x.invited_by.as_ref().is_some_and(|b| *b != g.organiser))
            .count();
        against = format!(
            "The median town: invited {}; came {}. Invited by (or told of it by) someone other than {}, all towns: {passed}. Why the invited did not come, all towns: {}.\n",
            beside(&cols[0], 12.0, 12.0),
            beside(&cols[3], 5.0, 5.0),
            g.organiser,
            words(&why_all)
        );
        let mmm = |v: &Vec<f64>| crate::lab::report::stats::min_median_max(v);
        rows.push(vec![
            "min / median / max".into(),
            mmm(&cols[0]),
            mmm(&cols[1]),
            mmm(&cols[2]),
            mmm(&cols[3]),
            mmm(&cols[4]),
            String::new(),
        ]);
    }
    if paper_like {
        rows.push(paper_row());
    }
    md.push_str(&table(&COLUMNS, &rows));
    md.push('\n');
    if !against.is_empty() {
        md.push_str(&against);
        md.push('\n');
    }
    Ok(md)
}

/// What the gathering's figures count.
const DEFINITIONS: &str = "*Invited*: told of it by its organiser or someone going (an invitation) or second-hand with the choice to go (hearsay), whatever the answer; *accepted*: the last answer was yes; *planned*: an invited resident whose own planning had an item at its place during it when it began (an item put there by the `plan_gatherings` aid is not counted); *came*: an invited resident at its place during it (the movement log); *present*: anyone there but the organiser, invited or not. Why the invited did not come is the answer's grammar-checked choice of what was in the way (a conflict) or its words (declined), or no answer and no plan.";

/// The gathering table's columns.
const COLUMNS: [&str; 7] = [
    "town",
    "invited (of them by hearsay)",
    "accepted",
    "planned (by rule)",
    "came",
    "present",
    "why the invited did not come",
];

/// A town's row.
fn row(town: &str, t: &Tally) -> Vec<String> {
    vec![
        town.into(),
        format!("{} ({})", t.invited, t.by_hearsay),
        t.accepted.to_string(),
        format!("{} ({})", t.planned, t.planned_by_rule),
        t.came.to_string(),
        t.present.to_string(),
        words(&t.why),
    ]
}

/// The paper's row (§7.1.3).
fn paper_row() -> Vec<String> {
    vec![
        "the paper".into(),
        "12".into(),
        "–".into(),
        "–".into(),
        "5".into(),
        "–".into(),
        "3 conflicts, 4 interested but no plan".into(),
    ]
}

/// "conflict 3, declined 2", or "–".
fn words(why: &BTreeMap<String, usize>) -> String {
    if why.is_empty() {
        return "–".into();
    }
    why.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs the town until the gathering is over (from a save made after it, only reads).
pub fn run(sim: SimPlugin, folder: &Folder, word: &str) -> Result<Run, String> {
    run_on(sim, folder, "", word, None)
}

/// [`run`] in a sub-folder of the run's (`sub`: `""`, or `"seed-3/"` for one town of several),
/// its requests going to `llm` when given (towns side by side: [`crate::lab::town::side_by_side`]).
pub fn run_on(
    sim: SimPlugin,
    folder: &Folder,
    sub: &str,
    word: &str,
    llm: Option<Llm>,
) -> Result<Run, String> {
    let data = format!("{sub}party.json");
    let data = data.as_str();
    let mut run: Run = folder.read(data)?.unwrap_or_default();
    if !run.guests.is_empty() {
        return Ok(run); // this town was done before a stop
    }
    let mut town = open_town_on(sim, &folder.work.join(sub).join("saves"), llm)?;
    let label = crate::lab::town::town_label(sub);
    let streams = streams_of(town.app.world_mut());
    let g = match &run.gathering {
        Some(g) => g.clone(),
        None => find_gathering(&streams, word).ok_or_else(|| {
            format!(
                "no resident of this town organises a gathering{} (a whisper or history statement like \"… throwing a party at Hobbs Cafe on February 14th from 5pm to 7pm\" makes one)",
                if word.is_empty() { String::new() } else { format!(" named {word:?}") }
            )
        })?,
    };
    run.gathering = Some(g.clone());
    let (from, to) = window(&g);
    let c = town.clock();
    let step_at = |t: GameTime| (c.step as i64 + (t.0 - c.now.0) / c.sec_per_step as i64) as u64;
    // A sitting cut short keeps what it cost up to its last checkpoint, as a phase of its own.
    let resumed = run.sitting.is_some() || town.resumed;
    if let Some(cost) = (run.sitting.take()).and_then(|c| c.at_checkpoint(town.clock().step)) {
        run.costs.push(cost);
    }
    let sitting = Sitting::begin(&mut town, resumed);
    fn keep(r: &mut Run) -> &mut Option<Cost> {
        &mut r.sitting
    }
    if c.now < from {
        let until = format!("{label} until the gathering");
        sitting.run(
            &mut town,
            step_at(from),
            &until,
            folder,
            data,
            &mut run,
            keep,
        )?;
    }
    if run.plans.is_empty() {
        run.plans = plans_of(town.app.world_mut(), &g);
        folder.write(data, &run)?;
    }
    if town.clock().now < to {
        let during = format!("{label} during the gathering");
        sitting.run(
            &mut town,
            step_at(to),
            &during,
            folder,
            data,
            &mut run,
            keep,
        )?;
    }
    run.sitting = None;
    run.costs.push(sitting.cost(town.app.world()));
    run.guests = guests(town.app.world_mut(), &g, &run.plans);
    folder.write(data, &run)?;
    Ok(run)
}

/// The section of a run of one town ([`report`]) or of several ([`towns_section`], each town's
/// cost beside).
pub fn towns_report(towns: &[(u32, Run)], folder: &Folder) -> Result<String, String> {
    if let [(_, one)] = towns {
        return report(one, folder);
    }
    let refs: Vec<(u32, &Run)> = towns.iter().map(|(s, r)| (*s, r)).collect();
    let mut md = format!("## The gathering, {} towns\n\n", towns.len());
    md.push_str(&towns_section(&refs, folder)?);
    let costs: Vec<Cost> = towns
        .iter()
        .flat_map(|(seed, r)| labelled(*seed, true, &r.costs))
        .collect();
    md.push_str(&cost_section(&costs));
    Ok(md)
}

/// The report's section.
pub fn report(run: &Run, folder: &Folder) -> Result<String, String> {
    let Some(g) = &run.gathering else {
        return Ok(String::new());
    };
    let (from, to) = window(g);
    let t = tally(run);
    let mut md = format!(
        "## The gathering\n\n{} at {} organised by {}, {} – {}. {DEFINITIONS}\n\n",
        g.what, g.place, g.organiser, from, to
    );
    let mut rows = vec![row("this town", &t)];
    if run.guests.len() == 24 {
        rows.push(paper_row());
    }
    md.push_str(&table(&COLUMNS, &rows));
    let rows: Vec<Vec<String>> = run
        .guests
        .iter()
        .filter(|x| x.invited_by.is_some() || x.present || x.planned || x.planned_by_rule)
        .map(|x| {
            vec![
                x.name.clone(),
                match (&x.invited_by, x.by_hearsay) {
                    (Some(b), true) => format!("{b} (hearsay)"),
                    (Some(b), false) => b.clone(),
                    (None, _) => String::new(),
                },
                if x.accepted {
                    "accepted".into()
                } else if x.declined.is_some() {
                    "declined".into()
                } else {
                    String::new()
                },
                match (x.planned, x.planned_by_rule) {
                    (_, true) => "by rule".into(),
                    (p, false) => p.to_string(),
                },
                if x.present {
                    format!("yes, {} min", x.minutes_there)
                } else {
                    "no".into()
                },
                x.why_not().unwrap_or_default(),
            ]
        })
        .collect();
    md.push('\n');
    md.push_str(&table(
        &[
            "resident",
            "invited by",
            "answer",
            "planned",
            "there",
            "why not",
        ],
        &rows,
    ));
    md.push('\n');
    folder.write_text("party.csv", &guests_csv(&run.guests))?;
    crate::lab::report::plot::bars(
        &folder.work.join("party.png"),
        &format!("{} ({} – {})", g.what, from, to),
        &[
            ("invited".into(), t.invited as f64, None),
            ("accepted".into(), t.accepted as f64, None),
            ("planned".into(), t.planned as f64, None),
            ("came".into(), t.came as f64, None),
            ("present".into(), t.present as f64, None),
        ],
        "residents",
    )?;
    md.push_str("![the gathering](party.png)\n\n");
    md.push_str(&cost_section(&run.costs));
    Ok(md)
}

/// What `lab party` is asked (its command line's own options).
#[derive(Debug, Clone)]
pub struct Args {
    /// See `simulacra lab party --help`.
    pub gathering: String,
    /// See `simulacra lab party --help`.
    pub seeds: u32,
    /// See `simulacra lab party --help`.
    pub together: bool,
}

/// `lab party`: runs the towns until the gathering is over and writes the report.
pub fn lab(c: &super::Common, args: Args) -> Result<std::path::PathBuf, String> {
    let Args {
        gathering,
        seeds,
        together,
    } = args;
    let towns = c.seeded(seeds)?;
    let sim = c.world()?;
    let folder = c.folder("party")?;
    let seed_list: Vec<u32> = towns.iter().map(|(s, _)| *s).collect();
    crate::lab::runs::inputs::write_inputs(&folder, &sim.config, &sim.scenario_text, &seed_list)?;
    let (config, name) = (sim.config.clone(), sim.scenario.name.clone());
    let n = towns.len();
    let runs = crate::lab::town::side_by_side(towns, together, |seed, town, llm| {
        let run = run_on(
            town,
            &folder,
            &crate::lab::runs::folder::town_folder(seed, n),
            &gathering,
            llm,
        )?;
        Ok((seed, run))
    })?;
    let section = towns_report(&runs, &folder)?;
    super::finish_report(
        &folder,
        "The party",
        &config,
        &format!("{name}; {n} town(s).\n"),
        &[section],
        c.started.elapsed().as_secs_f64(),
    )
}
