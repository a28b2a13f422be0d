//! Maps, scenarios and configs: the bundled ones load; each kind of mistake is reported with
//! the file, the line and what is wrong.

use simulacra::SimPlugin;
use simulacra::config::GameConfig;
use simulacra::data::data_root;
use simulacra::data_error::DataError;
use simulacra::sim::map::{Tile, load_map};
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// The 1-based line of the first line containing `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle in text")
        + 1
}

#[test]
fn bundled_map_loads_with_all_19_sectors() {
    let map = load_map(&data_root().join("maps/smallville.ron")).unwrap();
    assert_eq!((map.width, map.height), (140, 100));
    assert_eq!(map.sectors.len(), 19);
    for s in [
        "Hobbs Cafe",
        "The Rose and Crown Pub",
        "Oak Hill College",
        "The Willows Market and Pharmacy",
        "Harvey Oak Supply Store",
        "Johnson Park",
        "Dorm for Oak Hill College",
        "artist's co-living space",
        "Arthur Burton's apartment",
        "Ryan Park's apartment",
        "Isabella Rodriguez's apartment",
        "Giorgio Rossi's apartment",
        "Carlos Gomez's apartment",
        "Lin family's house",
        "Moreno family's house",
        "Moore family's house",
        "Tamara Taylor and Carmen Ortiz's house",
        "Adam Smith's house",
        "Yuriko Yamamoto's house",
    ] {
        assert!(map.sector_by_name(s).is_some(), "missing sector {s}");
    }
    for (s, a) in [
        ("Oak Hill College", "classroom"),
        ("Oak Hill College", "library"),
        ("Oak Hill College", "hallway"),
        ("Lin family's house", "kitchen"),
    ] {
        assert!(map.arena_by_name(s, a).is_some(), "missing {s}:{a}");
    }
    // All 46 object kinds appear somewhere in town.
    let used: std::collections::HashSet<usize> = map
        .arenas
        .iter()
        .flat_map(|a| a.objects.iter().map(|o| o.kind))
        .collect();
    assert_eq!(used.len(), simulacra::sim::map::objects::OBJECT_KINDS.len());
}

#[test]
fn tile_and_address_queries() {
    let map = load_map(&data_root().join("maps/smallville.ron")).unwrap();
    let tiles = map.tiles_of("the Ville:Hobbs Cafe:cafe:behind the cafe counter");
    assert!(!tiles.is_empty());
    for t in tiles {
        assert_eq!(
            map.address(*t).to_string(),
            "the Ville:Hobbs Cafe:cafe:behind the cafe counter"
        );
    }
    // The world prefix may be left out.
    assert_eq!(
        map.tiles_of("Hobbs Cafe:cafe").len(),
        map.tiles_of("the Ville:Hobbs Cafe:cafe").len()
    );
    assert!(map.tiles_of("Hobbs Cafe:kitchen").is_empty());
    // A street tile has only the world.
    assert_eq!(map.address(Tile::new(10, 42)).to_string(), "the Ville");
    assert!(map.walkable(Tile::new(10, 42)));
    // Walls and beds block; doors do not.
    let wall = map
        .tiles_of("the Ville:Hobbs Cafe")
        .iter()
        .find(|t| map.terrain(**t) == Some(simulacra::sim::map::Terrain::Wall))
        .unwrap();
    assert!(!map.walkable(*wall));
    let bed = map.tiles_of("Lin family's house:Eddy Lin's bedroom:bed")[0];
    assert!(!map.walkable(bed));
    let kitchen = map.arena_by_name("Lin family's house", "kitchen").unwrap();
    let words = map.describe_arena(kitchen);
    assert_eq!(
        words,
        "In the kitchen of Lin family's house there is a refrigerator, a cooking area, a kitchen sink and a toaster."
    );
}

#[test]
fn bundled_scenarios_load() {
    let n25 = SimPlugin::load("the_ville_n25", None, GameConfig::default()).unwrap();
    assert_eq!(n25.scenario.residents.len(), 25);
    let n3 = SimPlugin::load("the_ville_n3", None, GameConfig::default()).unwrap();
    let names: Vec<&str> = n3
        .scenario
        .residents
        .iter()
        .map(|p| p.spec.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["Isabella Rodriguez", "Maria Lopez", "Klaus Mueller"]
    );
    let isabella = &n3.scenario.residents[0];
    assert!(
        isabella
            .memories
            .iter()
            .any(|m| m.contains("Valentine") && m.contains("5pm to 7pm")),
        "{:?}",
        isabella.memories
    );
    assert_eq!(
        n25.scenario.start.to_string(),
        "February 13, 2023, 00:00:00"
    );
    let sam = n25
        .scenario
        .residents
        .iter()
        .find(|p| p.spec.name == "Sam Moore")
        .unwrap();
    assert!(sam.memories.iter().any(|m| m.contains("running for mayor")));
    // A path to a scenario works like a bundled name.
    let by_path = data_root().join("config/scenarios/the_ville_n3.ron");
    assert!(
        SimPlugin::load(
            by_path.to_str().unwrap(),
            Some("smallville"),
            GameConfig::default()
        )
        .is_ok()
    );
}

const TINY: &str = r#"(
    world: "w",
    width: 6,
    height: 5,
    legend: { '.': Grass, '#': Wall, '+': Door, '_': Floor },
    terrain: [
        "......",
        ".####.",
        ".#__+.",
        ".####.",
        "......",
    ],
    sectors: [
        (name: "house", rect: (1, 1, 4, 3), arenas: [
            (name: "room", rect: (2, 2, 2, 1), objects: [
                (kind: "bed", rect: (2, 2, 1, 1)),
            ]),
        ]),
    ],
)
"#;

fn map_error(name: &str, text: &str) -> DataError {
    let dir = crate::temp_dir("maps");
    let p = write(&dir, name, text);
    load_map(&p).expect_err("a bad map must not load")
}

#[test]
fn tiny_map_is_good() {
    let dir = crate::temp_dir("tiny");
    let map = load_map(&write(&dir, "tiny.ron", TINY)).unwrap();
    assert_eq!(map.address(Tile::new(3, 2)).to_string(), "w:house:room");
    assert_eq!(map.address(Tile::new(2, 2)).to_string(), "w:house:room:bed");
}

#[test]
fn a_world_name_that_would_cut_every_address_is_the_maps_error() {
    // `world: "the:Ville"` once loaded, and every home address then failed in the scenario.
    let bad = TINY.replacen("world: \"w\"", "world: \"the:Ville\"", 1);
    assert_ne!(bad, TINY);
    let e = map_error("colon.ron", &bad);
    assert_eq!(
        (e.field.as_str(), e.line),
        ("world", line_of(&bad, "the:Ville")),
        "{e}"
    );
    assert!(e.message.contains("has ':'"), "{e}");
}

#[test]
fn a_name_with_a_control_character_is_the_maps_error() {
    // A sector's name is printed, saved and put into prompts: a terminal's escape in it once
    // loaded and went everywhere.
    for (from, to) in [
        ("name: \"house\"", "name: \"house\u{1b}[2J\""),
        ("name: \"room\"", "name: \"room\\u{7}\""),
    ] {
        let bad = TINY.replacen(from, to, 1);
        assert_ne!(bad, TINY);
        let e = map_error("control.ron", &bad);
        assert_eq!(e.field, "name", "{e}");
        assert!(e.message.contains("control character"), "{e}");
        assert!(
            !e.to_string().chars().any(|c| c == '\u{1b}' || c == '\u{7}'),
            "{e:?}"
        );
    }
}

#[test]
fn unknown_object_name_is_reported_with_its_line() {
    let bad = TINY.replace("\"bed\"", "\"bedd\"");
    let e = map_error("unknown.ron", &bad);
    assert_eq!(e.line, line_of(&bad, "bedd"), "{e}");
    assert!(e.to_string().contains("unknown.ron:"), "{e}");
    assert!(
        e.message.contains("unknown object kind 'bedd'")
            && e.message.contains("did you mean 'bed'"),
        "{e}"
    );
}

#[test]
fn bad_tile_code_is_reported_with_its_line() {
    let bad = TINY.replace(".#__+.", ".#_x+.");
    let e = map_error("tile.ron", &bad);
    assert_eq!(e.line, line_of(&bad, ".#_x+."), "{e}");
    assert!(e.message.contains("bad tile code 'x'"), "{e}");
    assert_eq!(e.field, "terrain[2]");
}

#[test]
fn overlapping_arenas_are_reported() {
    let bad = TINY.replace(
        "            ]),\n        ]),",
        "            ]),\n            (name: \"closet\", rect: (3, 2, 1, 1), objects: []),\n        ]),",
    );
    let e = map_error("overlap.ron", &bad);
    assert_eq!(e.line, line_of(&bad, "\"closet\""), "{e}");
    assert!(e.message.contains("overlaps arena 'room'"), "{e}");
}

#[test]
fn object_outside_its_arena_is_reported() {
    let bad = TINY.replace(
        "(kind: \"bed\", rect: (2, 2, 1, 1))",
        "(kind: \"bed\", rect: (2, 2, 1, 2))",
    );
    let e = map_error("outside.ron", &bad);
    assert_eq!(e.line, line_of(&bad, "\"bed\""), "{e}");
    assert!(e.message.contains("outside its arena 'room'"), "{e}");
}

/// The town with a second place, a lawn on the street along the top row.
fn with_lawn(town: &str) -> String {
    let t = town.replace(
        "    sectors: [\n",
        "    sectors: [\n        (name: \"park\", rect: (0, 0, 6, 1), arenas: [ (name: \"lawn\", rect: (0, 0, 6, 1), objects: []) ]),\n",
    );
    assert!(t.contains("\"lawn\""));
    t
}

#[test]
fn unreachable_arena_is_reported() {
    // The street is the walkable region where the places are: with a lawn on it, the sealed
    // room is the one that cannot be reached.
    let bad = with_lawn(&TINY.replace(".#__+.", ".#__#."));
    let e = map_error("walled.ron", &bad);
    assert_eq!(e.line, line_of(&bad, "\"room\""), "{e}");
    assert!(e.message.contains("cannot be reached"), "{e}");
}

#[test]
fn a_town_inside_a_larger_empty_margin_or_with_solid_buildings_loads() {
    let dir = crate::temp_dir("margins");
    // The walled-off field on the right is larger than the street around the house, but no
    // place touches it: the street is where the places are.
    let margin = TINY
        .replace("width: 6,", "width: 16,")
        .replace("\"......\",", "\"......#.........\",")
        .replace("\".####.\",", "\".####.#.........\",")
        .replace("\".#__+.\",", "\".#__+.#.........\",");
    let map = load_map(&write(&dir, "margin.ron", &margin)).expect("loads");
    assert_eq!(map.address(Tile::new(3, 2)).to_string(), "w:house:room");
    // Walks end on the street or beside it (the bed), never in the margin.
    assert!(map.reachable(Tile::new(0, 0)) && map.reachable(Tile::new(3, 2)));
    assert!(
        map.reachable(Tile::new(2, 2)),
        "the bed, beside the room's floor"
    );
    assert!(map.walkable(Tile::new(10, 0)) && !map.reachable(Tile::new(10, 0)));
    // A sealed room with a floor is still refused, margin or not, when the street has places.
    let sealed = with_lawn(&margin.replace(".#__+.#", ".#__#.#"));
    let e = map_error("sealed.ron", &sealed);
    assert!(e.message.contains("cannot be reached"), "{e}");
    // A building drawn as one solid block: its place is reached at its edge.
    let solid = TINY
        .replace("\".#__+.\",", "\".####.\",")
        .replace(
            "(name: \"room\", rect: (2, 2, 2, 1), objects: [",
            "(name: \"hall\", rect: (1, 1, 4, 3), objects: [",
        )
        .replace("(kind: \"bed\", rect: (2, 2, 1, 1)),", "");
    let map = load_map(&write(&dir, "solid.ron", &solid)).expect("loads");
    let goals = map.tiles_of("w:house:hall");
    let path = simulacra::sim::path::path_to_any(&map, Tile::new(0, 0), goals, &|_| false)
        .expect("a walk to the building's edge");
    let end = *path.last().unwrap();
    assert_eq!(map.address(end).to_string(), "w:house:hall");
    assert!(path[..path.len() - 1].iter().all(|t| map.walkable(*t)));
}

#[test]
fn ron_syntax_and_missing_fields_name_the_line() {
    let bad = TINY.replace("    height: 5,\n", "");
    let e = map_error("missing.ron", &bad);
    assert!(e.to_string().contains("height"), "{e}");
    assert!(e.line > 0, "{e}");
    let bad = TINY.replace("width: 6,", "width: six,");
    let e = map_error("syntax.ron", &bad);
    assert_eq!(e.line, line_of(&bad, "six"), "{e}");
}

fn scenario_error(edit: impl Fn(&str) -> String) -> (DataError, String) {
    let src =
        std::fs::read_to_string(data_root().join("config/scenarios/the_ville_n3.ron")).unwrap();
    let bad = edit(&src);
    let dir = crate::temp_dir("scen");
    let p = write(&dir, "scenario.ron", &bad);
    let e = SimPlugin::load(
        p.to_str().unwrap(),
        Some("smallville"),
        GameConfig::default(),
    )
    .err()
    .expect("a bad scenario must not load");
    (e, bad)
}

#[test]
fn scenario_mistakes_name_file_line_and_field() {
    let (e, bad) =
        scenario_error(|s| s.replacen("Maria Lopez's room\"", "Maria Lopez's rooom\"", 1));
    assert_eq!(e.line, line_of(&bad, "rooom"), "{e}");
    assert_eq!(e.field, "residents[1].home");
    assert!(
        e.message
            .contains("did you mean 'Dorm for Oak Hill College:Maria Lopez's room'"),
        "{e}"
    );

    let (e, bad) = scenario_error(|s| s.replacen("wake: \"06:00\"", "wake: \"6 am\"", 1));
    assert_eq!(e.line, line_of(&bad, "6 am"), "{e}");
    assert_eq!(e.field, "residents[0].lifestyle.wake");

    let (e, bad) = scenario_error(|s| s.replacen("spawn: (57, 21)", "spawn: (0, 0)", 1));
    assert_eq!(e.field, "player.spawn");
    assert_eq!(e.line, line_of(&bad, "spawn: (0, 0)"), "{e}");
    assert!(e.message.contains("not walkable"), "{e}");

    let (e, bad) = scenario_error(|s| s.replacen("age: 21", "age: 0", 1));
    assert_eq!(e.field, "residents[1].age");
    assert_eq!(e.line, line_of(&bad, "age: 0"), "{e}");
}

#[test]
fn config_mistakes_are_reported() {
    let dir = crate::temp_dir("cfg");
    let p = write(&dir, "c.ron", "(\n  sim: (sec_per_step: 7),\n)\n");
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!((e.line, e.field.as_str()), (2, "sim.sec_per_step"), "{e}");
    let p = write(
        &dir,
        "c2.ron",
        "(\n  llm: (\n    routes: { \"plan\": \"nowhere\" },\n  ),\n)\n",
    );
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("no backend named 'nowhere'"), "{e}");
    let p = write(&dir, "c3.ron", "(\n  simm: (),\n)\n");
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!(e.line, 2, "{e}");
    // The bundled config is valid.
    GameConfig::load(&data_root().join("config/simulacra.ron")).unwrap();
}

#[test]
fn unknown_scenario_and_map_names_list_the_bundled_ones() {
    let e = SimPlugin::load("the_ville_n26", None, GameConfig::default())
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("no such scenario; bundled ones: the_ville_n25, the_ville_n3"),
        "{e}"
    );
    let e = SimPlugin::load("the_ville_n3", Some("smallvile"), GameConfig::default())
        .err()
        .unwrap();
    assert!(
        e.to_string()
            .contains("no such map; bundled ones: smallville"),
        "{e}"
    );
}

#[test]
fn bad_prompt_templates_are_reported_with_file_and_line() {
    let dir = crate::temp_dir("prompts");
    for spec in simulacra::cognition::ask::prompts::SPECS {
        std::fs::copy(
            data_root().join(format!("config/prompts/{}.txt", spec.name)),
            dir.join(format!("{}.txt", spec.name)),
        )
        .unwrap();
    }
    let bad = "# importance\n=== system\n{{identity}}\n=== user\nRate {{memories}} for {{nmae}}.\n";
    std::fs::write(dir.join("importance.txt"), bad).unwrap();
    let mut config = GameConfig::default();
    config.cognition.prompts = dir.to_string_lossy().into();
    let err = SimPlugin::load("the_ville_n3", None, config.clone())
        .err()
        .expect("a bad template is refused");
    assert_eq!(err.file, dir.join("importance.txt"));
    assert_eq!(err.line, 5, "{err}");
    assert!(err.to_string().contains("unknown slot {{nmae}}"), "{err}");
    std::fs::remove_file(dir.join("reflect_questions.txt")).unwrap();
    std::fs::write(
        dir.join("importance.txt"),
        "=== system\n{{identity}}\n=== user\n{{memories}}\n",
    )
    .unwrap();
    let err = SimPlugin::load("the_ville_n3", None, config)
        .err()
        .expect("a missing template is refused");
    assert!(err.to_string().contains("reflect_questions.txt"), "{err}");
}

#[test]
fn a_config_for_a_server_says_the_way_out_of_each_first_mistake() {
    let dir = crate::temp_dir("server-config");
    // Only a server, with the bundled embedder's name left as the default embedding backend.
    let p = write(
        &dir,
        "only_server.ron",
        "(\n  llm: (\n    backends: [OpenAi((name: \"server\", endpoints: [\"http://127.0.0.1:8080/v1\"]))],\n  ),\n)\n",
    );
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!(e.field, "llm.embedding_backend", "{e}");
    assert!(
        e.message.contains("embedding_backend: None")
            && e.message.contains("Bert((name: \"embedder\"))"),
        "both ways out: {e}"
    );
    // A base URL without its /v1.
    let p = write(
        &dir,
        "no_v1.ron",
        "(\n  llm: (\n    backends: [OpenAi((name: \"server\", endpoints: [\"http://127.0.0.1:8080\"]))],\n    embedding_backend: None,\n  ),\n)\n",
    );
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!(e.field, "llm.backends[0].endpoints", "{e}");
    assert!(
        e.message.contains("\"http://127.0.0.1:8080/v1\""),
        "the fix: {e}"
    );
    // A password in the address: refused, and never echoed.
    let p = write(
        &dir,
        "userinfo.ron",
        "(\n  llm: (\n    backends: [OpenAi((name: \"server\", endpoints: [\"http://user:PW123@127.0.0.1:8080/v1\"]))],\n    embedding_backend: None,\n  ),\n)\n",
    );
    let e = GameConfig::load(&p).unwrap_err();
    assert_eq!(e.field, "llm.backends[0].endpoints", "{e}");
    assert!(
        e.message.contains("\"http://…@127.0.0.1:8080/v1\"") && e.message.contains("api_key_env"),
        "{e}"
    );
    assert!(
        !e.to_string().contains("PW123") && !e.to_string().contains("user:"),
        "{e}"
    );
    // A key variable that is not set: said before anything starts.
    let p = write(
        &dir,
        "key.ron",
        "(\n  llm: (\n    backends: [OpenAi((name: \"server\", endpoints: [\"http://127.0.0.1:8080/v1\"], api_key_env: Some(\"SIMULACRA_TEST_KEY_NOT_SET\")))],\n    embedding_backend: None,\n  ),\n)\n",
    );
    let cfg = GameConfig::load(&p).unwrap();
    let e = cfg.llm.check_files().unwrap_err();
    assert!(
        e.contains("llm.backends[0].api_key_env")
            && e.contains("export SIMULACRA_TEST_KEY_NOT_SET=")
            && e.contains("remove api_key_env"),
        "{e}"
    );
}

/// Registries' and model hubs' hosts that no file of the project may name in a web address.
const REGISTRY_HOSTS: [&str; 12] = [
    "pypi.org",
    "pythonhosted.org",
    "npmjs.org",
    "npmjs.com",
    "yarnpkg.com",
    "crates.io",
    "static.rust-lang.org",
    "deb.debian.org",
    "huggingface.co",
    "unpkg.com",
    "jsdelivr.net",
    "cdnjs.cloudflare.com",
];

/// The registry hosts a line names in web addresses.
fn registry_hosts(line: &str) -> Vec<String> {
    line.split("://")
        .skip(1)
        .map(|url| {
            url.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                .collect::<String>()
        })
        .filter(|host| {
            REGISTRY_HOSTS
                .iter()
                .any(|h| host == h || host.ends_with(&format!(".{h}")))
        })
        .collect()
}

/// Outside files come only through a registry's own client by package name (apt, pip, npm,
/// cargo): no file of the project names a registry's or a model hub's web address (Cargo.lock,
/// written by cargo, names its index as cargo does).
#[test]
fn no_file_names_a_registrys_web_address() {
    fn walk(dir: &Path, found: &mut Vec<String>, seen: &mut usize) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            let name = e.file_name().to_string_lossy().to_string();
            if p.is_dir() {
                if ![".git", "target", "models", "node_modules"].contains(&name.as_str()) {
                    walk(&p, found, seen);
                }
                continue;
            }
            if name == "Cargo.lock" {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue; // not text
            };
            *seen += 1;
            for (i, line) in text.lines().enumerate() {
                if !registry_hosts(line).is_empty() {
                    found.push(format!("{}:{}: {line}", p.display(), i + 1));
                }
            }
        }
    }
    let (mut found, mut seen) = (Vec::new(), 0);
    walk(Path::new(env!("CARGO_MANIFEST_DIR")), &mut found, &mut seen);
    assert!(seen > 100, "only {seen} text files read");
    assert!(
        found.is_empty(),
        "registry addresses:\n{}",
        found.join("\n")
    );
    // The check finds one where there is one (the address is put together here).
    let probe = [
        "see https",
        "://",
        "files.",
        "pythonhosted.org/packages/x.whl",
    ]
    .concat();
    assert_eq!(registry_hosts(&probe), ["files.pythonhosted.org"]);
    assert!(registry_hosts("source = \"registry+git\"; crates.io-index").is_empty());
}
