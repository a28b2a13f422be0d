//! Pixel art drawn by code (no third-party art): terrain and furniture tiles in one atlas
//! strip, a sprite per person, and action icons. 16×16 pixels per tile.

pub use crate::game::shared::TILE;
use crate::sim::map::Terrain;
use crate::sim::map::objects::Furniture;
use bevy::asset::RenderAssetUsages;
use bevy::prelude::*;
use bevy::render::render_resource::{Extent3d, TextureDimension, TextureFormat};

pub(crate) type Rgba = [u8; 4];

pub(crate) const fn rgb(r: u8, g: u8, b: u8) -> Rgba {
    [r, g, b, 255]
}

/// A small RGBA canvas.
pub struct Canvas {
    w: u32,
    h: u32,
    px: Vec<Rgba>,
}

impl Canvas {
    /// A transparent canvas.
    pub fn new(w: u32, h: u32) -> Self {
        Self {
            w,
            h,
            px: vec![[0, 0, 0, 0]; (w * h) as usize],
        }
    }
    pub(crate) fn set(&mut self, x: i32, y: i32, c: Rgba) {
        if x >= 0 && y >= 0 && (x as u32) < self.w && (y as u32) < self.h {
            self.px[(y as u32 * self.w + x as u32) as usize] = c;
        }
    }
    pub(crate) fn rect(&mut self, x: i32, y: i32, w: i32, h: i32, c: Rgba) {
        for yy in y..y + h {
            for xx in x..x + w {
                self.set(xx, yy, c);
            }
        }
    }
    fn outline(&mut self, x: i32, y: i32, w: i32, h: i32, c: Rgba) {
        for xx in x..x + w {
            self.set(xx, y, c);
            self.set(xx, y + h - 1, c);
        }
        for yy in y..y + h {
            self.set(x, yy, c);
            self.set(x + w - 1, yy, c);
        }
    }
    fn speckle(&mut self, ox: i32, seed: u32, c: Rgba, every: u32) {
        for y in 0..TILE as i32 {
            for x in 0..TILE as i32 {
                let h = (x as u32).wrapping_mul(374_761_393)
                    ^ (y as u32).wrapping_mul(668_265_263)
                    ^ seed.wrapping_mul(2_246_822_519);
                if (h ^ (h >> 13))
                    .wrapping_mul(1_274_126_177)
                    .is_multiple_of(every)
                {
                    self.set(ox + x, y, c);
                }
            }
        }
    }
    /// Width and height in pixels.
    pub fn size(&self) -> (u32, u32) {
        (self.w, self.h)
    }
    pub(crate) fn get(&self, x: i32, y: i32) -> Rgba {
        if x >= 0 && y >= 0 && (x as u32) < self.w && (y as u32) < self.h {
            self.px[(y as u32 * self.w + x as u32) as usize]
        } else {
            [0, 0, 0, 0]
        }
    }
    /// The pixels, row by row, RGBA.
    pub fn into_rgba(self) -> Vec<u8> {
        self.px.into_iter().flatten().collect()
    }
    /// Into a Bevy image.
    pub fn into_image(self) -> Image {
        let (w, h) = (self.w, self.h);
        rgba_image(w, h, self.into_rgba())
    }
}

/// An sRGB RGBA8 image of `w`×`h` pixels from its bytes, row by row.
pub fn rgba_image(w: u32, h: u32, data: Vec<u8>) -> Image {
    Image::new(
        Extent3d {
            width: w,
            height: h,
            depth_or_array_layers: 1,
        },
        TextureDimension::D2,
        data,
        TextureFormat::Rgba8UnormSrgb,
        RenderAssetUsages::default(),
    )
}

/// Atlas index of a terrain kind (`variant` picks among grass looks).
pub fn terrain_index(t: Terrain, variant: u32) -> u32 {
    match t {
        Terrain::Grass => variant % 2,
        Terrain::Path => 2,
        Terrain::Water => 3,
        Terrain::Tree => 4,
        Terrain::Wall => 5,
        Terrain::Door => 6,
        Terrain::Floor => 7,
        Terrain::Tiles => 8,
    }
}

const FURNITURE_BASE: u32 = 9;
/// Every furniture picture in atlas order.
pub const FURNITURE: [Furniture; 29] = [
    Furniture::Bed,
    Furniture::Desk,
    Furniture::Closet,
    Furniture::Shelf,
    Furniture::Easel,
    Furniture::Sink,
    Furniture::Shower,
    Furniture::Toilet,
    Furniture::Fridge,
    Furniture::Toaster,
    Furniture::Stove,
    Furniture::Table,
    Furniture::Sofa,
    Furniture::Guitar,
    Furniture::Microphone,
    Furniture::Seat,
    Furniture::Counter,
    Furniture::BehindCounter,
    Furniture::Piano,
    Furniture::Blackboard,
    Furniture::Console,
    Furniture::Computer,
    Furniture::Bookshelf,
    Furniture::Podium,
    Furniture::Garden,
    Furniture::GardenChair,
    Furniture::Harp,
    Furniture::Weights,
    Furniture::PoolTable,
];
/// The foot of a bed (the tile below the pillow).
pub const BED_FOOT: u32 = FURNITURE_BASE + FURNITURE.len() as u32;
const ATLAS_TILES: u32 = BED_FOOT + 1;
/// The tile atlas's size in pixels.
pub const TILE_ATLAS_SIZE: (u32, u32) = (TILE * ATLAS_TILES, TILE);

/// Atlas index of a furniture picture.
pub fn furniture_index(f: Furniture) -> u32 {
    FURNITURE_BASE + FURNITURE.iter().position(|x| *x == f).unwrap_or(0) as u32
}

const WOOD: Rgba = rgb(139, 94, 60);
const WOOD_DARK: Rgba = rgb(98, 64, 40);
const WHITE: Rgba = rgb(236, 236, 240);
const GREY: Rgba = rgb(150, 156, 166);
pub(crate) const DARK: Rgba = rgb(52, 54, 64);
const METAL: Rgba = rgb(190, 198, 208);

/// The atlas strip: terrain then furniture, each 16×16.
pub fn tile_canvas() -> Canvas {
    let mut c = Canvas::new(TILE_ATLAS_SIZE.0, TILE_ATLAS_SIZE.1);
    let t = TILE as i32;
    // Terrain.
    for (i, (base, fleck, seed)) in [
        (rgb(96, 158, 78), rgb(120, 180, 92), 1u32),
        (rgb(92, 152, 74), rgb(76, 136, 64), 7),
    ]
    .into_iter()
    .enumerate()
    {
        let ox = i as i32 * t;
        c.rect(ox, 0, t, t, base);
        c.speckle(ox, seed, fleck, 7);
    }
    c.rect(2 * t, 0, t, t, rgb(196, 178, 140));
    c.speckle(2 * t, 3, rgb(178, 160, 124), 9);
    c.rect(3 * t, 0, t, t, rgb(62, 120, 196));
    for k in 0..3 {
        c.rect(3 * t + 2 + k * 5, 4 + k * 4, 4, 1, rgb(140, 190, 236));
    }
    // Tree: grass with a round crown.
    c.rect(4 * t, 0, t, t, rgb(96, 158, 78));
    c.rect(4 * t + 7, 10, 3, 6, WOOD_DARK);
    for y in 0..11 {
        for x in 0..16 {
            let (dx, dy) = (x as f32 - 7.5, y as f32 - 5.5);
            if dx * dx + dy * dy < 36.0 {
                c.set(
                    4 * t + x,
                    y,
                    if (x + y) % 5 == 0 {
                        rgb(44, 110, 50)
                    } else {
                        rgb(54, 128, 60)
                    },
                );
            }
        }
    }
    // Wall: bricks.
    c.rect(5 * t, 0, t, t, rgb(120, 96, 86));
    for y in (0..16).step_by(4) {
        c.rect(5 * t, y, t, 1, rgb(92, 72, 66));
        let off = if (y / 4) % 2 == 0 { 0 } else { 4 };
        for x in (off..16).step_by(8) {
            c.rect(5 * t + x, y, 1, 4, rgb(92, 72, 66));
        }
    }
    // Door: wooden door in a frame.
    c.rect(6 * t, 0, t, t, rgb(168, 120, 80));
    c.outline(6 * t, 0, t, t, WOOD_DARK);
    c.rect(6 * t + 11, 8, 2, 2, rgb(230, 200, 90));
    // Floors.
    c.rect(7 * t, 0, t, t, rgb(186, 142, 98));
    for y in (0..16).step_by(4) {
        c.rect(7 * t, y, t, 1, rgb(166, 124, 84));
    }
    c.rect(8 * t, 0, t, t, rgb(214, 220, 226));
    for k in (0..16).step_by(8) {
        c.rect(8 * t + k, 0, 1, t, rgb(184, 190, 198));
        c.rect(8 * t, k, t, 1, rgb(184, 190, 198));
    }
    // Furniture (transparent background, drawn over the floor).
    for (i, f) in FURNITURE.iter().enumerate() {
        draw_furniture(&mut c, (FURNITURE_BASE as i32 + i as i32) * t, *f);
    }
    // Bed foot: blanket only.
    let ox = BED_FOOT as i32 * t;
    c.rect(ox + 1, 0, 14, 15, rgb(70, 110, 180));
    c.rect(ox + 1, 14, 14, 2, WOOD_DARK);
    c
}

fn draw_furniture(c: &mut Canvas, ox: i32, f: Furniture) {
    match f {
        Furniture::Bed => {
            c.rect(ox + 1, 1, 14, 15, WOOD_DARK);
            c.rect(ox + 2, 2, 12, 5, WHITE);
            c.rect(ox + 1, 8, 14, 8, rgb(70, 110, 180));
        }
        Furniture::Desk => {
            c.rect(ox + 1, 4, 14, 7, WOOD);
            c.rect(ox + 2, 11, 2, 4, WOOD_DARK);
            c.rect(ox + 12, 11, 2, 4, WOOD_DARK);
            c.rect(ox + 4, 5, 5, 3, WHITE);
        }
        Furniture::Closet => {
            c.rect(ox + 2, 1, 12, 14, WOOD);
            c.rect(ox + 7, 1, 1, 14, WOOD_DARK);
            c.rect(ox + 5, 7, 1, 2, METAL);
            c.rect(ox + 9, 7, 1, 2, METAL);
        }
        Furniture::Shelf | Furniture::Bookshelf => {
            c.rect(ox + 1, 1, 14, 14, WOOD_DARK);
            for (row, y) in [2, 7, 12].into_iter().enumerate() {
                c.rect(ox + 2, y + 3, 12, 1, WOOD);
                for k in 0..6 {
                    let col = [
                        rgb(200, 60, 60),
                        rgb(60, 120, 200),
                        rgb(220, 190, 70),
                        rgb(80, 170, 90),
                    ][(k + row) % 4];
                    c.rect(
                        ox + 2 + k as i32 * 2,
                        y,
                        1,
                        3,
                        if f == Furniture::Bookshelf || k % 2 == 0 {
                            col
                        } else {
                            GREY
                        },
                    );
                }
            }
        }
        Furniture::Easel => {
            c.rect(ox + 4, 2, 8, 8, WHITE);
            c.rect(ox + 5, 4, 3, 3, rgb(220, 120, 60));
            c.rect(ox + 8, 5, 3, 3, rgb(70, 140, 200));
            c.rect(ox + 7, 10, 2, 6, WOOD_DARK);
            c.rect(ox + 4, 10, 1, 6, WOOD_DARK);
            c.rect(ox + 11, 10, 1, 6, WOOD_DARK);
        }
        Furniture::Sink => {
            c.rect(ox + 2, 3, 12, 10, WHITE);
            c.rect(ox + 4, 5, 8, 6, rgb(160, 200, 230));
            c.rect(ox + 7, 2, 2, 3, METAL);
        }
        Furniture::Shower => {
            c.rect(ox + 1, 1, 14, 14, rgb(180, 220, 240));
            c.outline(ox + 1, 1, 14, 14, METAL);
            c.rect(ox + 6, 3, 4, 2, METAL);
            for k in 0..4 {
                c.rect(ox + 5 + k * 2, 6 + k, 1, 3, rgb(120, 170, 230));
            }
        }
        Furniture::Toilet => {
            c.rect(ox + 4, 1, 8, 5, WHITE);
            c.rect(ox + 3, 6, 10, 8, WHITE);
            c.rect(ox + 5, 8, 6, 4, rgb(180, 210, 230));
        }
        Furniture::Fridge => {
            c.rect(ox + 2, 0, 12, 16, WHITE);
            c.rect(ox + 2, 6, 12, 1, GREY);
            c.rect(ox + 11, 2, 1, 3, GREY);
            c.rect(ox + 11, 8, 1, 5, GREY);
        }
        Furniture::Toaster => {
            c.rect(ox + 3, 6, 10, 7, METAL);
            c.rect(ox + 5, 6, 2, 2, DARK);
            c.rect(ox + 9, 6, 2, 2, DARK);
        }
        Furniture::Stove => {
            c.rect(ox + 1, 1, 14, 14, DARK);
            for (x, y) in [(3, 3), (9, 3), (3, 9), (9, 9)] {
                c.outline(ox + x, y, 4, 4, rgb(200, 80, 60));
            }
        }
        Furniture::Table => {
            c.rect(ox, 3, 16, 9, WOOD);
            c.rect(ox, 11, 16, 1, WOOD_DARK);
            c.rect(ox + 5, 5, 3, 3, WHITE);
        }
        Furniture::Sofa => {
            c.rect(ox, 3, 16, 11, rgb(150, 70, 80));
            c.rect(ox, 3, 16, 4, rgb(120, 50, 60));
            c.rect(ox + 7, 7, 1, 7, rgb(120, 50, 60));
        }
        Furniture::Guitar => {
            c.rect(ox + 7, 1, 2, 7, WOOD_DARK);
            c.rect(ox + 4, 8, 8, 7, rgb(200, 130, 60));
            c.rect(ox + 7, 10, 2, 2, DARK);
        }
        Furniture::Microphone => {
            c.rect(ox + 6, 2, 4, 4, GREY);
            c.rect(ox + 7, 6, 2, 8, DARK);
            c.rect(ox + 4, 14, 8, 2, DARK);
        }
        Furniture::Seat => {
            c.rect(ox + 3, 2, 10, 3, rgb(120, 80, 50));
            c.rect(ox + 3, 5, 10, 6, rgb(170, 120, 70));
            c.rect(ox + 3, 11, 2, 4, WOOD_DARK);
            c.rect(ox + 11, 11, 2, 4, WOOD_DARK);
        }
        Furniture::Counter => {
            c.rect(ox, 2, 16, 12, rgb(160, 110, 70));
            c.rect(ox, 2, 16, 3, rgb(200, 200, 190));
        }
        Furniture::BehindCounter => {
            c.rect(ox, 0, 16, 16, rgb(150, 106, 70));
            c.speckle(ox, 11, rgb(130, 90, 60), 5);
        }
        Furniture::Piano => {
            c.rect(ox, 1, 16, 14, DARK);
            c.rect(ox + 1, 8, 14, 4, WHITE);
            for k in 0..5 {
                c.rect(ox + 2 + k * 3, 8, 1, 2, DARK);
            }
        }
        Furniture::Blackboard => {
            c.rect(ox, 2, 16, 11, rgb(40, 80, 60));
            c.outline(ox, 2, 16, 11, WOOD);
            c.rect(ox + 3, 5, 6, 1, WHITE);
            c.rect(ox + 3, 8, 9, 1, WHITE);
        }
        Furniture::Console => {
            c.rect(ox + 2, 4, 12, 6, DARK);
            c.rect(ox + 3, 5, 10, 4, rgb(80, 160, 220));
            c.rect(ox + 4, 11, 8, 3, GREY);
        }
        Furniture::Computer => {
            c.rect(ox + 2, 2, 12, 8, DARK);
            c.rect(ox + 3, 3, 10, 6, rgb(90, 180, 230));
            c.rect(ox + 7, 10, 2, 2, DARK);
            c.rect(ox + 3, 12, 10, 2, GREY);
        }
        Furniture::Podium => {
            c.rect(ox + 3, 3, 10, 12, WOOD);
            c.rect(ox + 2, 2, 12, 3, WOOD_DARK);
        }
        Furniture::Garden => {
            c.rect(ox + 1, 1, 14, 14, rgb(110, 80, 50));
            for (x, y, col) in [
                (3, 3, rgb(230, 80, 90)),
                (9, 4, rgb(250, 210, 60)),
                (5, 9, rgb(200, 120, 220)),
                (11, 10, rgb(240, 140, 60)),
            ] {
                c.rect(ox + x, y + 2, 1, 3, rgb(60, 140, 60));
                c.rect(ox + x - 1, y, 3, 2, col);
            }
        }
        Furniture::GardenChair => {
            c.rect(ox + 3, 3, 10, 3, rgb(230, 230, 230));
            c.rect(ox + 3, 7, 10, 4, rgb(230, 230, 230));
            c.rect(ox + 3, 11, 1, 4, GREY);
            c.rect(ox + 12, 11, 1, 4, GREY);
        }
        Furniture::Harp => {
            c.outline(ox + 3, 1, 10, 14, rgb(210, 170, 60));
            for k in 0..4 {
                c.rect(ox + 5 + k * 2, 2, 1, 12, WHITE);
            }
        }
        Furniture::Weights => {
            c.rect(ox + 2, 7, 12, 2, METAL);
            c.rect(ox + 1, 4, 3, 8, DARK);
            c.rect(ox + 12, 4, 3, 8, DARK);
        }
        Furniture::PoolTable => {
            c.rect(ox, 1, 16, 14, WOOD_DARK);
            c.rect(ox + 1, 2, 14, 12, rgb(40, 130, 70));
            c.rect(ox + 5, 6, 2, 2, WHITE);
            c.rect(ox + 9, 8, 2, 2, rgb(220, 60, 60));
        }
    }
}

/// Whether [`icon_image`] has a drawing of its own for an emoji (else the emoji is shown in the
/// emoji font).
pub fn has_pixel_icon(emoji: &str) -> bool {
    PIXEL_ICONS.contains(&emoji)
}

/// The emoji we draw icons for, in the icon strip's order (the generic icon comes last).
pub const PIXEL_ICONS: [&str; 14] = [
    "😴", "☕", "💼", "🍳", "🍽", "🍲", "🍺", "📚", "🌳", "🛒", "🚿", "🪥", "🏠", "🏋",
];

/// Pixels per icon side.
pub const ICON: u32 = 10;

/// The icon strip's cell for an emoji: its own drawing, else the generic icon (the last cell).
pub fn icon_index(emoji: &str) -> usize {
    PIXEL_ICONS
        .iter()
        .position(|e| *e == emoji)
        .unwrap_or(PIXEL_ICONS.len())
}

/// The icon strip's cell of the selection ring (after the generic icon).
pub const RING_INDEX: usize = PIXEL_ICONS.len() + 1;

/// What an object's state looks like on the object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Flames (two frames, [`EFFECT_BASE`] and the next).
    Fire,
    /// Water drops.
    Water,
    /// A crack and a red cross.
    Broken,
    /// Grime.
    Dirty,
}

/// The icon strip's first effect cell (after the ring): fire, fire's second frame, water,
/// broken, dirty.
pub const EFFECT_BASE: usize = RING_INDEX + 1;

/// Cells in the icon strip: the icons, the generic one, the ring and five effect cells.
pub const ICON_CELLS: usize = EFFECT_BASE + 5;

/// The icon strip's cell of an effect (`frame` flickers fire).
pub fn effect_index(e: Effect, frame: usize) -> usize {
    EFFECT_BASE
        + match e {
            Effect::Fire => frame % 2,
            Effect::Water => 2,
            Effect::Broken => 3,
            Effect::Dirty => 4,
        }
}

/// Which effect a state shows, by its words ("burning", "leaking", "out of order", "dirty");
/// states of ordinary use ("being slept in") show none.
pub fn state_effect(state: &str) -> Option<Effect> {
    let s = state.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| s.contains(w));
    if has(&["burn", "fire", "flame", "smok", "ablaze"]) {
        Some(Effect::Fire)
    } else if has(&["leak", "flood", "drip", "overflow", "wet", "spill"]) {
        Some(Effect::Water)
    } else if has(&[
        "broken",
        "out of order",
        "not working",
        "jammed",
        "crack",
        "smashed",
    ]) {
        Some(Effect::Broken)
    } else if has(&["dirty", "mess", "stain", "filthy", "grime"]) {
        Some(Effect::Dirty)
    } else {
        None
    }
}

fn draw_effects(strip: &mut Canvas) {
    let cell = |i: usize| i as i32 * ICON as i32;
    let (fire_red, fire_orange, fire_yellow) =
        (rgb(220, 50, 30), rgb(250, 140, 30), rgb(255, 230, 90));
    for frame in 0..2 {
        let ox = cell(EFFECT_BASE + frame);
        let sway = frame as i32;
        strip.rect(ox + 1, 6, 8, 4, fire_red);
        strip.rect(ox + 2 + sway, 3, 6 - sway, 4, fire_orange);
        strip.rect(ox + 3, 1 + sway, 2, 3, fire_orange);
        strip.rect(ox + 6 - sway, sway, 2, 3, fire_red);
        strip.rect(ox + 3 + sway, 6, 3, 3, fire_yellow);
    }
    let ox = cell(EFFECT_BASE + 2);
    for (x, y) in [(1, 1), (6, 0), (3, 4), (8, 5), (1, 7), (5, 8)] {
        strip.rect(ox + x, y, 1, 1, rgb(200, 230, 255));
        strip.rect(ox + x, y + 1, 2, 2, rgb(60, 140, 230));
    }
    let ox = cell(EFFECT_BASE + 3);
    for k in 0..10 {
        strip.set(ox + k, k, rgb(220, 40, 40));
        strip.set(ox + 9 - k, k, rgb(220, 40, 40));
        strip.set(ox + (k + 1).min(9), k, [120, 10, 10, 200]);
    }
    let ox = cell(EFFECT_BASE + 4);
    for (x, y, w) in [
        (1, 1, 3),
        (6, 0, 3),
        (3, 4, 4),
        (0, 6, 3),
        (7, 5, 3),
        (4, 8, 4),
    ] {
        strip.rect(ox + x, y, w, 2, [90, 60, 25, 235]);
        strip.rect(ox + x + 1, y, 1, 1, [60, 120, 40, 235]);
    }
}

/// Every icon side by side: [`PIXEL_ICONS`], the generic one, the selection ring, then the
/// object state effects.
pub fn icon_strip() -> Canvas {
    let n = ICON_CELLS as u32;
    let mut strip = Canvas::new(ICON * n, ICON);
    for (i, e) in PIXEL_ICONS.iter().chain(std::iter::once(&"")).enumerate() {
        let c = icon_canvas(e);
        for y in 0..ICON as i32 {
            for x in 0..ICON as i32 {
                strip.set(i as i32 * ICON as i32 + x, y, c.get(x, y));
            }
        }
    }
    // The ring: an ellipse outline, yellow with a dark edge, in the lower part of its cell.
    let ox = RING_INDEX as i32 * ICON as i32;
    for y in 0..ICON as i32 {
        for x in 0..ICON as i32 {
            let (dx, dy) = ((x as f32 - 4.5) / 4.6, (y as f32 - 4.5) / 3.2);
            let r = dx * dx + dy * dy;
            if (0.55..1.0).contains(&r) {
                strip.set(ox + x, y, rgb(255, 214, 40));
            } else if (1.0..1.35).contains(&r) {
                strip.set(ox + x, y, [40, 30, 0, 160]);
            }
        }
    }
    draw_effects(&mut strip);
    strip
}

/// A 10×10 icon for an action's emoji (a generic person for emoji without a drawing).
pub fn icon_canvas(emoji: &str) -> Canvas {
    let mut c = Canvas::new(10, 10);
    let bg = rgb(255, 255, 255);
    c.rect(0, 0, 10, 10, bg);
    c.outline(0, 0, 10, 10, DARK);
    match emoji {
        "😴" => {
            c.rect(2, 2, 4, 1, rgb(60, 80, 200));
            c.rect(4, 3, 1, 1, rgb(60, 80, 200));
            c.rect(3, 4, 1, 1, rgb(60, 80, 200));
            c.rect(2, 5, 4, 1, rgb(60, 80, 200));
            c.rect(6, 6, 2, 1, rgb(60, 80, 200));
            c.rect(6, 7, 1, 1, rgb(60, 80, 200));
        }
        "☕" => {
            c.rect(2, 4, 5, 4, rgb(140, 90, 50));
            c.rect(7, 5, 1, 2, rgb(140, 90, 50));
            c.rect(3, 2, 1, 1, GREY);
            c.rect(5, 2, 1, 1, GREY);
        }
        "💼" => {
            c.rect(2, 3, 6, 5, rgb(120, 80, 40));
            c.rect(4, 2, 2, 1, rgb(120, 80, 40));
        }
        "🍳" | "🍽" | "🍲" => {
            c.rect(2, 3, 6, 5, rgb(220, 220, 220));
            c.rect(4, 4, 2, 2, rgb(250, 200, 40));
        }
        "🍺" => {
            c.rect(3, 3, 4, 5, rgb(230, 170, 40));
            c.rect(3, 2, 4, 1, WHITE);
            c.rect(7, 4, 1, 2, GREY);
        }
        "📚" => {
            c.rect(2, 2, 2, 6, rgb(200, 60, 60));
            c.rect(4, 2, 2, 6, rgb(60, 120, 200));
            c.rect(6, 2, 2, 6, rgb(80, 170, 90));
        }
        "🌳" => {
            c.rect(2, 2, 6, 4, rgb(60, 150, 60));
            c.rect(4, 6, 2, 2, WOOD_DARK);
        }
        "🛒" => {
            c.rect(2, 3, 6, 3, rgb(80, 80, 200));
            c.rect(3, 7, 1, 1, DARK);
            c.rect(6, 7, 1, 1, DARK);
        }
        "🚿" | "🪥" => {
            c.rect(3, 2, 4, 1, GREY);
            for k in 0..3 {
                c.rect(3 + k * 2, 4, 1, 3, rgb(80, 150, 230));
            }
        }
        "🏠" => {
            c.rect(3, 5, 4, 3, rgb(200, 120, 80));
            c.rect(2, 4, 6, 1, rgb(160, 60, 50));
            c.rect(3, 3, 4, 1, rgb(160, 60, 50));
            c.rect(4, 2, 2, 1, rgb(160, 60, 50));
        }
        "🏋" => {
            c.rect(2, 4, 6, 1, DARK);
            c.rect(1, 3, 2, 3, DARK);
            c.rect(7, 3, 2, 3, DARK);
        }
        _ => {
            c.rect(4, 2, 2, 2, rgb(240, 190, 150));
            c.rect(4, 4, 2, 3, rgb(80, 120, 200));
            c.rect(3, 7, 1, 1, DARK);
            c.rect(6, 7, 1, 1, DARK);
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atlas_has_one_cell_per_index() {
        let (w, h) = tile_canvas().size();
        assert_eq!(w, TILE * ATLAS_TILES);
        assert_eq!(h, TILE);
        assert_eq!(furniture_index(Furniture::Bed), FURNITURE_BASE);
        assert!(furniture_index(Furniture::PoolTable) < BED_FOOT);
    }

    #[test]
    fn alarming_states_show_on_the_object_and_ordinary_use_does_not() {
        assert_eq!(state_effect("burning"), Some(Effect::Fire));
        assert_eq!(state_effect("is on fire"), Some(Effect::Fire));
        assert_eq!(state_effect("is leaking"), Some(Effect::Water));
        assert_eq!(state_effect("Out of order"), Some(Effect::Broken));
        assert_eq!(state_effect("dirty"), Some(Effect::Dirty));
        assert_eq!(state_effect("being slept in"), None);
        assert_eq!(state_effect("idle"), None);
        let cells: Vec<usize> = [Effect::Fire, Effect::Water, Effect::Broken, Effect::Dirty]
            .iter()
            .map(|e| effect_index(*e, 0))
            .chain([effect_index(Effect::Fire, 1)])
            .collect();
        for (i, a) in cells.iter().enumerate() {
            assert!(!cells[..i].contains(a), "effects share a cell");
            assert!(*a < ICON_CELLS);
        }
    }
}
