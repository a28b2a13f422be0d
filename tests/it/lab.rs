//! The lab on the scripted backend: a fact told in a conversation shows its hearer aware,
//! grounded, with the teller in the diffusion tree, and a yes with no memory behind it is
//! counted as hallucinated; a probe whose words contradict its answer counted as such; the party
//! read from memories, plans and the movement log; the town's social life read from its logs
//! (and how facts were passed on, from its memories); a report folder written whole; a run
//! stopped between its data and its checkpoint resumed as a straight run; bad input refused
//! before anything is written.

use crate::talk::{klaus_told_maria, talk, town, until_over};
use bevy::prelude::*;
use simulacra::SimPlugin;
use simulacra::config::GameConfig;
use simulacra::lab::measures::{self, diffusion, party};
use simulacra::lab::runs::folder::Folder;
use simulacra::lab::{self, facts, gathering};
use simulacra::llm::config::LlmConfig;
use simulacra::run_steps;
use simulacra::save::movement::{Change, Frame, MovementLog};
use simulacra::sim::map::Tile;
use simulacra::sim::time::GameTime;

/// The three-resident town on the routine with `config`.
fn scripted_n3(config: &GameConfig) -> SimPlugin {
    let mut s = SimPlugin::load("the_ville_n3", None, config.clone()).unwrap();
    s.config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    s
}

/// A frame of a movement log with people's changes only.
fn frame(step: u64, time: GameTime, changes: Vec<Change>) -> Frame {
    Frame {
        step,
        time,
        changes,
        objects: Vec::new(),
    }
}

/// Waits until the unfinished run in `out` has a checkpoint between game hours in `sub` (its
/// `saves/checkpoint/meta.ron` at a time that is not on the hour), then kills `child`. False
/// when the child ended first.
fn kill_between_hours(child: &mut std::process::Child, out: &std::path::Path, sub: &str) -> bool {
    kill_between_hours_after(child, out, sub, None)
}

/// The checkpoint's time (`now` in its `meta.ron`) in `sub` of the unfinished run in `out`.
fn checkpoint_time(out: &std::path::Path, sub: &str) -> Option<String> {
    let meta = partial_in(out).map(|p| p.join(sub).join("saves/checkpoint/meta.ron"));
    let text = meta.and_then(|m| std::fs::read_to_string(m).ok());
    text.as_deref().and_then(|t| {
        t.lines()
            .find_map(|l| l.trim().strip_prefix("now: ").map(str::to_string))
    })
}

/// The unfinished run's folder in `out`.
fn partial_in(out: &std::path::Path) -> Option<std::path::PathBuf> {
    std::fs::read_dir(out).ok().and_then(|d| {
        d.flatten()
            .map(|e| e.path())
            .find(|p| p.to_string_lossy().ends_with(".partial"))
    })
}

/// [`kill_between_hours`] at a checkpoint whose time is not `after`.
fn kill_between_hours_after(
    child: &mut std::process::Child,
    out: &std::path::Path,
    sub: &str,
    after: Option<&str>,
) -> bool {
    let begun = std::time::Instant::now();
    while begun.elapsed().as_secs() < 120 {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        let now = checkpoint_time(out, sub);
        if now.is_some_and(|n| !n.contains(":00:00") && after != Some(n.as_str())) {
            child.kill().unwrap();
            child.wait().unwrap();
            return true;
        }
        std::thread::sleep(std::time::Duration::from_micros(300));
    }
    false
}

/// `simulacra lab <kind>` on the 3-person town, scripted, from 06:00, with `args`, writing to
/// `out` (going on with its unfinished run with `resume`), its output dropped.
fn lab_3(kind: &str, args: &[&str], out: &std::path::Path, resume: bool) -> std::process::Command {
    let mut c = std::process::Command::new(crate::simulacra_bin());
    c.args([
        "lab",
        kind,
        "--scenario",
        "the_ville_n3",
        "--scripted-llm",
        "--routine",
    ])
    .args(["--start", "2023-02-13 06:00"])
    .args(args)
    .arg("--out")
    .arg(out)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    if resume {
        c.arg("--resume");
    }
    c
}

/// The report folder a finished run left in `out`.
fn report_in(out: &std::path::Path) -> std::path::PathBuf {
    std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .expect("a report folder")
}

fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("simulacra-lab-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn a_fact_told_in_a_conversation_is_aware_grounded_and_traced_and_a_bare_yes_is_hallucinated() {
    let mut app = klaus_told_maria();
    let facts = crate::the_villes_facts();
    // The scripted backend answers every probe "yes".
    let round = facts::probe_round(app.world_mut(), &facts, "end");
    let probe = |fact: &str, who: &str| {
        round
            .probes
            .iter()
            .find(|p| p.fact == fact && p.resident == who)
            .unwrap_or_else(|| panic!("{fact} {who}: {round:#?}"))
            .clone()
    };
    let maria = probe("mayor", "Maria Lopez");
    assert_eq!(maria.class(), "aware", "{maria:?}");
    assert!(
        maria
            .evidence
            .as_deref()
            .unwrap()
            .contains("Klaus Mueller told me")
    );
    let klaus = probe("mayor", "Klaus Mueller");
    assert_eq!(klaus.class(), "aware", "{klaus:?}");
    let isabella = probe("mayor", "Isabella Rodriguez");
    assert_eq!(isabella.class(), "hallucinated", "{isabella:?}");
    let c = round.counts("mayor");
    assert_eq!(
        (c.yes, c.aware, c.hallucinated, c.holders, c.residents),
        (3, 2, 1, 2, 3)
    );
    // The tree: Maria from Klaus, in their conversation; Klaus a first holder (the whisper).
    let tree = facts::tree(app.world_mut(), &facts);
    let mayor = &tree["mayor"];
    let m = mayor.iter().find(|s| s.holder == "Maria Lopez").unwrap();
    assert_eq!(m.from.as_deref(), Some("Klaus Mueller"), "{mayor:#?}");
    assert_eq!(m.chain, ["Maria Lopez", "Klaus Mueller"]);
    assert!(
        m.conversation
            .as_deref()
            .unwrap()
            .starts_with("Klaus Mueller and Maria Lopez")
    );
    let k = mayor.iter().find(|s| s.holder == "Klaus Mueller").unwrap();
    assert_eq!(k.from, None, "{k:?}");
    assert!(mayor.iter().all(|s| s.holder != "Isabella Rodriguez"));
}

#[test]
fn the_diffusion_lab_writes_a_whole_report_folder_and_resumes() {
    let out = scratch("diffusion");
    let config = GameConfig {
        llm: LlmConfig::scripted(Vec::new()),
        ..Default::default()
    };
    let sim = || scripted_n3(&config);
    let facts = crate::the_villes_facts();
    let opts = diffusion::Options {
        facts: facts.clone(),
        hours: 2,
        every_morning: false,
        seeds: 1,
    };
    let folder = Folder::open(&out, "t", false).unwrap();
    assert!(
        folder
            .work
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .starts_with(".t-")
    );
    // An interrupted run (its first hour checkpointed) goes on where it stopped.
    let first = diffusion::run_seed(
        sim(),
        &folder,
        &diffusion::Options {
            hours: 1,
            ..opts.clone()
        },
        1,
    )
    .unwrap();
    assert_eq!(first.rounds.len(), 2);
    std::fs::write(
        folder.work.join("seed-1/diffusion.json"),
        serde_json::to_string(&diffusion::SeedRun {
            rounds: first.rounds[..1].to_vec(),
            ..first.clone()
        })
        .unwrap(),
    )
    .unwrap();
    let again = Folder::open(&out, "t", true).unwrap();
    assert_eq!(again.work, folder.work);
    let run = diffusion::run_seed(sim(), &again, &opts, 1).unwrap();
    assert_eq!(run.rounds.len(), 2);
    let (start, end) = (run.rounds[0].at, run.rounds[1].at);
    assert_eq!(
        end.0 - start.0,
        2 * 3600,
        "two game hours from the start, resumed"
    );
    let section = diffusion::report(&[run], &facts, &again).unwrap();
    assert!(section.contains("hallucinated"), "{section}");
    assert!(
        section.contains("### Conversations, seed 1")
            && section.contains("% in the model's own words"),
        "what the conversations carried is in the report: {section}"
    );
    assert!(
        section.contains("### Social life, seed 1")
            && section.contains("conversations per resident per day")
            && section.contains("Where the waking hours went"),
        "who met whom and where the day went is in the report: {section}"
    );
    assert!(
        section.contains("Reflections begun per resident per game day, seed 1: median "),
        "how often the residents reflected: {section}"
    );
    assert!(
        section.contains("Facts passed on: ")
            && section.contains(" 0 about the listener")
            && section.contains(" 0 told back"),
        "how facts were passed on, and nobody told news about themselves: {section}"
    );
    let done = measures::finish_report(
        &again,
        "Information diffusion",
        &config,
        "",
        &[section],
        1.0,
    )
    .unwrap();
    for f in [
        "report.md",
        "awareness.png",
        "probes.csv",
        "tree.csv",
        "social-seed-1.csv",
    ] {
        let len = std::fs::metadata(done.join(f))
            .map(|m| m.len())
            .unwrap_or(0);
        assert!(len > 100, "{f}: {len} bytes");
    }
    assert!(!again.work.exists(), "the working folder became the report");
    assert!(
        !done.join("saves").exists() && !done.join("seed-1/saves").exists(),
        "checkpoints are not left in the report"
    );
    // The town at the end stays, a save that loads at the run's last moment.
    let kept = simulacra::save::disk::read_save(&done.join("seed-1/town")).unwrap();
    assert_eq!(
        kept.world.clock.now, end,
        "the kept town is the one at the end"
    );
    SimPlugin::from_save(&done.join("seed-1/town"), config.clone()).expect("it loads");
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn the_towns_social_life_is_read_from_its_conversation_and_movement_logs() {
    use simulacra::agent::conversation::{ConversationLog, LoggedLine};
    use simulacra::lab::social::{OTHERS_HOME, OUTSIDE, OWN_HOME, social};
    use simulacra::sim::clock::SimClock;
    let sim = SimPlugin::load("the_ville_n3", None, GameConfig::default()).unwrap();
    let map = &sim.map;
    let all = (0..map.height).flat_map(|y| (0..map.width).map(move |x| Tile::new(x, y)));
    let in_sector = |name: &str| {
        all.clone()
            .find(|t| map.address(*t).sector == Some(name) && map.walkable(*t))
            .unwrap_or_else(|| panic!("no tile of {name}"))
    };
    let (cafe, dorm, flat) = (
        in_sector("Hobbs Cafe"),
        in_sector("Dorm for Oak Hill College"),
        in_sector("Isabella Rodriguez's apartment"),
    );
    let outside = all
        .clone()
        .find(|t| map.address(*t).sector.is_none() && map.walkable(*t))
        .unwrap();
    let at = |hm: &str| GameTime::parse(&format!("2023-02-13 {hm}")).unwrap();
    let go = |who: &str, t: Tile, action: &str| Change {
        who: who.into(),
        tile: Some((t.x, t.y)),
        action: Some(action.into()),
        ..Default::default()
    };
    // Isabella sleeps at home until 07:00, is at home an hour, then at her cafe until noon.
    // Maria sleeps in the dorm until 08:00, has an hour at the cafe, one at Isabella's, then two
    // on the way. Klaus sleeps in the dorm until 09:00 and stays there.
    let log = MovementLog::from_frames(vec![
        frame(
            0,
            at("00:00"),
            vec![
                go("Isabella Rodriguez", flat, "sleeping"),
                go("Maria Lopez", dorm, "sleeping"),
                go("Klaus Mueller", dorm, "sleeping"),
            ],
        ),
        frame(
            1,
            at("07:00"),
            vec![go("Isabella Rodriguez", flat, "waking up")],
        ),
        frame(
            2,
            at("08:00"),
            vec![
                go("Isabella Rodriguez", cafe, "working"),
                go("Maria Lopez", cafe, "having coffee"),
            ],
        ),
        frame(
            3,
            at("09:00"),
            vec![
                go("Maria Lopez", flat, "visiting"),
                go("Klaus Mueller", dorm, "reading"),
            ],
        ),
        frame(4, at("10:00"), vec![go("Maria Lopez", outside, "walking")]),
    ]);
    let mut world = World::new();
    let mut clock = SimClock::new(at("00:00"), 10);
    clock.now = at("12:00");
    world.insert_resource(clock);
    world.insert_resource(map.clone());
    world.insert_resource(log);
    // Maria and Isabella talk twice, Maria and Klaus once; a line to the player is not counted.
    // Klaus says he had heard already what Maria and the player told him.
    use simulacra::agent::conversation::{Topic, TopicKind};
    let mut talk = ConversationLog::default();
    let convs: Vec<Entity> = (0..4).map(|_| world.spawn_empty().id()).collect();
    for (c, a, b, heard) in [
        (0, "Maria Lopez", "Isabella Rodriguez", false),
        (0, "Isabella Rodriguez", "Maria Lopez", false),
        (1, "Isabella Rodriguez", "Maria Lopez", false),
        (2, "Klaus Mueller", "Maria Lopez", true),
        (3, "Klaus Mueller", "the player", true),
    ] {
        talk.push(LoggedLine {
            at: at("08:30"),
            conversation: convs[c],
            speaker: a.into(),
            listener: b.into(),
            text: "Hello.".into(),
            topic: heard.then(|| Topic::new(TopicKind::AlreadyHeard, "that he had heard it")),
            fallback: None,
            carried: None,
        });
    }
    world.insert_resource(talk);
    // What was told: Isabella tells Maria of Klaus's crush on her (news about the listener) and
    // Klaus of her party; the player hears something and tells Maria something about her, and
    // neither is counted.
    use simulacra::agent::Identity;
    use simulacra::memory::stream::{MemoryStream, NewNode, NodeKind, Told};
    for (listener, told) in [
        ("Isabella Rodriguez", vec![]),
        (
            "Maria Lopez",
            vec![
                ("Isabella Rodriguez", "Klaus has a crush on Maria"),
                ("the player", "Maria's bike is outside"),
            ],
        ),
        (
            "Klaus Mueller",
            vec![(
                "Isabella Rodriguez",
                "Isabella is holding a party at Hobbs Cafe",
            )],
        ),
        (
            "the player",
            vec![("Isabella Rodriguez", "Maria studies physics")],
        ),
    ] {
        let mut stream = MemoryStream::default();
        for (speaker, fact) in told {
            stream.add(
                NodeKind::Thought,
                NewNode {
                    description: format!("{speaker} told me that {fact}"),
                    told: Some(Told {
                        speaker: speaker.into(),
                        source: None,
                        conversation: "c".into(),
                        fact: fact.into(),
                    }),
                    ..Default::default()
                },
                at("08:30"),
            );
        }
        world.spawn((
            Identity {
                name: listener.into(),
                first_name: listener.split(' ').next().unwrap().into(),
                age: 20,
                description: String::new(),
            },
            stream,
        ));
    }
    let names: Vec<String> = ["Isabella Rodriguez", "Klaus Mueller", "Maria Lopez"]
        .map(String::from)
        .to_vec();
    let s = social(&world, &names);
    assert_eq!(
        s.telling,
        Some(simulacra::lab::social::Telling {
            heard: 2,
            about_listener: 1,
            said_heard: 1,
            ..Default::default()
        }),
        "what the player hears or says is not counted"
    );
    assert!((s.days - 0.5).abs() < 1e-9, "{}", s.days);
    let p = |n: &str| s.people.iter().find(|p| p.name == n).unwrap().clone();
    let (isabella, klaus, maria) = (
        p("Isabella Rodriguez"),
        p("Klaus Mueller"),
        p("Maria Lopez"),
    );
    assert_eq!((maria.conversations, maria.partners), (3, 2));
    assert_eq!((isabella.conversations, isabella.partners), (2, 1));
    assert_eq!(
        (klaus.conversations, klaus.partners),
        (1, 1),
        "the player is no partner"
    );
    assert_eq!(s.pairs_met, 2);
    assert_eq!((isabella.awake_minutes, isabella.home_minutes), (300, 60));
    assert_eq!((maria.awake_minutes, maria.home_minutes), (240, 0));
    assert_eq!((klaus.awake_minutes, klaus.home_minutes), (180, 180));
    let place = |n: &str| {
        s.places
            .iter()
            .find(|p| p.name == n)
            .map(|p| (p.minutes, p.residents))
    };
    assert_eq!(place("Hobbs Cafe"), Some((300, 2)), "{:?}", s.places);
    assert_eq!(place(OWN_HOME), Some((240, 2)), "{:?}", s.places);
    assert_eq!(
        place(OTHERS_HOME),
        Some((60, 1)),
        "Maria at Isabella's is at another's home: {:?}",
        s.places
    );
    assert_eq!(place(OUTSIDE), Some((120, 1)), "{:?}", s.places);
    assert_eq!(s.places[0].name, "Hobbs Cafe", "most waking time first");
    assert_eq!(s.per_day(), vec![4.0, 2.0, 6.0]);
    let line = s.line();
    assert!(
        line.contains("4.0 conversations per resident per day (median; 2.0–6.0)")
            && line.contains("2 of 3 pairs"),
        "{line}"
    );
}

#[test]
fn party_attendance_is_read_from_a_recorded_movement_log() {
    let sim = SimPlugin::load("the_ville_n3", None, GameConfig::default()).unwrap();
    let map = &sim.map;
    let all = (0..map.height).flat_map(|y| (0..map.width).map(move |x| Tile::new(x, y)));
    let cafe = all
        .clone()
        .find(|t| map.address(*t).sector == Some("Hobbs Cafe"))
        .unwrap();
    let outside = all
        .clone()
        .find(|t| map.address(*t).sector.is_none() && map.walkable(*t))
        .unwrap();
    let g = simulacra::memory::news::Gathering {
        what: "a party".into(),
        place: "Hobbs Cafe".into(),
        address: "the_ville:Hobbs Cafe".into(),
        day: GameTime::parse("2023-02-14 00:00").unwrap().day(),
        start: 17 * 60,
        end: 19 * 60,
        organiser: "Isabella Rodriguez".into(),
    };
    let at = |hm: &str| GameTime::parse(&format!("2023-02-14 {hm}")).unwrap();
    let go = |who: &str, t: Tile| Change {
        who: who.into(),
        tile: Some((t.x, t.y)),
        ..Default::default()
    };
    // Maria at the cafe 16:50–17:40 (40 minutes of it during the party), Klaus there only
    // before it, Isabella all evening.
    let log = MovementLog::from_frames(vec![
        frame(
            0,
            at("16:00"),
            vec![
                go("Maria Lopez", outside),
                go("Klaus Mueller", cafe),
                go("Isabella Rodriguez", cafe),
            ],
        ),
        frame(
            1,
            at("16:50"),
            vec![go("Maria Lopez", cafe), go("Klaus Mueller", outside)],
        ),
        frame(2, at("17:40"), vec![go("Maria Lopez", outside)]),
        frame(3, at("20:00"), vec![]),
    ]);
    let seen = gathering::attendance(&log, map, &g, 10);
    assert_eq!(seen.get("Maria Lopez"), Some(&40), "{seen:?}");
    assert_eq!(seen.get("Isabella Rodriguez"), Some(&120), "{seen:?}");
    assert_eq!(seen.get("Klaus Mueller"), None, "{seen:?}");
}

#[test]
fn an_accepted_invitation_shows_in_the_party_lab_as_invited_planned_and_came() {
    // With the `plan_gatherings` aid, so that she goes: the rule's plan item is counted apart
    // from what her own planning made.
    let (mut app, maria_e) = crate::talk::invited_with(
        r#"{"will_attend": true, "in_the_way": "nothing", "reason": "I love parties"}"#,
        |c| c.cognition.aids.plan_gatherings = true,
    );
    // Followed as a diffusion town follows it: found at once, looked at every hour.
    let mut run = gathering::follow(app.world_mut()).expect("Isabella organises the party");
    let g = run.gathering.clone().unwrap();
    assert_eq!(g.organiser, "Isabella Rodriguez");
    // Maria had declined an earlier invitation to it: her later acceptance is what stands.
    app.world_mut()
        .get_mut::<simulacra::memory::stream::MemoryStream>(maria_e)
        .unwrap()
        .add(
            simulacra::memory::stream::NodeKind::Thought,
            simulacra::memory::stream::NewNode {
                predicate: "declined".into(),
                description: g.declined("Klaus Mueller", "not interested"),
                gathering: Some(g.clone()),
                ..Default::default()
            },
            GameTime::parse("2023-02-14 09:00").unwrap(),
        );
    let to = |app: &mut App, hm: &str| {
        let t = GameTime::parse(&format!("2023-02-14 {hm}")).unwrap();
        let now = app
            .world()
            .resource::<simulacra::sim::clock::SimClock>()
            .now;
        run_steps(app, ((t.0 - now.0) / 10).max(0) as u64);
    };
    to(&mut app, "16:00");
    gathering::follow_hour(&mut run, app.world_mut());
    assert!(run.plans.is_empty(), "not begun yet");
    // Plans as they stand when the party begins, then the party itself.
    to(&mut app, "17:00");
    gathering::follow_hour(&mut run, app.world_mut());
    assert_eq!(run.plans.len(), 3, "{:?}", run.plans);
    to(&mut app, "18:00");
    gathering::follow_hour(&mut run, app.world_mut());
    assert!(run.guests.is_empty(), "not over yet");
    to(&mut app, "19:00");
    gathering::follow_hour(&mut run, app.world_mut());
    let guests = run.guests.clone();
    let maria = guests.iter().find(|x| x.name == "Maria Lopez").unwrap();
    assert_eq!(
        maria.invited_by.as_deref(),
        Some("Isabella Rodriguez"),
        "{maria:?}"
    );
    assert!(
        maria.accepted && maria.planned_by_rule && !maria.planned && maria.came,
        "{maria:?}"
    );
    assert_eq!(maria.declined, None, "the last answer stands");
    assert_eq!(maria.why_not(), None);
    let klaus = guests.iter().find(|x| x.name == "Klaus Mueller").unwrap();
    assert_eq!(klaus.invited_by, None, "{klaus:?}");
    // Over the towns of a diffusion run (here the same town twice).
    let out = scratch("party-towns");
    let folder = Folder::open(&out, "t", false).unwrap();
    let md = party::towns_section(&[(1, &run), (2, &run)], &folder).unwrap();
    assert!(
        md.contains("| 1 | 1 (0) | 1 | 0 (1) | 1 | ")
            && md
                .contains("| min / median / max | 1 / 1 / 1 | 1 / 1 / 1 | 0 / 0 / 0 | 1 / 1 / 1 |"),
        "{md}"
    );
    // The median town said against the paper's, and the invitations passed on counted.
    assert!(md.contains("The median town: invited 1; came 1. "), "{md}");
    assert!(
        md.contains(
            "Invited by (or told of it by) someone other than Isabella Rodriguez, all towns: 0."
        ),
        "{md}"
    );
    assert!(folder.work.join("party-seed-2.csv").exists());
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn a_run_resumed_with_another_town_is_refused_and_unknown_residents_are_named() {
    let out = scratch("resume");
    let config = GameConfig {
        llm: LlmConfig::scripted(Vec::new()),
        ..Default::default()
    };
    let saves = out.join("saves");
    let mut t = lab::town::open_town(
        SimPlugin::load("the_ville_n3", None, config.clone()).unwrap(),
        &saves,
    )
    .unwrap();
    t.checkpoint().unwrap();
    let residents = t.residents();
    let err = lab::town::find_residents(&residents, &["Bob".into()]).unwrap_err();
    assert!(
        err.contains("no resident named \"Bob\"") && err.contains("Klaus Mueller"),
        "{err}"
    );
    assert_eq!(
        lab::town::find_residents(&residents, &["klaus".into()]).unwrap()[0].0,
        "Klaus Mueller"
    );
    drop(t);
    let other = SimPlugin::load("the_ville_n25", None, config).unwrap();
    let err = lab::town::open_town(other, &saves).err().expect("refused");
    assert!(err.contains("the unfinished run is of"), "{err}");
    let _ = std::fs::remove_dir_all(&out);
}

/// A run's data that this build cannot read stops a resume with the file and the place named,
/// instead of beginning that town again over it; data not written yet is no data.
#[test]
fn unreadable_data_of_an_unfinished_run_is_an_error_naming_the_file() {
    let out = scratch("unreadable");
    let folder = Folder::open(&out, "u", false).unwrap();
    let none: Option<diffusion::SeedRun> = folder.read("seed-1/diffusion.json").unwrap();
    assert!(none.is_none());
    folder
        .write_text(
            "seed-1/diffusion.json",
            "{\n  \"seed\": 1,\n  \"hours\": 7\n}",
        )
        .unwrap();
    let err = folder
        .read::<diffusion::SeedRun>("seed-1/diffusion.json")
        .unwrap_err();
    assert!(
        err.contains("seed-1/diffusion.json: line 3") && err.contains("the build that began it"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A probe whose own words say the opposite of its yes or no is counted as such, and the
/// report says how many did.
#[test]
fn a_probe_whose_words_contradict_its_answer_is_counted() {
    let probe = |who: &str, reply: &str| simulacra::llm::config::ScriptRule {
        purpose: Some("lab_probe".into()),
        contains: Some(format!("What {who} remembers")),
        reply: reply.into(),
        ..Default::default()
    };
    let mut app = town(
        vec![
            probe(
                "Maria Lopez",
                r#"{"answer": "yes", "says": "No, I have never heard of that."}"#,
            ),
            probe(
                "Klaus Mueller",
                r#"{"answer": "no", "says": "Yes, Sam Moore is running for mayor."}"#,
            ),
            probe(
                "Isabella Rodriguez",
                r#"{"answer": "no", "says": "No, I don't know about it."}"#,
            ),
        ],
        "2023-02-13 10:00",
    );
    run_steps(&mut app, 2);
    let facts = crate::the_villes_facts();
    let round = facts::probe_round(app.world_mut(), &facts, "end");
    let of = |who: &str| {
        round
            .probes
            .iter()
            .find(|p| p.fact == "mayor" && p.resident == who)
            .unwrap_or_else(|| panic!("{who}: {round:#?}"))
            .clone()
    };
    assert!(of("Maria Lopez").contradicts, "{:?}", of("Maria Lopez"));
    assert!(of("Klaus Mueller").contradicts, "{:?}", of("Klaus Mueller"));
    assert!(!of("Isabella Rodriguez").contradicts);
    // Every fact's probe, two of three residents each: not informative.
    let (c, n) = round.contradictions();
    assert_eq!((c, n), (2 * facts.len(), 3 * facts.len()));
    assert!(!round.informative());
    let out = scratch("contradicts");
    let folder = Folder::open(&out, "c", false).unwrap();
    let run = diffusion::SeedRun {
        seed: 1,
        residents: 3,
        rounds: vec![round.clone(), round],
        ..Default::default()
    };
    let section = diffusion::report(&[run], &facts, &folder).unwrap();
    assert!(
        section.contains(&format!(
            "contradict their yes or no (\"yes\" with \"No, I haven't heard\"): {c} of {n}"
        )) && section.contains("(not informative)")
            && section.contains("in 0 of 1 towns with informative answers"),
        "{section}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// A run stopped after an hour's data was written but before that hour's checkpoint goes on
/// from the checkpoint before and keeps each hour once; what its conversations carried (the
/// counts of replaced lines included) is what an uninterrupted run reports.
#[test]
fn a_diffusion_run_stopped_between_its_data_and_its_checkpoint_resumes_as_a_straight_run() {
    let sim = || {
        let mut s = scripted_n3(&GameConfig {
            llm: LlmConfig::scripted(Vec::new()),
            ..Default::default()
        });
        s.scenario.start = GameTime::parse("2023-02-13 10:00").unwrap();
        s
    };
    let facts = crate::the_villes_facts();
    let opts = |hours| diffusion::Options {
        facts: facts.clone(),
        hours,
        every_morning: false,
        seeds: 1,
    };
    let out = scratch("stopped");
    let straight =
        diffusion::run_seed(sim(), &Folder::open(&out, "a", false).unwrap(), &opts(2), 1).unwrap();
    // Stopped: one hour checkpointed, the second hour's data written, its checkpoint not.
    let folder = Folder::open(&out, "b", false).unwrap();
    let first = diffusion::run_seed(sim(), &folder, &opts(1), 1).unwrap();
    let mut written = first.clone();
    written.rounds.truncate(1);
    written.hours.push(straight.hours[2].clone());
    // Its sitting was cut short there: what it cost up to that checkpoint is kept.
    let town_cost = written
        .costs
        .iter()
        .position(|c| c.phase.contains("game hours of the town"))
        .unwrap();
    written.sitting = Some(written.costs.remove(town_cost));
    std::fs::write(
        folder.work.join("seed-1/diffusion.json"),
        serde_json::to_string(&written).unwrap(),
    )
    .unwrap();
    let resumed =
        diffusion::run_seed(sim(), &Folder::open(&out, "b", true).unwrap(), &opts(2), 1).unwrap();
    let at = |r: &diffusion::SeedRun| r.hours.iter().map(|h| h.at).collect::<Vec<_>>();
    assert_eq!(at(&resumed), at(&straight), "each hour once");
    assert_eq!(resumed.hours, straight.hours);
    assert_eq!(resumed.rounds, straight.rounds);
    assert_eq!(resumed.tree, straight.tree);
    assert!(
        resumed.talk.contains("lines not the model's"),
        "{}",
        resumed.talk
    );
    assert_eq!(resumed.talk, straight.talk, "counted over the whole run");
    assert_eq!(
        resumed.social, straight.social,
        "read from the whole run's logs"
    );
    assert!(
        straight
            .social
            .as_ref()
            .is_some_and(|s| s.places.iter().any(|p| p.name == "Hobbs Cafe")),
        "{:?}",
        straight.social
    );
    let phases: Vec<&str> = resumed.costs.iter().map(|c| c.phase.as_str()).collect();
    assert!(
        phases.contains(&"1 game hours of the town")
            && phases.contains(&"1 game hours of the town (resumed at hour 1)"),
        "each sitting's cost is kept: {phases:?}"
    );
    assert!(resumed.sitting.is_none());
    let _ = std::fs::remove_dir_all(&out);
}

/// The holders by memory of a scripted town are exactly the residents on the provenance chains
/// of the memories that carry the fact: each holder told it names its teller as the next link,
/// each chain ends at a first holder, and a first holder holds the fact first-hand.
#[test]
fn holders_by_memory_are_the_residents_on_the_provenance_chains() {
    use simulacra::memory::news::{fact_of, first_hand, trace};
    use std::collections::BTreeSet;
    let mut app = klaus_told_maria();
    let c = talk(&mut app, "Maria Lopez", "Isabella Rodriguez");
    until_over(&mut app, c, 600);
    let facts = crate::the_villes_facts();
    let hour = facts::holders(app.world_mut(), &facts);
    let tree = facts::tree(app.world_mut(), &facts);
    let mayor = &tree["mayor"];
    let streams = facts::streams(app.world_mut());
    let look = |n: &str| streams.get(n);
    // Everyone on the chain of any memory whose fact is the candidacy.
    let mut on_chains = BTreeSet::new();
    for (name, s) in &streams {
        for n in s.nodes() {
            if fact_of(n).is_some_and(|f| f.contains("running for mayor")) {
                on_chains.extend(trace(&look, name, n.id).into_iter().map(|h| h.holder));
            }
        }
    }
    let holders: BTreeSet<String> = mayor.iter().map(|s| s.holder.clone()).collect();
    assert_eq!(hour.holders["mayor"], holders.len(), "{mayor:#?}");
    assert_eq!(holders, on_chains, "{mayor:#?}");
    assert!(
        holders.contains("Klaus Mueller") && holders.contains("Maria Lopez"),
        "Klaus, and Maria from him: {holders:?}"
    );
    for s in mayor {
        assert_eq!(s.chain.first(), Some(&s.holder));
        match &s.from {
            Some(from) => assert_eq!(s.chain.get(1), Some(from), "{s:?}"),
            None => assert!(
                streams[&s.holder]
                    .nodes()
                    .iter()
                    .any(|n| first_hand(n) && fact_of(n).is_some_and(|f| f.contains("mayor"))),
                "a first holder holds it first-hand: {s:?}"
            ),
        }
        let last = s.chain.last().unwrap();
        assert!(
            mayor.iter().any(|t| &t.holder == last && t.from.is_none()),
            "{s:?} ends at a first holder"
        );
    }
}

/// `lab diffusion` killed (SIGKILL) at random moments and resumed each time gives the report an
/// uninterrupted run gives (its data, its tables; not its costs and wall times).
#[test]
fn a_diffusion_lab_killed_at_random_moments_and_resumed_reports_what_a_straight_run_does() {
    use std::time::{Duration, Instant};
    let dir = crate::temp_dir("lab-kill");
    let run = |out: &std::path::Path, resume: bool, minutes: &str| {
        let args = ["--days", "0.125", "--every-morning", "--name", "k"];
        let mut c = lab_3("diffusion", &args, out, resume);
        c.args(["--checkpoint-minutes", minutes]);
        c
    };
    let (a, b) = (dir.join("a"), dir.join("b"));
    let t = Instant::now();
    // The straight run checkpoints every game hour; the stopped one also every 5 game minutes
    // (`--checkpoint-minutes 0`), so its stops fall between hours too and it goes on from
    // there: where checkpoints fall changes nothing.
    assert!(
        run(&a, false, "10").status().unwrap().success(),
        "the straight run"
    );
    let straight_us = t.elapsed().as_micros() as u64;
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
        | 1;
    eprintln!("random seed {seed}; the straight run took {straight_us} µs");
    let mut next = move |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n.max(1)
    };
    let unfinished = |out: &std::path::Path| {
        std::fs::read_dir(out).is_ok_and(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        })
    };
    // First a stop just after a checkpoint between hours, so that the run goes on from one.
    let mut child = run(&b, false, "0").spawn().unwrap();
    assert!(
        kill_between_hours(&mut child, &b, "seed-1"),
        "a checkpoint between hours before the run ended"
    );
    // Then a stop between a checkpoint's data and the checkpoint itself: the run goes on and is
    // stopped at a later checkpoint, whose data is kept and the checkpoint put back to the one
    // before, as when a stop falls after the data is written and before its checkpoint is. The
    // stretch between the two is run again, and its cost must be counted once.
    let sub = "seed-1";
    let first = checkpoint_time(&b, sub).unwrap();
    // `lab status` says where the stopped run stands, from its files.
    let status = |out: &std::path::Path| {
        let o = std::process::Command::new(crate::simulacra_bin())
            .args(["lab", "status", "--out"])
            .arg(out)
            .output()
            .unwrap();
        assert!(o.status.success(), "lab status: {o:?}");
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let said = status(&b);
    assert!(
        said.contains("nobody works in it now")
            && said.contains(&format!(
                "town 1: checkpoint at {}; ",
                first.trim_end_matches(',').trim_matches('"')
            ))
            && said.contains("\n    holders by memory at ")
            && said.contains("probes asked: start"),
        "{said}"
    );
    let partial = partial_in(&b).unwrap();
    let cp = |p: &std::path::Path| p.join(sub).join("saves/checkpoint");
    crate::copy_dir(&cp(&partial), &dir.join("first"));
    let mut child = run(&b, true, "0").spawn().unwrap();
    // While the resume works, `lab status` says so (asking does not stop it from beginning).
    let working = format!("a process works in it now (process {})", child.id());
    let begun = Instant::now();
    while !status(&b).contains(&working) {
        assert!(
            child.try_wait().unwrap().is_none() && begun.elapsed().as_secs() < 60,
            "lab status sees the resume at work"
        );
    }
    assert!(
        kill_between_hours_after(&mut child, &b, sub, Some(&first)),
        "a later checkpoint between hours"
    );
    std::fs::remove_dir_all(cp(&partial)).unwrap();
    crate::copy_dir(&dir.join("first"), &cp(&partial));
    let mut kills = 2;
    let mut done = false;
    for _ in 0..8 {
        let mut child = run(&b, unfinished(&b), "0").spawn().unwrap();
        // Half the straight run's time is mostly starting up: stops between a half and one
        // and a half of it fall in the running hours (or after the end, and it finished).
        std::thread::sleep(Duration::from_micros(straight_us / 2 + next(straight_us)));
        if child.try_wait().unwrap().is_some_and(|s| s.success()) {
            done = true;
            break;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
    }
    if !done {
        assert!(
            run(&b, unfinished(&b), "0").status().unwrap().success(),
            "the last resume finishes"
        );
    }
    eprintln!("killed {kills} time(s)");
    let report = |out: &std::path::Path| {
        let folder = report_in(out);
        let run: diffusion::SeedRun = serde_json::from_str(
            &std::fs::read_to_string(folder.join("seed-1/diffusion.json")).unwrap(),
        )
        .unwrap();
        let md = std::fs::read_to_string(folder.join("report.md")).unwrap();
        let section = md
            .split("\n## ")
            .find(|s| s.starts_with("Information diffusion"))
            .unwrap_or_default()
            .to_string();
        let csv = |f: &str| std::fs::read_to_string(folder.join(f)).unwrap();
        (run, section, csv("probes.csv"), csv("tree.csv"))
    };
    let (ra, sa, pa, ta) = report(&a);
    let (rb, sb, pb, tb) = report(&b);
    assert_eq!(rb.rounds, ra.rounds, "probe rounds");
    assert_eq!(rb.hours, ra.hours, "holders every hour");
    assert_eq!(rb.tree, ra.tree, "the diffusion tree");
    assert_eq!(rb.talk, ra.talk, "what the conversations carried");
    assert_eq!(ra.rounds.len(), 3, "start, the morning at 08:00, end");
    let hours = |r: &diffusion::SeedRun| r.costs.iter().map(|c| c.game_hours).sum::<f64>();
    assert!(
        (hours(&rb) - hours(&ra)).abs() < 1e-6,
        "the game hours of the stopped run's sittings ({}) add up to the straight run's ({}): {:#?}",
        hours(&rb),
        hours(&ra),
        rb.costs.iter().map(|c| &c.phase).collect::<Vec<_>>()
    );
    assert_eq!(sb, sa, "the report's diffusion section");
    assert_eq!(pb, pa, "probes.csv");
    assert_eq!(tb, ta, "tree.csv");
    // Every sitting ran this build: `build.txt` names its source once, and the report says so.
    let version = std::process::Command::new(crate::simulacra_bin())
        .arg("--version")
        .output()
        .unwrap();
    let version = String::from_utf8_lossy(&version.stdout).to_string();
    let source = version
        .split("(source ")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap_or_else(|| panic!("`--version` names the build's source: {version}"));
    assert_eq!(
        source,
        simulacra::SOURCE,
        "the test's build is the program's"
    );
    let built = std::fs::read_to_string(report_in(&b).join("build.txt")).unwrap();
    assert_eq!(built, format!("{source}\n"), "{kills} resumes, one build");
    let md = std::fs::read_to_string(report_in(&b).join("report.md")).unwrap();
    assert!(md.contains(&format!("Built from source {source}")), "{md}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `lab interviews --hours N` stopped on the way, just after a checkpoint between game hours,
/// goes on to its hours before it interviews, as a run not stopped does (it used to interview at
/// the moment of the stop).
#[test]
fn interviews_stopped_before_their_hours_go_on_to_them() {
    let out = crate::temp_dir("lab-interviews-resume");
    let run = |resume: bool| {
        let args = [
            "--hours",
            "2",
            "--residents",
            "Klaus",
            "--conditions",
            "Full,NoMemory",
        ];
        let mut c = lab_3("interviews", &args, &out, resume);
        c.args(["--name", "i", "--checkpoint-minutes", "0"]);
        c
    };
    let mut child = run(false).spawn().unwrap();
    assert!(
        kill_between_hours(&mut child, &out, ""),
        "a checkpoint between hours before the run ended"
    );
    assert!(run(true).status().unwrap().success(), "the resumed run");
    let meta = std::fs::read_to_string(report_in(&out).join("town/meta.ron")).unwrap();
    assert!(
        meta.contains("now: \"February 13, 2023, 08:00:00\""),
        "interviewed after the two hours: {meta}"
    );
    let _ = std::fs::remove_dir_all(&out);
}

/// Towns run side by side on one shared runtime report what they report one after another:
/// each steps on its own answers and counts only its own requests.
#[test]
fn towns_run_side_by_side_on_one_runtime_report_what_they_report_one_after_another() {
    let sim = |seed| {
        let mut s = scripted_n3(&GameConfig {
            llm: LlmConfig::scripted(Vec::new()),
            ..Default::default()
        });
        s.scenario.start = GameTime::parse("2023-02-13 10:00").unwrap();
        s.config.cognition.seed = seed;
        s
    };
    let opts = diffusion::Options {
        facts: crate::the_villes_facts(),
        hours: 2,
        every_morning: false,
        seeds: 2,
    };
    let out = scratch("side-by-side");
    let run = |name: &str, together: bool| {
        let folder = Folder::open(&out, name, false).unwrap();
        lab::town::side_by_side(vec![(1, sim(1)), (2, sim(2))], together, |seed, s, llm| {
            diffusion::run_seed_on(s, &folder, &opts, seed, llm)
        })
        .unwrap()
    };
    let apart = run("apart", false);
    let together = run("together", true);
    assert_eq!(apart.len(), 2);
    for (a, t) in apart.iter().zip(&together) {
        assert_eq!(t.seed, a.seed);
        assert_eq!(t.hours, a.hours);
        assert_eq!(t.rounds, a.rounds);
        assert_eq!(t.tree, a.tree);
        assert_eq!(t.talk, a.talk);
        assert_eq!(t.social, a.social);
        let calls = |r: &diffusion::SeedRun| {
            r.costs
                .iter()
                .map(|c| (c.phase.clone(), c.chat_calls, c.embed_calls))
                .collect::<Vec<_>>()
        };
        assert_eq!(calls(t), calls(a), "each town counts its own requests");
        assert!(a.costs.iter().any(|c| c.chat_calls > 0), "{:?}", a.costs);
    }
    let _ = std::fs::remove_dir_all(&out);
}

/// `lab relationships` over the towns a run of several kept (`--towns`): the scenario asked once
/// at its start (the towns' own), each kept town once after its hours, min / median / max of each
/// density beside the paper, each town's answers in its folder; `--seeds 2 --together` runs two
/// towns between two rounds; `--towns` with `--days` refused. `lab party --seeds 2` runs two
/// towns to the end of the gathering and reports both with the spread; a town done before a stop
/// is not run or counted again.
#[test]
fn relationships_and_the_party_report_over_several_towns() {
    let dir = crate::temp_dir("lab-towns");
    let command = |args: &[&str], world: bool| {
        let mut c = std::process::Command::new(crate::simulacra_bin());
        c.arg("lab").args(args);
        if world {
            c.args(["--scenario", "the_ville_n3", "--routine"]);
        }
        c.args(["--scripted-llm", "--out"])
            .arg(&dir)
            .stdout(std::process::Stdio::null());
        c.output().unwrap()
    };
    let lab = |args: &[&str], world: bool| {
        let out = command(args, world);
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let report = |name: &str| {
        std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| p.is_dir() && p.file_name().unwrap().to_string_lossy().starts_with(name))
            .unwrap_or_else(|| panic!("a report folder {name}-…"))
    };
    let relationships = |folder: &std::path::Path, seed: u32| -> measures::relationships::Run {
        serde_json::from_str(
            &std::fs::read_to_string(folder.join(format!("seed-{seed}/relationships.json")))
                .unwrap(),
        )
        .unwrap()
    };
    // Two towns side by side, an hour from 10:00.
    let two = |kind: &str, name: &str| {
        let hour = ["--start", "2023-02-13 10:00", "--days", "0.0417"];
        let towns = ["--seeds", "2", "--together", "--name", name];
        lab(&[&[kind][..], &hour[..], &towns[..]].concat(), true);
    };
    two("diffusion", "d");
    let d = report("d-");
    let kept = lab::runs::folder::towns_in(&d).unwrap();
    assert_eq!(
        kept.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        [1, 2],
        "each town kept"
    );
    let towns = d.to_string_lossy().to_string();
    let refused = command(
        &[
            "relationships",
            "--towns",
            &towns,
            "--days",
            "1",
            "--name",
            "x",
        ],
        false,
    );
    assert!(
        !refused.status.success(),
        "--towns takes the towns as they are"
    );
    lab(&["relationships", "--towns", &towns, "--name", "r"], false);
    let r = report("r-");
    let md = std::fs::read_to_string(r.join("report.md")).unwrap();
    assert!(md.contains("## Relationships, 2 towns"), "{md}");
    assert!(md.contains("density (by memory)"), "{md}");
    assert!(md.contains("| the paper | start → end |"), "{md}");
    assert!(
        md.contains("| the scenario | start | February 13, 2023, 10:00:00 |"),
        "the towns' own scenario at their start, asked once: {md}"
    );
    assert!(md.contains("| min / median / max | end |"), "{md}");
    assert!(
        !md.contains("| min / median / max | start |"),
        "one start, no spread: {md}"
    );
    for f in ["knows.csv", "knows-start.graphml"] {
        assert!(r.join(format!("start/{f}")).exists(), "start/{f}");
    }
    for seed in [1, 2] {
        for f in ["knows.csv", "knows-end.graphml", "knows.png", "social.csv"] {
            assert!(
                r.join(format!("seed-{seed}/{f}")).exists(),
                "seed-{seed}/{f}"
            );
        }
        let run = relationships(&r, seed);
        assert_eq!(run.rounds.len(), 1, "a kept town is asked once");
        assert_eq!(
            run.rounds[0].at,
            GameTime::parse("2023-02-13 11:00").unwrap(),
            "as it was kept, after its hour"
        );
        assert_eq!(run.rounds[0].answers.len(), 6, "every ordered pair");
        assert!(
            md.contains(&format!("| {seed} | end | February 13, 2023, 11:00:00 |")),
            "{md}"
        );
    }
    // Towns run here, side by side, each asked at its start and after its hour.
    two("relationships", "s");
    let rs = report("s-");
    let md = std::fs::read_to_string(rs.join("report.md")).unwrap();
    for round in ["start", "end"] {
        assert!(
            md.contains(&format!("| min / median / max | {round} |")),
            "{round}: {md}"
        );
    }
    for seed in [1, 2] {
        let run = relationships(&rs, seed);
        assert_eq!(run.rounds.len(), 2, "start and end");
        assert_eq!(run.rounds[1].at.0 - run.rounds[0].at.0, 3600);
        assert!(
            run.sitting.is_none() && run.costs.len() == 3,
            "{:?}",
            run.costs
        );
    }

    lab(
        &[
            "party",
            "--start",
            "2023-02-14 16:30",
            "--seeds",
            "2",
            "--name",
            "p",
        ],
        true,
    );
    let p = report("p-");
    let md = std::fs::read_to_string(p.join("report.md")).unwrap();
    assert!(md.contains("## The gathering, 2 towns"), "{md}");
    assert!(md.contains("| min / median / max |"), "{md}");
    assert!(md.contains("town 2: "), "each town's cost: {md}");
    for seed in [1, 2] {
        assert!(p.join(format!("party-seed-{seed}.csv")).exists());
        let run: gathering::Run = serde_json::from_str(
            &std::fs::read_to_string(p.join(format!("seed-{seed}/party.json"))).unwrap(),
        )
        .unwrap();
        assert_eq!(run.guests.len(), 2, "everyone but the organiser");
    }
    // A town done before a stop: its data as it was, no second cost.
    let mut sim = scripted_n3(&GameConfig {
        llm: LlmConfig::scripted(Vec::new()),
        ..Default::default()
    });
    sim.scenario.start = GameTime::parse("2023-02-14 16:30").unwrap();
    let folder = Folder::open(&dir, "again", false).unwrap();
    let first = party::run_on(sim.clone(), &folder, "seed-1/", "", None).unwrap();
    assert_eq!(first.costs.len(), 1, "{:?}", first.costs);
    let again = party::run_on(sim, &folder, "seed-1/", "", None).unwrap();
    assert_eq!(again, first);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_invitations_lab_asks_everyone_but_the_organiser_and_reads_only_the_layout_asked() {
    let answer = r#"{"in_the_way": "nothing", "reason": "I love parties", "will_attend": true}"#;
    let config = GameConfig {
        llm: LlmConfig::scripted(vec![crate::talk::rule("invite_answer", answer)]),
        ..Default::default()
    };
    let ask = |weigh_first: bool| {
        let mut sim = scripted_n3(&config);
        sim.config.cognition.social.weigh_first = weigh_first;
        measures::invitations::run(sim, "town", "party").unwrap()
    };
    let run = ask(true);
    assert_eq!(
        run.gathering.as_ref().unwrap().organiser,
        "Isabella Rodriguez"
    );
    let names: Vec<&str> = run.decisions.iter().map(|d| d.resident.as_str()).collect();
    assert_eq!(names, ["Klaus Mueller", "Maria Lopez"], "everyone but her");
    for d in &run.decisions {
        assert_eq!(d.accept, Some(true), "{d:?}");
        assert_eq!(
            (d.in_the_way.as_str(), d.reason.as_str()),
            ("nothing", "I love parties")
        );
        assert!(!d.no_reason && d.coherent() == Some(true), "{d:?}");
        assert!(!d.invited_before, "{d:?}");
    }
    let out = scratch("invitations");
    let folder = Folder::open(&out, "t", false).unwrap();
    let md = measures::invitations::report(std::slice::from_ref(&run), &folder, true).unwrap();
    assert!(md.contains("| 2 | 2 | 2 | 0 (0) | 2 (2) | 0 | 2 |"), "{md}");
    // Asked with the decision first, an answer laid out the other way is no valid answer: it is
    // counted as such, not read as a yes or a no.
    let other = ask(false);
    assert!(
        other.decisions.iter().all(|d| d.accept.is_none()),
        "{other:?}"
    );
    let md = measures::invitations::report(&[other], &folder, false).unwrap();
    assert!(md.contains("| 2 | 0 | 0 | 0 (0) | 0 (0) | 0 | 0 |"), "{md}");
}

/// A town that is not Smallville, as a reviewer's held-out town is: its map and cast generated
/// from a seed, its own facts (a plan of one resident, a poetry reading another organises at a
/// place of its own), run through `simulacra lab diffusion` and `simulacra lab party` with the commands
/// the Ville's runs use. Every resident is asked about the town's own facts, the party lab finds
/// the town's own gathering and organiser, and no report names the Ville or its people.
#[test]
fn a_held_out_town_runs_through_the_diffusion_and_party_labs_with_their_commands() {
    use simulacra::agent::persona::{FollowedFact, read_scenario};
    let dir = scratch("held-out");
    std::fs::create_dir_all(&dir).unwrap();
    let bin = crate::simulacra_bin();
    let ok = |c: &mut std::process::Command| {
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{c:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (map, scenario) = (dir.join("brook.ron"), dir.join("brook_n3.ron"));
    ok(std::process::Command::new(&bin)
        .args([
            "generate",
            "town",
            "--residents",
            "3",
            "--seed",
            "21",
            "--out",
        ])
        .arg(&map));
    ok(std::process::Command::new(&bin)
        .args([
            "generate",
            "cast",
            "--residents",
            "3",
            "--seed",
            "21",
            "--map",
        ])
        .arg(&map)
        .arg("--out")
        .arg(&scenario));
    // The town's own facts: the second resident's plan, and a gathering the first organises at
    // its first haunt, on the first morning; each first held by the one it is about.
    let (mut town, _) = read_scenario(&scenario).unwrap();
    let (host, planner) = (
        town.residents[0].name.clone(),
        town.residents[1].name.clone(),
    );
    let first = |n: &str| n.split_whitespace().next().unwrap().to_lowercase();
    // Where the host spends its time: a haunt, else its work, else its home (a sector's name).
    let host_spec = &town.residents[0];
    let place = host_spec
        .haunts
        .first()
        .or(host_spec.work.as_ref().map(|w| &w.place))
        .unwrap_or(&host_spec.home)
        .split(':')
        .next()
        .unwrap()
        .to_string();
    let plan = format!("{planner} is opening a bookshop");
    let reading =
        format!("{host} is hosting a poetry reading at {place} on February 13 from 8 AM to 9 AM");
    town.residents[0].memories.push_str(&format!("; {reading}"));
    town.residents[1].memories.push_str(&format!("; {plan}"));
    town.facts = vec![
        FollowedFact {
            name: "bookshop".into(),
            question: "Do you know who is opening a bookshop?".into(),
            statement: plan.clone(),
            place: None,
            answer_all: vec![vec![first(&planner)], vec!["bookshop".into()]],
            paper: None,
        },
        FollowedFact {
            name: "reading".into(),
            question: "Did you know there is a poetry reading this morning?".into(),
            statement: reading.clone(),
            place: Some(place.clone()),
            answer_all: vec![vec!["poetry".into()], vec![first(&host)]],
            paper: None,
        },
    ];
    std::fs::write(
        &scenario,
        simulacra::import::scenario_text(&town, "a held-out town"),
    )
    .unwrap();
    // The commands the Ville's runs use, on this town: the diffusion lab over its first three
    // hours, the party lab to the end of the reading.
    let lab = |kind: &str, args: &[&str]| {
        let out = dir.join(kind);
        let mut c = std::process::Command::new(&bin);
        c.args(["lab", kind, "--scenario"])
            .arg(&scenario)
            .args(["--scripted-llm", "--start", "2023-02-13 06:00"])
            .args(args)
            .arg("--out")
            .arg(&out);
        ok(&mut c);
        report_in(&out)
    };
    let diffusion = lab("diffusion", &["--days", "0.125"]);
    let party = lab("party", &[]);
    let read = |f: std::path::PathBuf| std::fs::read_to_string(&f).unwrap_or_default();
    let report = read(diffusion.join("report.md"));
    // The report names the town's facts and their first holders; the facts' statements are in
    // its facts.json.
    for said in ["| bookshop |", "| reading |", &host, &planner] {
        assert!(report.contains(said), "{said:?} in the report:\n{report}");
    }
    let facts = read(diffusion.join("facts.json"));
    for said in [&plan, &reading] {
        assert!(
            facts.contains(said.as_str()),
            "{said:?} in facts.json:\n{facts}"
        );
    }
    // Every resident asked about each of the town's facts at the start and the end.
    let probes = read(diffusion.join("probes.csv"));
    for fact in ["bookshop", "reading"] {
        for r in &town.residents {
            let row = format!(",{fact},{},", r.name);
            let asked = probes.lines().filter(|l| l.contains(&row)).count();
            assert_eq!(asked, 2, "{} asked of {fact} twice:\n{probes}", r.name);
        }
    }
    let party_md = read(party.join("report.md"));
    assert!(
        party_md.contains(&host)
            && party_md.contains(&place)
            && party_md.contains("poetry reading"),
        "the town's own gathering and organiser:\n{party_md}"
    );
    // Nothing of the Ville in what either lab wrote of this town.
    for f in ["report.md", "probes.csv", "tree.csv", "diffusion.json"] {
        for text in [read(diffusion.join(f)), read(party.join(f))] {
            for ville in [
                "Smallville",
                "the Ville",
                "Isabella",
                "Hobbs",
                "Sam Moore",
                "Valentine",
            ] {
                assert!(!text.contains(ville), "{f} names {ville}:\n{text}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A diffusion town whose residents run on clocks of their own (`sim.own_clocks`), its lines
/// slow to come and a checkpoint after every piece of five game minutes (each bringing everyone
/// to one step first), reports what the same town reports in lock-step: the same probes, tree,
/// talk, social life and requests.
#[test]
fn a_diffusion_town_on_clocks_of_its_own_reports_what_it_reports_in_lock_step() {
    lab::town::set_checkpoint_every(std::time::Duration::ZERO);
    let rules: Vec<simulacra::llm::config::ScriptRule> = crate::talk::candidacy_rules()
        .into_iter()
        .map(|r| simulacra::llm::config::ScriptRule { delay_ms: 20, ..r })
        .collect();
    let sim = |own_clocks| {
        let mut s = scripted_n3(&GameConfig {
            llm: LlmConfig::scripted(rules.clone()),
            ..Default::default()
        });
        s.scenario.start = GameTime::parse("2023-02-13 08:00").unwrap();
        s.config.sim.own_clocks = own_clocks;
        s
    };
    let opts = diffusion::Options {
        facts: crate::the_villes_facts(),
        hours: 3,
        every_morning: false,
        seeds: 1,
    };
    let out = scratch("own-clocks");
    let run = |name: &str, own_clocks: bool| {
        let folder = Folder::open(&out, name, false).unwrap();
        lab::town::side_by_side(vec![(1, sim(own_clocks))], false, |seed, s, llm| {
            diffusion::run_seed_on(s, &folder, &opts, seed, llm)
        })
        .unwrap()
        .remove(0)
    };
    let lockstep = run("lockstep", false);
    let own = run("own", true);
    assert!(
        lockstep.talk.contains("resident lines") && !lockstep.talk.contains(" 0 resident lines"),
        "{}",
        lockstep.talk
    );
    assert_eq!(own.rounds, lockstep.rounds);
    assert_eq!(own.hours, lockstep.hours);
    assert_eq!(own.tree, lockstep.tree);
    assert_eq!(own.talk, lockstep.talk);
    assert_eq!(own.social, lockstep.social);
    assert_eq!(own.heard, lockstep.heard);
    let calls = |r: &diffusion::SeedRun| {
        r.costs
            .iter()
            .map(|c| (c.phase.clone(), c.chat_calls, c.embed_calls))
            .collect::<Vec<_>>()
    };
    assert_eq!(calls(&own), calls(&lockstep));
    let _ = std::fs::remove_dir_all(&out);
}
