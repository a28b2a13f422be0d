//! People's sprite sheet and the art atlases on disk.
//!
//! Each person is 16×24 pixels (a tile wide, one and a half tall), drawn in four directions with
//! a two-step walk cycle (standing, left foot, right foot), sitting, and lying asleep under a
//! blanket. One row per look: [`LOOKS`] looks of residents and the avatar's own row last.
//!
//! The town's art is built into PNG atlases under `assets/art/` by `simulacra art` (the files are
//! kept in the repository), and the window loads them from there. The code in `art.rs` and here
//! stays the source: a unit test checks the files are what it draws.

use crate::game::world::art::Canvas;
use crate::game::world::art::DARK;
use crate::game::world::art::ICON;
use crate::game::world::art::ICON_CELLS;
use crate::game::world::art::Rgba;
use crate::game::world::art::TILE_ATLAS_SIZE;
use crate::game::world::art::icon_strip;
use crate::game::world::art::rgb;
use crate::game::world::art::rgba_image;
use crate::game::world::art::tile_canvas;
use bevy::prelude::*;
use std::path::{Path, PathBuf};

/// A person's cell: width and height in pixels.
pub const PERSON_W: u32 = 16;
/// See [`PERSON_W`].
pub const PERSON_H: u32 = 24;
/// Distinct resident looks (people beyond this many repeat a look).
pub const LOOKS: usize = 32;
/// The avatar's row.
pub const AVATAR_ROW: usize = LOOKS;
/// Cells per row: 4 directions × 3 frames, sitting, sleeping.
pub const COLUMNS: usize = 14;

/// Which way a person faces on screen.
#[derive(Component, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Heading {
    #[default]
    Down,
    Up,
    Left,
    Right,
}

/// What a person is doing, for the picture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pose {
    /// Standing; `step` 0 is feet together, 1 and 2 the two steps of a walk.
    Stand { heading: Heading, step: u8 },
    /// Sitting, facing the viewer.
    Sit,
    /// Lying asleep.
    Sleep,
}

/// The sheet cell of a pose.
pub fn pose_column(pose: Pose) -> usize {
    match pose {
        Pose::Stand { heading, step } => {
            let d = match heading {
                Heading::Down => 0,
                Heading::Up => 1,
                Heading::Left => 2,
                Heading::Right => 3,
            };
            d * 3 + step.min(2) as usize
        }
        Pose::Sit => 12,
        Pose::Sleep => 13,
    }
}

/// The atlas index of a pose in a row.
pub fn sheet_index(row: usize, pose: Pose) -> usize {
    row * COLUMNS + pose_column(pose)
}

/// The sheet row of the n-th resident drawn (the avatar has its own).
pub fn look_row(n: usize, is_avatar: bool) -> usize {
    if is_avatar { AVATAR_ROW } else { n % LOOKS }
}

struct Look {
    shirt: Rgba,
    hair: Rgba,
    skin: Rgba,
    trousers: Rgba,
    /// 0 short, 1 long, 2 tied up.
    style: u8,
    avatar: bool,
}

fn look(row: usize) -> Look {
    const SHIRTS: [Rgba; 9] = [
        rgb(220, 70, 70),
        rgb(70, 130, 220),
        rgb(80, 180, 100),
        rgb(230, 170, 50),
        rgb(160, 90, 200),
        rgb(40, 170, 180),
        rgb(240, 120, 170),
        rgb(120, 120, 120),
        rgb(250, 250, 250),
    ];
    const HAIR: [Rgba; 5] = [
        rgb(40, 30, 25),
        rgb(110, 70, 40),
        rgb(220, 190, 110),
        rgb(160, 60, 40),
        rgb(200, 200, 200),
    ];
    const SKIN: [Rgba; 4] = [
        rgb(250, 214, 180),
        rgb(224, 172, 130),
        rgb(176, 122, 84),
        rgb(120, 80, 56),
    ];
    const TROUSERS: [Rgba; 3] = [rgb(50, 60, 100), rgb(70, 60, 50), rgb(40, 40, 40)];
    let avatar = row == AVATAR_ROW;
    Look {
        shirt: if avatar {
            rgb(250, 220, 40)
        } else {
            SHIRTS[row % SHIRTS.len()]
        },
        hair: HAIR[(row / 2) % HAIR.len()],
        skin: SKIN[(row / 3) % SKIN.len()],
        trousers: TROUSERS[(row / 5) % TROUSERS.len()],
        style: ((row / 7) % 3) as u8,
        avatar,
    }
}

fn shade(c: Rgba, f: f32) -> Rgba {
    [
        (c[0] as f32 * f) as u8,
        (c[1] as f32 * f) as u8,
        (c[2] as f32 * f) as u8,
        c[3],
    ]
}

/// A canvas offset to one cell.
struct Cell<'a> {
    c: &'a mut Canvas,
    ox: i32,
    oy: i32,
}

impl Cell<'_> {
    fn rect(&mut self, x: i32, y: i32, w: i32, h: i32, c: Rgba) {
        self.c.rect(self.ox + x, self.oy + y, w, h, c);
    }
    fn dot(&mut self, x: i32, y: i32, c: Rgba) {
        self.rect(x, y, 1, 1, c);
    }
}

/// Front or back view (`back`: the back of the head, no face). `step` 1 or 2 lifts a foot and
/// swings the other arm forward.
fn draw_front(p: &mut Cell, l: &Look, back: bool, step: u8, sitting: bool) {
    let dy = if sitting { 3 } else { 0 };
    // Head.
    p.rect(5, 2 + dy, 6, 2, l.hair);
    p.rect(5, 4 + dy, 6, 5, l.skin);
    if back {
        p.rect(5, 4 + dy, 6, 5, l.hair);
    } else {
        p.rect(5, 4 + dy, 6, 1, l.hair);
        p.dot(6, 6 + dy, DARK);
        p.dot(9, 6 + dy, DARK);
        p.rect(7, 8 + dy, 2, 1, shade(l.skin, 0.8));
    }
    match l.style {
        1 => {
            p.rect(4, 3 + dy, 1, 7, l.hair);
            p.rect(11, 3 + dy, 1, 7, l.hair);
        }
        2 => p.rect(6, 1 + dy, 4, 1, l.hair),
        _ => {
            p.rect(4, 3 + dy, 1, 3, l.hair);
            p.rect(11, 3 + dy, 1, 3, l.hair);
        }
    }
    p.rect(7, 9 + dy, 2, 1, l.skin);
    // Body and arms.
    p.rect(4, 10 + dy, 8, 6, l.shirt);
    let (left_arm, right_arm) = match step {
        1 => (4, 6),
        2 => (6, 4),
        _ => (5, 5),
    };
    p.rect(3, 10 + dy, 1, left_arm, shade(l.shirt, 0.85));
    p.dot(3, 10 + dy + left_arm, l.skin);
    p.rect(12, 10 + dy, 1, right_arm, shade(l.shirt, 0.85));
    p.dot(12, 10 + dy + right_arm, l.skin);
    if l.avatar && !back {
        p.rect(5, 11 + dy, 2, 2, DARK); // a press badge
    }
    if sitting {
        // Knees towards the viewer, shins down to the floor.
        p.rect(4, 19, 8, 2, l.trousers);
        p.rect(5, 21, 2, 2, shade(l.trousers, 0.8));
        p.rect(9, 21, 2, 2, shade(l.trousers, 0.8));
        p.rect(5, 23, 2, 1, DARK);
        p.rect(9, 23, 2, 1, DARK);
        return;
    }
    p.rect(4, 16, 8, 2, l.trousers);
    let (left_leg, right_leg) = match step {
        1 => (4, 3),
        2 => (3, 4),
        _ => (4, 4),
    };
    p.rect(5, 18, 2, left_leg, l.trousers);
    p.rect(5, 18 + left_leg, 2, 1, DARK);
    p.rect(9, 18, 2, right_leg, l.trousers);
    p.rect(9, 18 + right_leg, 2, 1, DARK);
}

/// Side view facing left (the right-facing cells are its mirror).
fn draw_side(p: &mut Cell, l: &Look, step: u8) {
    p.rect(6, 2, 5, 2, l.hair);
    p.rect(5, 4, 5, 5, l.skin);
    p.rect(5, 4, 5, 1, l.hair);
    p.rect(9, 4, 2, if l.style == 1 { 7 } else { 4 }, l.hair);
    if l.style == 2 {
        p.rect(11, 3, 1, 2, l.hair);
    }
    p.dot(4, 6, l.skin); // nose
    p.dot(6, 6, DARK);
    p.rect(7, 9, 2, 1, l.skin);
    p.rect(6, 10, 5, 6, l.shirt);
    // The near arm swings with the step.
    let hand = match step {
        1 => 6,
        2 => 10,
        _ => 8,
    };
    p.rect(8, 11, 1, 3, shade(l.shirt, 0.8));
    p.dot(hand, 14, l.skin);
    if hand != 8 {
        p.dot((hand + 8) / 2, 13, shade(l.shirt, 0.8));
    }
    p.rect(6, 16, 5, 2, l.trousers);
    match step {
        0 => {
            p.rect(7, 18, 3, 4, l.trousers);
            p.rect(6, 22, 4, 1, DARK);
        }
        _ => {
            // Legs apart; the far leg darker.
            let (front, back) = if step == 1 {
                (l.trousers, shade(l.trousers, 0.7))
            } else {
                (shade(l.trousers, 0.7), l.trousers)
            };
            p.rect(9, 18, 2, 4, back);
            p.rect(9, 22, 3, 1, DARK);
            p.rect(5, 18, 2, 4, front);
            p.rect(4, 22, 3, 1, DARK);
        }
    }
}

/// Asleep: head on a pillow, a blanket in the person's colour.
fn draw_sleep(p: &mut Cell, l: &Look) {
    p.rect(3, 8, 10, 5, rgb(240, 240, 246));
    p.rect(5, 8, 6, 2, l.hair);
    p.rect(5, 10, 6, 4, l.skin);
    p.rect(6, 11, 2, 1, DARK);
    p.rect(9, 11, 2, 1, DARK);
    p.rect(2, 14, 12, 10, shade(l.shirt, 0.9));
    p.rect(2, 14, 12, 1, shade(l.shirt, 1.1));
    p.rect(2, 23, 12, 1, shade(l.shirt, 0.7));
}

/// A soft shadow under standing feet.
fn draw_shadow(p: &mut Cell) {
    p.rect(4, 23, 8, 1, [0, 0, 0, 70]);
}

/// The avatar's cells get a white outline so the player finds themself in a crowd.
fn outline(c: &mut Canvas, ox: i32, oy: i32) {
    let mut edge = Vec::new();
    for y in 0..PERSON_H as i32 {
        for x in 0..PERSON_W as i32 {
            if c.get(ox + x, oy + y)[3] == 0
                && [(1, 0), (-1, 0), (0, 1), (0, -1)].iter().any(|(dx, dy)| {
                    let (nx, ny) = (x + dx, y + dy);
                    nx >= 0
                        && ny >= 0
                        && nx < PERSON_W as i32
                        && ny < PERSON_H as i32
                        && c.get(ox + nx, oy + ny)[3] > 200
                })
            {
                edge.push((x, y));
            }
        }
    }
    for (x, y) in edge {
        c.set(ox + x, oy + y, rgb(255, 255, 255));
    }
}

/// The people sheet: `LOOKS + 1` rows of [`COLUMNS`] cells.
pub fn people_sheet() -> Canvas {
    let (w, h) = (PERSON_W as i32, PERSON_H as i32);
    let mut c = Canvas::new(PEOPLE_SHEET_SIZE.0, PEOPLE_SHEET_SIZE.1);
    for row in 0..=LOOKS {
        let l = look(row);
        let oy = row as i32 * h;
        for col in 0..COLUMNS {
            let ox = col as i32 * w;
            let mut p = Cell { c: &mut c, ox, oy };
            match col {
                0..=2 => {
                    draw_shadow(&mut p);
                    draw_front(&mut p, &l, false, col as u8, false);
                }
                3..=5 => {
                    draw_shadow(&mut p);
                    draw_front(&mut p, &l, true, col as u8 - 3, false);
                }
                6..=8 => {
                    draw_shadow(&mut p);
                    draw_side(&mut p, &l, col as u8 - 6);
                }
                9..=11 => {
                    // Facing right: the left-facing cell mirrored.
                    let src = (col as i32 - 3) * w;
                    for y in 0..h {
                        for x in 0..w {
                            let px = c.get(src + x, oy + y);
                            c.set(ox + w - 1 - x, oy + y, px);
                        }
                    }
                }
                12 => draw_front(&mut p, &l, false, 0, true),
                _ => draw_sleep(&mut p, &l),
            }
            if l.avatar {
                outline(&mut c, ox, oy);
            }
        }
    }
    c
}

/// Where the atlases live, under the data root.
pub const ART_DIR: &str = "assets/art";

/// The people sheet's size in pixels.
pub const PEOPLE_SHEET_SIZE: (u32, u32) =
    (PERSON_W * COLUMNS as u32, PERSON_H * (LOOKS as u32 + 1));

/// The atlases: file name, size in pixels (known without drawing), and what draws it.
pub fn atlases() -> [(&'static str, (u32, u32), fn() -> Canvas); 3] {
    [
        ("tiles.png", TILE_ATLAS_SIZE, tile_canvas),
        ("people.png", PEOPLE_SHEET_SIZE, people_sheet),
        ("icons.png", (ICON * ICON_CELLS as u32, ICON), icon_strip),
    ]
}

/// Writes every atlas as a PNG into `dir` (atomically: a temporary file, then a rename).
pub fn write_atlases(dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut written = Vec::new();
    for (name, _, draw) in atlases() {
        let canvas = draw();
        let (w, h) = canvas.size();
        let path = dir.join(name);
        let tmp = dir.join(format!("{name}.tmp"));
        image::save_buffer_with_format(
            &tmp,
            &canvas.into_rgba(),
            w,
            h,
            image::ExtendedColorType::Rgba8,
            image::ImageFormat::Png,
        )
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
        std::fs::rename(&tmp, &path).map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Reads an atlas PNG: its size and pixels.
pub fn read_atlas(path: &Path) -> Result<(u32, u32, Vec<u8>), String> {
    let img = image::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let rgba = img.to_rgba8();
    Ok((rgba.width(), rgba.height(), rgba.into_raw()))
}

/// An atlas for the window: the file under `assets/art/` when it is there and of the size the
/// code draws (nothing is drawn then), else drawn now (with a warning naming the file and
/// `simulacra art`).
pub fn load_atlas(name: &str) -> Image {
    let Some((_, expected, draw)) = atlases().into_iter().find(|(n, ..)| *n == name) else {
        return rgba_image(1, 1, vec![0; 4]);
    };
    let path = crate::data::data_root().join(ART_DIR).join(name);
    match read_atlas(&path) {
        Ok((w, h, data)) if (w, h) == expected => rgba_image(w, h, data),
        Ok((w, h, _)) => {
            warn!(
                "{} is {w}×{h}, the code draws {}×{}: drawing it now; run `simulacra art` to rebuild the atlases",
                path.display(),
                expected.0,
                expected.1
            );
            draw().into_image()
        }
        Err(e) => {
            warn!("{e}: drawing the art now; run `simulacra art` to build the atlases");
            draw().into_image()
        }
    }
}

/// The atlas grid layouts: tiles, people, icons.
pub fn people_layout() -> TextureAtlasLayout {
    TextureAtlasLayout::from_grid(
        UVec2::new(PERSON_W, PERSON_H),
        COLUMNS as u32,
        LOOKS as u32 + 1,
        None,
        None,
    )
}

/// See [`people_layout`].
pub fn icons_layout() -> TextureAtlasLayout {
    TextureAtlasLayout::from_grid(
        UVec2::splat(ICON),
        crate::game::world::art::ICON_CELLS as u32,
        1,
        None,
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_look_differs_and_every_pose_is_drawn() {
        let sheet = people_sheet();
        let cell = |row: usize, col: usize| -> Vec<Rgba> {
            let mut v = Vec::new();
            for y in 0..PERSON_H as i32 {
                for x in 0..PERSON_W as i32 {
                    v.push(sheet.get(
                        col as i32 * PERSON_W as i32 + x,
                        row as i32 * PERSON_H as i32 + y,
                    ));
                }
            }
            v
        };
        for row in 0..=LOOKS {
            for other in 0..row {
                assert_ne!(
                    cell(row, 0),
                    cell(other, 0),
                    "looks {row} and {other} are the same"
                );
            }
            let cells: Vec<Vec<Rgba>> = (0..COLUMNS).map(|c| cell(row, c)).collect();
            for (i, a) in cells.iter().enumerate() {
                assert!(a.iter().any(|p| p[3] > 0), "row {row} cell {i} is empty");
                for (j, b) in cells.iter().enumerate().take(i) {
                    assert_ne!(a, b, "row {row}: cells {i} and {j} are the same picture");
                }
            }
        }
    }

    #[test]
    fn poses_map_to_their_cells() {
        assert_eq!(
            sheet_index(
                2,
                Pose::Stand {
                    heading: Heading::Right,
                    step: 2
                }
            ),
            2 * COLUMNS + 11
        );
        assert_eq!(pose_column(Pose::Sleep), COLUMNS - 1);
        assert_eq!(look_row(40, false), 8);
        assert_eq!(look_row(3, true), AVATAR_ROW);
    }

    /// The PNGs in the repository are what the code draws (run `simulacra art` after changing it).
    #[test]
    fn the_atlases_on_disk_are_what_the_code_draws() {
        let dir = crate::data::data_root().join(ART_DIR);
        for (name, size, draw) in atlases() {
            let canvas = draw();
            let (w, h) = canvas.size();
            assert_eq!(size, (w, h), "{name}: the size declared for loading");
            let (fw, fh, data) = read_atlas(&dir.join(name))
                .unwrap_or_else(|e| panic!("{e}: run `simulacra art` to write the atlases"));
            assert_eq!((fw, fh), (w, h), "{name}: run `simulacra art`");
            assert!(
                data == canvas.into_rgba(),
                "{name} differs from what the code draws: run `simulacra art`"
            );
        }
    }
}
