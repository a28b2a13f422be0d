//! Every lab on the embedded model, on the 3-person town in a short window: the report folders
//! are written whole under `out/lab-real/` (looked at by hand: their plots and tables).

use simulacra::SimPlugin;
use simulacra::cognition::config::Ablation;
use simulacra::config::GameConfig;
use simulacra::lab;
use simulacra::lab::measures::{self, diffusion, interviews, party, relationships};
use simulacra::lab::runs::folder::Folder;

fn n3(config: &GameConfig) -> SimPlugin {
    let mut s = SimPlugin::load("the_ville_n3", None, config.clone()).expect("bundled scenario");
    s.scenario.start = simulacra::sim::time::GameTime::parse("2023-02-14 16:30").unwrap();
    s
}

#[test]
fn every_lab_runs_on_the_real_model_and_writes_its_report() {
    let _model = crate::real_model_lock();
    let config = GameConfig {
        llm: crate::memory_real::real_llm(),
        ..Default::default()
    };
    let out = simulacra::data::data_root().join("out/lab-real");
    let _ = std::fs::remove_dir_all(&out);
    let look = |dir: &std::path::Path, files: &[&str]| {
        for f in files {
            let len = std::fs::metadata(dir.join(f)).map(|m| m.len()).unwrap_or(0);
            assert!(len > 100, "{}: {len} bytes", dir.join(f).display());
        }
    };

    // Diffusion: one game hour from 16:30 on February 14.
    let facts = crate::the_villes_facts();
    let folder = Folder::open(&out, "diffusion", false).unwrap();
    let opts = diffusion::Options {
        facts: facts.clone(),
        hours: 1,
        every_morning: false,
        seeds: 1,
    };
    let run = diffusion::run_seed(n3(&config), &folder, &opts, 1).unwrap();
    assert_eq!(run.rounds.len(), 2);
    for r in &run.rounds {
        assert_eq!(r.probes.len(), 6, "{r:#?}");
    }
    // Isabella organises the party: a memory carries it, whatever she answers.
    let isabella = run.rounds[0]
        .probes
        .iter()
        .find(|p| p.fact == "party" && p.resident == "Isabella Rodriguez")
        .unwrap();
    assert!(isabella.grounded, "{isabella:?}");
    let section = diffusion::report(std::slice::from_ref(&run), &facts, &folder).unwrap();
    let dir = measures::finish_report(
        &folder,
        "Information diffusion",
        &config,
        "",
        &[section],
        0.0,
    )
    .unwrap();
    look(&dir, &["report.md", "awareness.png", "probes.csv"]);

    // Relationships: one round, now.
    let folder = Folder::open(&out, "relationships", false).unwrap();
    let run = relationships::run(n3(&config), &folder, 0).unwrap();
    assert_eq!(run.rounds[0].answers.len(), 6);
    let d = run.rounds[0].density(false);
    assert!((0.0..=1.0).contains(&d));
    let social = run
        .social
        .as_ref()
        .expect("the town's social life, read at once");
    assert_eq!(social.people.len(), 3, "{social:?}");
    let section = relationships::report(&run, &folder).unwrap();
    assert!(section.contains("### Social life"), "{section}");
    let dir =
        measures::finish_report(&folder, "Relationships", &config, "", &[section], 0.0).unwrap();
    look(
        &dir,
        &[
            "report.md",
            "knows.png",
            "knows-start.graphml",
            "knows.csv",
            "social.csv",
        ],
    );

    // The party: from 16:30 until it is over at 19:00.
    let folder = Folder::open(&out, "party", false).unwrap();
    let run = party::run(n3(&config), &folder, "party").unwrap();
    let g = run.gathering.clone().unwrap();
    assert_eq!(
        (g.organiser.as_str(), g.start, g.end),
        ("Isabella Rodriguez", 17 * 60, 19 * 60)
    );
    assert_eq!(run.guests.len(), 2, "everyone but the organiser");
    let section = party::report(&run, &folder).unwrap();
    let dir = measures::finish_report(&folder, "The party", &config, "", &[section], 0.0).unwrap();
    look(&dir, &["report.md", "party.png", "party.csv"]);

    // Interviews: Klaus, two questions, the four conditions, judged by the same model.
    let folder = Folder::open(&out, "interviews", false).unwrap();
    let saves = folder.work.join("saves");
    let mut town = lab::town::open_town(n3(&config), &saves).unwrap();
    town.checkpoint().unwrap();
    drop(town);
    let checkpoint = saves.join("checkpoint");
    let make = |cond: Ablation| {
        let mut s = SimPlugin::from_save(&checkpoint, config.clone())?;
        s.config.cognition.ablation = cond;
        Ok(s)
    };
    let opts = interviews::Options {
        residents: vec!["Klaus Mueller".into()],
        questions: interviews::parse_questions(
            "self-knowledge: Give an introduction of yourself.\nplans: What will you be doing at 6 pm today?\n",
            "test",
        )
        .unwrap(),
        conditions: Ablation::ALL.to_vec(),
        human: None,
        judge: None,
        seed: 1,
    };
    let run = interviews::run(&make, &folder, &opts).unwrap();
    assert_eq!(run.answers.len(), 8);
    assert!(run.answers.iter().all(|a| !a.answer.trim().is_empty()));
    assert_eq!(
        run.judged.len(),
        12,
        "4 conditions two at a time, 2 questions"
    );
    let conditions: Vec<String> = Ablation::ALL.iter().map(|a| format!("{a:?}")).collect();
    let ranking = lab::judge::rank(&conditions, &run.judged, 1);
    assert!(
        ranking
            .ratings
            .iter()
            .all(|r| r.mu.is_finite() && r.sigma > 0.0)
    );
    let section = interviews::report(&run, &folder).unwrap();
    let dir = measures::finish_report(&folder, "Interviews", &config, "", &[section], 0.0).unwrap();
    look(
        &dir,
        &["report.md", "trueskill.png", "transcripts.md", "judged.csv"],
    );
}
