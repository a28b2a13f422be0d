//! Towns made for the original Generative Agents: its matrix folder loads as a town, our town
//! exported to it comes back the same, and malformed folders give errors that name the file
//! and the row or cell. Fixtures: `tests/fixtures/original/` (see its `make_fixtures.py`).

use simulacra::data::data_root;
use simulacra::data_error::DataError;
use simulacra::sim::map::original::{export_matrix, load_matrix};
use simulacra::sim::map::{Tile, WorldMap, load_map, parse_map, write_ron};
use std::path::{Path, PathBuf};

fn tiny_town() -> PathBuf {
    data_root().join("tests/fixtures/original/tiny_town/matrix")
}

/// Every tile's address, walkability and object, and every spawn point, are the same.
pub fn assert_same_town(a: &WorldMap, b: &WorldMap) {
    assert_eq!(a.world, b.world);
    assert_eq!((a.width, a.height), (b.width, b.height));
    for y in 0..a.height {
        for x in 0..a.width {
            let t = Tile::new(x, y);
            assert_eq!(
                a.address(t).to_string(),
                b.address(t).to_string(),
                "address at {t}"
            );
            assert_eq!(a.walkable(t), b.walkable(t), "walkable at {t}");
            assert_eq!(
                a.object_at(t).map(|k| k.name),
                b.object_at(t).map(|k| k.name),
                "object at {t}"
            );
        }
    }
    let spawns = |m: &WorldMap| {
        let mut v: Vec<String> = m
            .spawns
            .iter()
            .map(|p| {
                format!(
                    "{}:{}:{}@{}",
                    m.sectors[m.arenas[p.arena].sector].name,
                    m.arenas[p.arena].name,
                    p.name,
                    p.tile
                )
            })
            .collect();
        v.sort();
        v
    };
    assert_eq!(spawns(a), spawns(b));
}

#[test]
fn our_smallville_exported_to_the_originals_format_and_imported_again_is_the_same_town() {
    let ours = load_map(&data_root().join("maps/smallville.ron")).expect("bundled map");
    let dir = crate::temp_dir("export-smallville");
    let files = export_matrix(&ours, &dir).expect("exports");
    assert!(files.len() >= 11, "{files:?}");
    // The layers are one row of width × height cells each, as the original reads them.
    let collision = std::fs::read_to_string(dir.join("maze/collision_maze.csv")).unwrap();
    assert_eq!(collision.lines().count(), 1);
    assert_eq!(collision.trim().split(", ").count(), 140 * 100);
    // Its pathfinder blocks only the id 32125: every wall, water and tree tile carries it, and
    // furniture does not (the original's agents walk onto the bed they use).
    let walls = (0..100)
        .flat_map(|y| (0..140).map(move |x| Tile::new(x, y)))
        .filter(|t| ours.terrain(*t).is_some_and(|k| !k.walkable()))
        .count();
    assert_eq!(
        collision
            .trim()
            .split(", ")
            .filter(|c| *c == "32125")
            .count(),
        walls
    );
    let (back, report) = load_matrix(&dir).expect("imports");
    assert_same_town(&ours, &back);
    assert!(report.notes.is_empty(), "{report}");
    // And through a map file of ours.
    let text = write_ron(&back, "round trip");
    let again = parse_map(Path::new("roundtrip.ron"), &text).expect("the written map loads");
    assert_same_town(&ours, &again);
}

#[test]
fn a_hand_made_matrix_town_loads_with_its_odd_shapes_shared_object_ids_and_spawns() {
    let (map, report) = load_matrix(&tiny_town()).expect("fixture loads");
    assert_eq!(
        map.world, "Tiny Town",
        "the world's name comes from world_blocks.csv"
    );
    assert_eq!((map.width, map.height), (30, 20));
    assert_eq!(map.sectors.len(), 3);
    assert_eq!(map.arenas.len(), 8);
    assert_eq!(map.spawns.len(), 3);
    assert!(
        report.read[0].contains("19 object kinds"),
        "{}",
        report.read[0]
    );
    // One legend id, "bed", painted in two rooms: each tile takes its arena from the arena layer.
    let house = "Tiny Town:Hart family's house";
    assert!(map.has_address(&format!("{house}:Mina Hart's room:bed")));
    assert!(map.has_address(&format!("{house}:Theo Hart's room:bed")));
    // The same arena name in two sectors gives two arenas.
    assert!(map.has_address(&format!("{house}:kitchen")));
    assert!(map.has_address("Tiny Town:Corner Cafe:kitchen"));
    // An L-shaped arena: its tiles are exactly those painted, not its bounding box.
    let kitchen = map.tiles_of(&format!("{house}:kitchen"));
    assert!(kitchen.contains(&Tile::new(12, 8)));
    assert!(!kitchen.contains(&Tile::new(5, 8)), "outside the L");
    // The pond in the middle of the park is a hole: in the sector, not walkable.
    assert!(!map.walkable(Tile::new(22, 16)));
    assert_eq!(map.address(Tile::new(22, 16)).sector, Some("Willow Park"));
    // Spawn names repeat across arenas; each is kept with its own arena.
    let sp_a: Vec<_> = map.spawns.iter().filter(|p| p.name == "sp-A").collect();
    assert_eq!(sp_a.len(), 2);
    assert_ne!(sp_a[0].arena, sp_a[1].arena);
    for p in &map.spawns {
        assert!(map.walkable(p.tile));
        assert_eq!(map.arena_at(p.tile), Some(p.arena));
    }
    // Objects never block in a town drawn for the original: its collision layer decides.
    assert!(!map.objects_block);
    // Written as a map file of ours, it loads as the same town.
    let text = write_ron(&map, "tiny town");
    let again = parse_map(Path::new("tiny.ron"), &text).expect("the written map loads");
    assert_same_town(&map, &again);
    // And exported again, it imports as the same town.
    let dir = crate::temp_dir("tiny-town-again");
    export_matrix(&map, &dir).unwrap();
    let (third, _) = load_matrix(&dir).unwrap();
    assert_same_town(&map, &third);
}

/// A copy of the fixture town, changed by `edit`, and the error it gives.
fn broken(name: &str, edit: impl Fn(&Path)) -> DataError {
    match load_matrix(&edited_town(&format!("broken-{name}"), edit)) {
        Ok(_) => panic!("{name}: the broken town loaded"),
        Err(e) => e,
    }
}

/// A copy of the fixture town, changed by `edit`.
fn edited_town(name: &str, edit: impl Fn(&Path)) -> PathBuf {
    let dir = crate::temp_dir(name);
    for sub in ["maze", "special_blocks"] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        for e in std::fs::read_dir(tiny_town().join(sub)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(sub).join(e.file_name())).unwrap();
        }
    }
    std::fs::copy(
        tiny_town().join("maze_meta_info.json"),
        dir.join("maze_meta_info.json"),
    )
    .unwrap();
    edit(&dir);
    dir
}

#[test]
fn object_kinds_of_the_legend_painted_on_no_tile_are_left_out_and_reported() {
    // Towns made from a copy of the original keep object kinds they no longer paint.
    let dir = edited_town("unpainted-objects", |d| {
        let legend = d.join("special_blocks/game_object_blocks.csv");
        append(&legend, "32990, Tiny Town, <all>, harp");
        append(&legend, "32991, Tiny Town, <all>, zither");
    });
    let (map, report) = load_matrix(&dir).expect("the town loads");
    let (original, _) = load_matrix(&tiny_town()).unwrap();
    assert_same_town(&original, &map);
    assert_eq!(
        map.kinds.len(),
        original.kinds.len(),
        "no kind added for them"
    );
    assert!(
        report
            .notes
            .iter()
            .any(|n| n.contains("2 object kind(s)") && n.contains("harp, zither")),
        "{report}"
    );
    // A town whose object layer is empty still loads: its arenas are the places.
    let bare = edited_town("no-objects", |d| {
        let p = d.join("maze/game_object_maze.csv");
        let zeros: Vec<String> = cells(&p).iter().map(|_| "0".to_string()).collect();
        write_cells(&p, &zeros);
    });
    let (map, _) = load_matrix(&bare).expect("a town without objects loads");
    assert!(
        (0..map.height).all(|y| (0..map.width).all(|x| map.object_at(Tile::new(x, y)).is_none()))
    );
}

fn cells(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .trim()
        .split(',')
        .map(|c| c.trim().to_string())
        .collect()
}

fn write_cells(path: &Path, cells: &[String]) {
    std::fs::write(path, cells.join(", ") + "\n").unwrap();
}

fn append(path: &Path, line: &str) {
    let mut t = std::fs::read_to_string(path).unwrap();
    t.push_str(line);
    t.push('\n');
    std::fs::write(path, t).unwrap();
}

#[test]
fn malformed_matrix_folders_name_the_file_and_the_row_or_cell() {
    // A ragged layer: written one line per map row, with one row a cell short.
    let e = broken("ragged", |d| {
        let c = cells(&d.join("maze/collision_maze.csv"));
        let mut rows: Vec<String> = c.chunks(30).map(|r| r.join(", ")).collect();
        rows[4] = c[120..149].join(", ");
        std::fs::write(d.join("maze/collision_maze.csv"), rows.join("\n") + "\n").unwrap();
    });
    assert!(e.file.ends_with("maze/collision_maze.csv"), "{e}");
    assert_eq!(e.line, 5, "{e}");
    assert!(e.message.contains("ragged"), "{e}");

    // A single row that is too short.
    let e = broken("short", |d| {
        let c = cells(&d.join("maze/sector_maze.csv"));
        write_cells(&d.join("maze/sector_maze.csv"), &c[..c.len() - 3]);
    });
    assert!(e.file.ends_with("maze/sector_maze.csv"), "{e}");
    assert!(
        e.message.contains("597 cells") && e.message.contains("600"),
        "{e}"
    );

    // A tile whose id is missing from its legend.
    let e = broken("unknown-id", |d| {
        let p = d.join("maze/game_object_maze.csv");
        let mut c = cells(&p);
        c[31] = "40000".into();
        write_cells(&p, &c);
    });
    assert!(e.file.ends_with("maze/game_object_maze.csv"), "{e}");
    assert_eq!(e.field, "cell 31 (x 1, y 1)", "{e}");
    assert!(
        e.message.contains("40000") && e.message.contains("game_object_blocks.csv"),
        "{e}"
    );

    // A legend id painted on no tile.
    let e = broken("unused-id", |d| {
        append(
            &d.join("special_blocks/arena_blocks.csv"),
            "32400, Tiny Town, Corner Cafe, cellar",
        );
    });
    assert!(e.file.ends_with("special_blocks/arena_blocks.csv"), "{e}");
    let rows = std::fs::read_to_string(tiny_town().join("special_blocks/arena_blocks.csv"))
        .unwrap()
        .lines()
        .count();
    assert_eq!(e.line, rows + 1, "{e}");
    assert!(e.message.contains("cellar"), "{e}");

    // A sector with no arena: a new sector painted on street tiles.
    let e = broken("sector-without-arena", |d| {
        append(
            &d.join("special_blocks/sector_blocks.csv"),
            "32401, Tiny Town, Empty Lot",
        );
        let p = d.join("maze/sector_maze.csv");
        let mut c = cells(&p);
        for x in 2..6 {
            c[12 * 30 + x] = "32401".into();
        }
        write_cells(&p, &c);
    });
    assert!(e.file.ends_with("special_blocks/sector_blocks.csv"), "{e}");
    assert!(
        e.message.contains("Empty Lot") && e.message.contains("no arena"),
        "{e}"
    );

    // An arena painted outside every sector.
    let e = broken("arena-outside-sectors", |d| {
        let arenas = cells(&d.join("maze/arena_maze.csv"));
        let id = arenas.iter().find(|c| *c != "0").unwrap().clone();
        let p = d.join("maze/arena_maze.csv");
        let mut c = arenas;
        c[12 * 30 + 3] = id;
        write_cells(&p, &c);
    });
    assert!(e.file.ends_with("maze/arena_maze.csv"), "{e}");
    assert_eq!(e.field, "cell 363 (x 3, y 12)", "{e}");

    // A missing layer.
    let e = broken("missing-layer", |d| {
        std::fs::remove_file(d.join("maze/arena_maze.csv")).unwrap();
    });
    assert!(e.file.ends_with("maze/arena_maze.csv"), "{e}");
    assert!(e.message.contains("missing"), "{e}");

    // Not a number.
    let e = broken("not-a-number", |d| {
        let p = d.join("maze/collision_maze.csv");
        let mut c = cells(&p);
        c[45] = "wall".into();
        write_cells(&p, &c);
    });
    assert_eq!(e.field, "cell 45 (x 15, y 1)", "{e}");

    // A size that is not a number.
    let e = broken("bad-meta", |d| {
        std::fs::write(
            d.join("maze_meta_info.json"),
            r#"{"world_name": "tiny town", "maze_width": "30", "maze_height": 20}"#,
        )
        .unwrap();
    });
    assert!(e.file.ends_with("maze_meta_info.json"), "{e}");
    assert_eq!(e.field, "maze_width", "{e}");
}

#[test]
fn a_matrix_folder_is_a_map_wherever_a_map_is_asked_for() {
    // `--map FOLDER` and `simulacra check` go through load_map, which takes the folder (or the
    // folder that holds `matrix/`).
    let direct = load_map(&tiny_town()).expect("the matrix folder");
    let parent = load_map(tiny_town().parent().unwrap()).expect("the folder holding matrix/");
    assert_same_town(&direct, &parent);
}

fn tiny_base() -> PathBuf {
    data_root().join("tests/fixtures/original/tiny_base")
}

#[test]
fn a_base_folder_of_the_original_becomes_a_scenario_that_plays_an_hour_in_the_imported_town() {
    use simulacra::agent::{GridPos, Identity, Resident};
    use simulacra::import::{import_people, scenario_text};
    use simulacra::memory::stream::MemoryStream;
    let map = load_map(&tiny_town()).unwrap();
    let map_ref = tiny_town().display().to_string();
    let (scenario, report) = import_people(&tiny_base(), &map, &map_ref).expect("imports");
    let text = report.to_string();
    assert_eq!(scenario.start, "2023-02-13 00:00");
    assert_eq!(scenario.residents.len(), 2);
    let mina = &scenario.residents[0];
    let theo = &scenario.residents[1];
    assert_eq!(mina.name, "Mina Hart");
    assert_eq!(mina.home, "Hart family's house:Mina Hart's room");
    // "goes to bed around 11pm, awakes up around 6am" (the original's own grammar).
    assert_eq!(
        (mina.lifestyle.wake.as_str(), mina.lifestyle.sleep.as_str()),
        ("06:00", "23:00")
    );
    // "goes to bed around midnight, wakes up around 7:30am, and eats dinner around 6pm".
    assert_eq!(
        (theo.lifestyle.wake.as_str(), theo.lifestyle.sleep.as_str()),
        ("07:30", "00:00")
    );
    assert_eq!(theo.lifestyle.meals[2], "18:00");
    // "works at Corner Cafe from 9am to 5pm": a workplace with hours.
    let work = theo.work.as_ref().expect("Theo works at the cafe");
    assert!(work.place.starts_with("Corner Cafe:cafe"), "{}", work.place);
    assert_eq!((work.from.as_str(), work.to.as_str()), ("09:00", "17:00"));
    // "writes at her desk from 8am to noon and walks in Willow Park": the park is no workplace.
    assert!(mina.work.is_none(), "{:?}", mina.work);
    assert!(
        mina.haunts.iter().any(|h| h.starts_with("Willow Park")),
        "{:?}",
        mina.haunts
    );
    assert_eq!(mina.spawn, (3, 2));
    // Her spatial memory: every arena it lists that the map has.
    assert!(
        mina.known_places.contains(&"Corner Cafe:cafe".to_string()),
        "{:?}",
        mina.known_places
    );
    assert!(
        mina.known_places
            .contains(&"Hart family's house:kitchen".to_string())
    );
    // Mina's nodes become memories with their times, importance, kinds, evidence and chat
    // lines; Theo has none, so his own words seed him, reported.
    let nodes = &mina.memory_nodes;
    assert_eq!(nodes.len(), 6, "{nodes:?}");
    use simulacra::memory::stream::NodeKind;
    let support = &nodes[4];
    assert_eq!(support.kind, NodeKind::Thought);
    assert!(support.description.contains("support her brother"));
    assert_eq!(support.created, "2023-02-12 22:00:00");
    assert_eq!(support.importance, 6);
    assert_eq!(
        support.evidence,
        [4, 3],
        "node_4 and node_3 in the original"
    );
    assert_eq!(nodes[2].kind, NodeKind::Chat);
    assert_eq!(nodes[2].chat.len(), 3);
    assert_eq!(nodes[3].evidence, [3], "the chat event points at its chat");
    assert!(
        text.contains("Mina Hart: 6 memories from nodes.json with their times and importance (3 events, 2 thoughts, 1 chats)"),
        "{text}"
    );
    assert!(
        mina.memories.contains("science writer"),
        "her own words seed her too: {}",
        mina.memories
    );
    assert!(
        text.contains("Theo Hart: no memories in nodes.json"),
        "{text}"
    );
    assert!(text.contains("Mina Hart: no work place"), "{text}");
    assert!(text.contains("meal times not in lifestyle"), "{text}");

    // Written out, the scenario loads with its map and plays an hour with the scripted model.
    let dir = crate::temp_dir("imported-scenario");
    let path = dir.join("tiny.ron");
    std::fs::write(&path, scenario_text(&scenario, "test")).unwrap();
    let mut config = crate::scripted_config();
    config.sim.sec_per_step = 10;
    let mut sim = simulacra::SimPlugin::load(&path.display().to_string(), None, config)
        .expect("the imported scenario loads");
    sim.scenario.start = simulacra::sim::time::GameTime::parse("2023-02-13 09:00").unwrap();
    let mut app = simulacra::headless_app(sim);
    simulacra::run_steps(&mut app, 1);
    let start: Vec<(String, (i32, i32))> = positions(&mut app);
    {
        // The places she knew in the original are known here from the start (the cafe is out
        // of sight from her room).
        let world = app.world_mut();
        let mut q = world.query_filtered::<(
            &Identity,
            &simulacra::memory::spatial::SpatialMemory,
        ), With<Resident>>();
        let (_, known) = q
            .iter(world)
            .find(|(i, _)| i.name == "Mina Hart")
            .expect("Mina");
        assert!(
            known.knows("Corner Cafe", Some("cafe"), None),
            "Mina does not know the cafe"
        );
    }
    simulacra::run_steps(&mut app, 359);
    let end = positions(&mut app);
    assert_eq!(end.len(), 2);
    assert_ne!(start, end, "nobody moved in an hour");
    let world = app.world_mut();
    let mut q = world.query_filtered::<(&Identity, &MemoryStream), With<Resident>>();
    for (id, stream) in q.iter(world) {
        assert!(stream.len() > 1, "{} remembers nothing", id.name);
        if id.name == "Mina Hart" {
            // The carried-over thought, as the original had it, embedded again by ours.
            let n = stream
                .nodes()
                .iter()
                .find(|n| n.description.contains("support her brother"))
                .expect("Mina remembers wanting to support Theo");
            assert_eq!(
                n.created,
                simulacra::sim::time::GameTime::parse("2023-02-12 22:00").unwrap()
            );
            assert_eq!((n.importance, n.scored), (6, true));
            let evidence: Vec<&str> = n
                .evidence
                .iter()
                .filter_map(|e| stream.get(*e))
                .map(|e| e.description.as_str())
                .collect();
            assert_eq!(
                evidence,
                [
                    "Mina Hart is chatting with Theo Hart",
                    "conversing about Theo's new song for the open evening at Corner Cafe"
                ]
            );
            assert!(n.embedding.is_some(), "embedded by our embedder");
        }
    }

    fn positions(app: &mut bevy::prelude::App) -> Vec<(String, (i32, i32))> {
        let world = app.world_mut();
        let mut q = world.query_filtered::<(&Identity, &GridPos), With<Resident>>();
        let mut v: Vec<_> = q
            .iter(world)
            .map(|(i, p)| (i.name.clone(), (p.tile.x, p.tile.y)))
            .collect();
        v.sort();
        v
    }
    use bevy::prelude::With;
}

#[test]
fn a_persona_living_off_the_map_is_refused_with_the_file_and_field() {
    use simulacra::import::import_people;
    let base = crate::temp_dir("base-off-map");
    let copy = |rel: &str| {
        let to = base.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(tiny_base().join(rel), &to).unwrap();
    };
    copy("reverie/meta.json");
    copy("environment/0.json");
    for who in ["Mina Hart", "Theo Hart"] {
        copy(&format!("personas/{who}/bootstrap_memory/scratch.json"));
        copy(&format!(
            "personas/{who}/bootstrap_memory/spatial_memory.json"
        ));
    }
    let scratch = base.join("personas/Theo Hart/bootstrap_memory/scratch.json");
    let t = std::fs::read_to_string(&scratch).unwrap().replace(
        "Hart family's house:Theo Hart's room",
        "Hart family's house:attic",
    );
    std::fs::write(&scratch, &t).unwrap();
    let map = load_map(&tiny_town()).unwrap();
    let e = import_people(&base, &map, "tiny").expect_err("the attic is not on the map");
    assert!(
        e.file.ends_with("Theo Hart/bootstrap_memory/scratch.json"),
        "{e}"
    );
    assert_eq!(e.field, "living_area", "{e}");
    assert_eq!(
        e.line,
        t.lines()
            .position(|l| l.contains("\"living_area\""))
            .unwrap()
            + 1,
        "{e}"
    );
    assert!(e.message.contains("attic"), "{e}");
}

#[test]
fn memories_carried_over_from_the_original_are_checked_with_the_file_line_and_field() {
    use simulacra::import::{import_people, scenario_text};
    let map = load_map(&tiny_town()).unwrap();
    let (scenario, _) =
        import_people(&tiny_base(), &map, &tiny_town().display().to_string()).expect("imports");
    let good = scenario_text(&scenario, "test");
    let dir = crate::temp_dir("memory-nodes");
    let load = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        simulacra::SimPlugin::load(&path.display().to_string(), None, crate::scripted_config())
            .map(|_| ())
    };
    load("good.ron", &good).expect("the imported scenario loads");
    let line = good
        .lines()
        .position(|l| l.contains("memory_nodes"))
        .unwrap()
        + 1;
    for (name, from, to, field, words) in [
        (
            "evidence.ron",
            "evidence: [4, 3]",
            "evidence: [4, 9]",
            "residents[0].memory_nodes[4].evidence",
            "earlier entry",
        ),
        (
            "importance.ron",
            "importance: 6",
            "importance: 11",
            "residents[0].memory_nodes[4].importance",
            "1..=10",
        ),
        (
            "created.ron",
            "created: \"2023-02-12 22:00:00\"",
            "created: \"2023-02-14 22:00:00\"",
            "residents[0].memory_nodes[4].created",
            "after the scenario's start",
        ),
    ] {
        assert!(good.contains(from), "{from}");
        let e = load(name, &good.replacen(from, to, 1)).expect_err(name);
        assert_eq!(e.field, field, "{e}");
        assert_eq!(e.line, line, "{e}");
        assert!(e.message.contains(words), "{e}");
    }
}
