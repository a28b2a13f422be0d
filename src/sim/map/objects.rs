//! The catalogue of object kinds a town may contain: the 46 kinds of Smallville, whether each
//! blocks walking, and which picture draws it. A map naming a kind not listed here is rejected.

/// Which furniture picture draws an object kind (the render layer maps these to atlas cells).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Furniture {
    Bed,
    Desk,
    Closet,
    Shelf,
    Easel,
    Sink,
    Shower,
    Toilet,
    Fridge,
    Toaster,
    Stove,
    Table,
    Sofa,
    Guitar,
    Microphone,
    Seat,
    Counter,
    BehindCounter,
    Piano,
    Blackboard,
    Console,
    Computer,
    Bookshelf,
    Podium,
    Garden,
    GardenChair,
    Harp,
    Weights,
    PoolTable,
}

/// One kind of object.
#[derive(Debug, Clone, Copy)]
pub struct ObjectKind {
    /// The name used in addresses, e.g. "cafe customer seating".
    pub name: &'static str,
    /// Its picture.
    pub furniture: Furniture,
    /// Whether it stops walking (agents may still end a path on it: lying in bed, sitting at a desk).
    pub blocks: bool,
}

const fn k(name: &'static str, furniture: Furniture, blocks: bool) -> ObjectKind {
    ObjectKind {
        name,
        furniture,
        blocks,
    }
}

use Furniture as F;

/// Every object kind a map may use.
pub const OBJECT_KINDS: &[ObjectKind] = &[
    k("bed", F::Bed, true),
    k("desk", F::Desk, true),
    k("closet", F::Closet, true),
    k("shelf", F::Shelf, true),
    k("easel", F::Easel, true),
    k("bathroom sink", F::Sink, true),
    k("shower", F::Shower, true),
    k("toilet", F::Toilet, true),
    k("kitchen sink", F::Sink, true),
    k("refrigerator", F::Fridge, true),
    k("toaster", F::Toaster, true),
    k("cooking area", F::Stove, true),
    k("common room table", F::Table, true),
    k("common room sofa", F::Sofa, true),
    k("guitar", F::Guitar, true),
    k("microphone", F::Microphone, true),
    k("bar customer seating", F::Seat, false),
    k("behind the bar counter", F::BehindCounter, false),
    k("behind the cafe counter", F::BehindCounter, false),
    k("cafe customer seating", F::Seat, false),
    k("piano", F::Piano, true),
    k("blackboard", F::Blackboard, true),
    k("game console", F::Console, true),
    k("computer desk", F::Desk, true),
    k("computer", F::Computer, true),
    k("library sofa", F::Sofa, true),
    k("library table", F::Table, true),
    k("bookshelf", F::Bookshelf, true),
    k("classroom student seating", F::Seat, false),
    k("classroom podium", F::Podium, true),
    k("behind the pharmacy counter", F::BehindCounter, false),
    k("behind the grocery counter", F::BehindCounter, false),
    k("pharmacy store shelf", F::Shelf, true),
    k("grocery store shelf", F::Shelf, true),
    k("pharmacy store counter", F::Counter, true),
    k("grocery store counter", F::Counter, true),
    k("supply store product shelf", F::Shelf, true),
    k("behind the supply store counter", F::BehindCounter, false),
    k("supply store counter", F::Counter, true),
    k("dorm garden", F::Garden, false),
    k("house garden", F::Garden, false),
    k("park garden", F::Garden, false),
    k("garden chair", F::GardenChair, true),
    k("harp", F::Harp, true),
    k("lifting weight", F::Weights, true),
    k("pool table", F::PoolTable, true),
];

/// The kind an added object name is drawn as: the catalogue picture its name suggests.
pub fn added_kind(name: &str) -> ObjectKind {
    let n = name.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| n.contains(w));
    let furniture = if has(&["bed", "crib", "cot"]) {
        Furniture::Bed
    } else if has(&["sofa", "couch", "armchair"]) {
        Furniture::Sofa
    } else if has(&["chair", "seat", "bench", "stool"]) {
        Furniture::Seat
    } else if has(&["desk"]) {
        Furniture::Desk
    } else if has(&["table"]) {
        Furniture::Table
    } else if has(&["sink", "basin"]) {
        Furniture::Sink
    } else if has(&["shower", "bath"]) {
        Furniture::Shower
    } else if has(&["toilet"]) {
        Furniture::Toilet
    } else if has(&["fridge", "refrigerator", "freezer"]) {
        Furniture::Fridge
    } else if has(&["stove", "oven", "cook", "grill", "kitchen"]) {
        Furniture::Stove
    } else if has(&["book"]) {
        Furniture::Bookshelf
    } else if has(&["shelf", "rack", "cabinet", "wardrobe", "drawer"]) {
        Furniture::Shelf
    } else if has(&["closet"]) {
        Furniture::Closet
    } else if has(&[
        "computer",
        "laptop",
        "tv",
        "television",
        "screen",
        "monitor",
    ]) {
        Furniture::Computer
    } else if has(&["console", "game", "arcade"]) {
        Furniture::Console
    } else if has(&["piano", "keyboard"]) {
        Furniture::Piano
    } else if has(&["guitar"]) {
        Furniture::Guitar
    } else if has(&["garden", "plant", "flower", "tree", "bush", "lawn"]) {
        Furniture::Garden
    } else if has(&["board"]) {
        Furniture::Blackboard
    } else if has(&["behind"]) {
        Furniture::BehindCounter
    } else {
        Furniture::Counter
    };
    ObjectKind {
        name: Box::leak(name.to_string().into_boxed_str()),
        furniture,
        blocks: false,
    }
}

/// Index of a kind by name.
pub fn kind_index(name: &str) -> Option<usize> {
    OBJECT_KINDS.iter().position(|k| k.name == name)
}

/// The closest known kind to a misspelt name, for "did you mean" hints.
pub fn closest_kind(name: &str) -> &'static str {
    OBJECT_KINDS
        .iter()
        .min_by_key(|k| edit_distance(k.name, name))
        .map(|k| k.name)
        .unwrap_or("bed")
}

/// Levenshtein distance, for hints in error messages.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != *cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_has_the_46_kinds_of_smallville() {
        assert_eq!(OBJECT_KINDS.len(), 46);
        let mut names: Vec<_> = OBJECT_KINDS.iter().map(|k| k.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 46, "duplicate kind names");
        assert_eq!(
            kind_index("piano").map(|i| OBJECT_KINDS[i].name),
            Some("piano")
        );
        assert_eq!(closest_kind("bedd"), "bed");
    }
}
