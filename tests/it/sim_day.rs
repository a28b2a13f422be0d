//! A whole game day headless: 25 residents on their routine leave home and come back; the
//! clock, paths and avatar behave.

use bevy::prelude::*;
use simulacra::agent::avatar::{Avatar, AvatarMove};
use simulacra::agent::{CurrentAction, GridPos, Resident};
use simulacra::sim::clock::SimClock;
use simulacra::sim::map::WorldMap;
use simulacra::{headless_app, run_steps};
use std::collections::HashMap;

#[test]
fn one_day_everyone_leaves_home_and_comes_back() {
    let mut app = headless_app(crate::scripted_sim("the_ville_n25"));
    run_steps(&mut app, 1);
    let map = app.world().resource::<WorldMap>().clone();
    let mut left: HashMap<String, bool> = HashMap::new();
    let mut returned: HashMap<String, bool> = HashMap::new();
    let mut moved_tiles = 0u64;
    for _ in 0..(8640 / 30) {
        run_steps(&mut app, 30);
        let world = app.world_mut();
        let mut q = world.query::<(&Resident, &GridPos)>();
        for (r, pos) in q.iter(world) {
            let name = r.persona.spec.name.clone();
            let sector = map
                .address(pos.tile)
                .sector
                .map(|s| format!("{}:{s}", map.world));
            let home = sector.as_deref() == Some(r.persona.home_sector.as_str());
            if !home {
                left.insert(name.clone(), true);
            } else if left.get(&name).copied().unwrap_or(false) {
                returned.insert(name.clone(), true);
            }
            if pos.prev != pos.tile {
                moved_tiles += 1;
            }
        }
    }
    let clock = app.world().resource::<SimClock>().clone();
    assert_eq!(clock.step, 8641);
    assert_eq!(clock.now.to_string(), "February 14, 2023, 00:00:10");
    // Half an hour after midnight everyone is in bed (the last ones walk there from the bathroom).
    run_steps(&mut app, 180);
    let world = app.world_mut();
    let mut q = world.query::<(&Resident, &GridPos, &CurrentAction)>();
    let people: Vec<_> = q
        .iter(world)
        .map(|(r, p, a)| (r.persona.clone(), *p, a.clone()))
        .collect();
    assert_eq!(people.len(), 25);
    for (p, pos, action) in &people {
        let name = &p.spec.name;
        assert!(
            left.get(name).copied().unwrap_or(false),
            "{name} never left home"
        );
        assert!(
            returned.get(name).copied().unwrap_or(false),
            "{name} never came back home"
        );
        assert_eq!(action.description, "sleeping", "{name}");
        assert_eq!(
            map.address(pos.tile).to_string(),
            p.bed,
            "{name} is not in bed at 00:30"
        );
    }
    assert!(moved_tiles > 100, "people hardly moved ({moved_tiles})");
}

#[test]
fn walks_follow_the_grid_one_tile_per_step() {
    let mut app = headless_app(crate::scripted_sim("the_ville_n3"));
    run_steps(&mut app, 1);
    let map = app.world().resource::<WorldMap>().clone();
    // From 06:00 to 09:00 Isabella walks from her apartment to the cafe counter.
    run_steps(&mut app, 6 * 360);
    let mut last: Option<GridPos> = None;
    let mut arrived = false;
    for _ in 0..(3 * 360) {
        run_steps(&mut app, 1);
        let world = app.world_mut();
        let mut q = world.query::<(&Resident, &GridPos, &CurrentAction)>();
        let (_, pos, action) = q
            .iter(world)
            .find(|(r, _, _)| r.persona.spec.name == "Isabella Rodriguez")
            .unwrap();
        assert!(
            pos.prev.manhattan(pos.tile) <= 1,
            "jumped from {} to {}",
            pos.prev,
            pos.tile
        );
        if pos.prev != pos.tile {
            assert!(
                map.walkable(pos.tile) || map.object_at(pos.tile).is_some(),
                "walked into {}",
                pos.tile
            );
        }
        if action.address.ends_with("behind the cafe counter")
            && map.address(pos.tile).to_string() == action.address
        {
            arrived = true;
        }
        last = Some(*pos);
    }
    assert!(last.is_some());
    assert!(arrived, "Isabella never reached the cafe counter");
}

#[test]
fn the_avatar_walks_and_is_blocked_by_walls() {
    let mut app = headless_app(crate::scripted_sim("the_ville_n3"));
    run_steps(&mut app, 1);
    let start = app
        .world_mut()
        .query_filtered::<&GridPos, With<Avatar>>()
        .single(app.world())
        .unwrap()
        .tile;
    // East in front of Hobbs Cafe.
    for _ in 0..5 {
        app.world_mut().write_message(AvatarMove { dx: 1, dy: 0 });
        app.update();
    }
    let now = app
        .world_mut()
        .query_filtered::<&GridPos, With<Avatar>>()
        .single(app.world())
        .unwrap()
        .tile;
    assert_eq!(now.x, start.x + 5);
    // North into the cafe's south wall.
    let map = app.world().resource::<WorldMap>().clone();
    let mut pos = now;
    for _ in 0..20 {
        app.world_mut().write_message(AvatarMove { dx: 0, dy: -1 });
        app.update();
        let p = app
            .world_mut()
            .query_filtered::<&GridPos, With<Avatar>>()
            .single(app.world())
            .unwrap()
            .tile;
        assert!(map.walkable(p), "the avatar stands on {p}");
        pos = p;
    }
    // The avatar stops just below the wall and never walks into it.
    assert_eq!(
        map.terrain(simulacra::sim::map::Tile::new(pos.x, pos.y - 1)),
        Some(simulacra::sim::map::Terrain::Wall)
    );
    assert_eq!(
        map.address(simulacra::sim::map::Tile::new(pos.x, pos.y - 1))
            .sector,
        Some("Hobbs Cafe")
    );
    assert!(pos.y < start.y && pos.x == start.x + 5, "{pos}");
}

/// `bench day` counts the tokens of every request its hours asked, however fast the model was:
/// what was still unanswered at their end (memories' scores, here needed only half an hour after
/// they are asked and answered three seconds late) is waited for, untimed, before anything is
/// counted.
#[test]
fn bench_day_counts_every_answer_its_hours_asked_for() {
    use simulacra::llm::config::{LlmConfig, ScriptRule};
    let mut config = crate::scripted_config();
    config.cognition.planning = simulacra::cognition::config::Planning::Routine;
    config.cognition.importance_gather_minutes = 1;
    config.cognition.memory_slack_steps = 180;
    config.llm = LlmConfig::scripted(vec![ScriptRule {
        purpose: Some("importance".into()),
        reply: "5".into(),
        delay_ms: 3000,
        ..Default::default()
    }]);
    let sim = simulacra::SimPlugin::load("the_ville_n3", None, config).expect("loads");
    let from = simulacra::sim::time::GameTime::parse("2023-02-13 07:00").unwrap();
    let r = simulacra::bench::day::bench_day(sim, from, 0.0, 0.5);
    let scored = &r.stats.by_purpose["importance"];
    assert!(scored.calls > 0);
    assert!(
        r.ahead.0 > 0 && r.ahead.1 > 0.5,
        "the last minutes' scores were still to come: {:?}",
        r.ahead
    );
    assert_eq!(
        scored.answered(),
        scored.calls as usize,
        "{}",
        r.ahead_line()
    );
    assert!(r.ahead_line().contains("asked ahead"));
    assert_eq!(
        r.reflections.len(),
        3,
        "each resident's reflections counted"
    );
    assert!(
        r.reflections_line()
            .contains("reflections begun per resident per game day: median "),
        "{}",
        r.reflections_line()
    );
}
