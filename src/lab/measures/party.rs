//! `lab party`: who was invited to a gathering, who planned to come, who came, and why the
//! others did not (the paper's §7.1.3: 12 invited, 5 came; of the 7 who did not, 3 had
//! conflicts and 4 were interested but made no plan).
//!
//! The gathering is the one a resident organises first-hand (Isabella's party, read from her
//! memories without a model). Invited: a resident with a memory of being invited to it (or of
//! accepting it). Planned: a plan item at its place during it, as the plans stood when it began.
//! Came: at its place at any moment during it, read from the movement log. Why not: declined
//! for a conflicting plan (a conflict), declined as not interested, or no plan to go (accepted or
//! never answered, and planned elsewhere).

use crate::SimPlugin;
use crate::lab::gathering::{
    Guest, Run, find_gathering, guests, guests_csv, plans_of, streams_of, tally, window,
};
use crate::lab::report::{Cost, cost_section, labelled, table};
use crate::lab::runs::folder::Folder;
use crate::lab::town::Sitting;
use crate::lab::town::open_town_on;
use crate::llm::Llm;
use crate::sim::time::GameTime;
use bevy::prelude::*;
use std::collections::{BTreeMap, BTreeSet};

/// The gathering in each town of a run of several (`seed`, its followed gathering), with
/// min / median / max over the towns beside the paper; `party-seed-<n>.csv` per town.
pub fn towns_section(towns: &[(u32, &Run)], folder: &Folder) -> Result<String, String> {
    let towns: Vec<&(u32, &Run)> = towns.iter().filter(|(_, r)| !r.guests.is_empty()).collect();
    let Some(g) = towns.first().and_then(|(_, r)| r.gathering.as_ref()) else {
        return Ok(String::new());
    };
    let (from, to) = window(g);
    let mut md = format!(
        "### The gathering\n\n{} organised by {}, {from} – {to}: *invited* holds a memory of being invited (or of accepting), *planned* had a plan item there when it began, *came* was there during it (the movement log). Each resident per town: `party-seed-<n>.csv`.\n\n",
        g.what, g.organiser
    );
    let mut rows = Vec::new();
    let mut cols: [Vec<f64>; 3] = Default::default();
    for (seed, r) in &towns {
        let (invited, planned, came, invited_came, why) = tally(r);
        for (c, v) in cols.iter_mut().zip([invited, planned, came]) {
            c.push(v as f64);
        }
        rows.push(vec![
            seed.to_string(),
            invited.to_string(),
            planned.to_string(),
            format!("{came} ({invited_came} of them invited)"),
            why.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ]);
        folder.write_text(&format!("party-seed-{seed}.csv"), &guests_csv(&r.guests))?;
    }
    let mut against = String::new();
    if towns.len() > 1 {
        let mut why_all: BTreeMap<String, usize> = BTreeMap::new();
        for (_, r) in &towns {
            for (k, v) in tally(r).4 {
                *why_all.entry(k).or_default() += v;
            }
        }
        // Against the paper's town only for a town of its 25 (24 guests besides the organiser).
        let paper_like = towns.iter().all(|(_, r)| r.guests.len() == 24);
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
            beside(&cols[2], 5.0, 5.0),
            g.organiser,
            if why_all.is_empty() {
                "–".to_string()
            } else {
                why_all
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        let mmm = |v: &Vec<f64>| crate::lab::report::stats::min_median_max(v);
        rows.push(vec![
            "min / median / max".into(),
            mmm(&cols[0]),
            mmm(&cols[1]),
            mmm(&cols[2]),
            String::new(),
        ]);
    }
    rows.push(vec![
        "the paper".into(),
        "12".into(),
        "–".into(),
        "5".into(),
        "3 conflicts, 4 interested but no plan".into(),
    ]);
    md.push_str(&table(
        &[
            "town",
            "invited",
            "planned",
            "came",
            "why the invited did not come",
        ],
        &rows,
    ));
    md.push('\n');
    if !against.is_empty() {
        md.push_str(&against);
        md.push('\n');
    }
    Ok(md)
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
    let (invited, planned, _, invited_came, why) = tally(run);
    let came: Vec<&Guest> = run.guests.iter().filter(|x| x.came).collect();
    let mut md = format!(
        "## The gathering\n\n{} organised by {}, {} – {}.\n\n",
        g.what, g.organiser, from, to
    );
    md.push_str(&table(
        &["", "ours", "the paper"],
        &[
            vec!["invited".into(), invited.to_string(), "12".into()],
            vec![
                "planned to come (a plan item there)".into(),
                planned.to_string(),
                "–".into(),
            ],
            vec![
                "came (at the place during it)".into(),
                format!("{} ({} of them invited)", came.len(), invited_came),
                "5".into(),
            ],
            vec![
                "invited, did not come".into(),
                (invited - invited_came).to_string(),
                "7: 3 conflicts, 4 interested but no plan".into(),
            ],
        ],
    ));
    if !why.is_empty() {
        md.push_str("\nWhy the invited did not come: ");
        md.push_str(
            &why.iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", "),
        );
        md.push_str(".\n");
    }
    let rows: Vec<Vec<String>> = run
        .guests
        .iter()
        .filter(|x| x.invited_by.is_some() || x.came || x.planned)
        .map(|x| {
            vec![
                x.name.clone(),
                x.invited_by.clone().unwrap_or_default(),
                if x.accepted {
                    "accepted".into()
                } else if x.declined.is_some() {
                    "declined".into()
                } else {
                    String::new()
                },
                x.planned.to_string(),
                if x.came {
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
            "came",
            "why not",
        ],
        &rows,
    ));
    md.push('\n');
    folder.write_text("party.csv", &guests_csv(&run.guests))?;
    let present: BTreeSet<&str> = came.iter().map(|x| x.name.as_str()).collect();
    crate::lab::report::plot::bars(
        &folder.work.join("party.png"),
        &format!("{} ({} – {})", g.what, from, to),
        &[
            ("invited".into(), invited as f64, None),
            ("planned".into(), planned as f64, None),
            ("came".into(), present.len() as f64, None),
            ("invited & came".into(), invited_came as f64, None),
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
