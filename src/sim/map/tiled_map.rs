//! Towns drawn in Tiled for the original Generative Agents: a Tiled map (`.tmj`/`.json` or
//! `.tmx`) whose block layers (`Collisions`, `Sector Blocks`, `Arena Blocks`,
//! `Object Interaction Blocks`, `Spawning Blocks`) hold the ids of the `special_blocks`
//! legends beside it, read into a [`WorldMap`] with the same build and checks as the matrix
//! folder exported from it ([`original`]). The other tile layers are the town's own art,
//! kept as plain data ([`TiledArt`]) for the window to draw; nothing here decodes an image.
//!
//! Readers: `.tmx` (and `.tsx` tilesets) with the `tiled` crate, plus a pass of `quick-xml`
//! for what that crate keeps private or does not check (each tileset's `firstgid`, and each
//! layer's raw gids, so a short layer is an error rather than a panic); `.tmj`/`.json` with
//! serde structs for Tiled's documented JSON format (no maintained crate reads it). See
//! `docs/design/original-formats.md` §1.6.

use super::WorldMap;
use super::original::{
    self, GID_MASK, ImportReport, Layer, Layers, Origin, legend_path, read_legends, read_world,
};
use crate::data_error::{DataError, SourceLines};
use base64::Engine;
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Whether a path names a Tiled map file (`.tmj`, `.json` or `.tmx`).
pub fn is_tiled_file(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| ["tmj", "json", "tmx"].contains(&e.to_ascii_lowercase().as_str()))
}

/// Layers of the convention that carry meaning, not pictures: never drawn.
const BLOCK_LAYERS: [&str; 7] = [
    "Collisions",
    "Sector Blocks",
    "Arena Blocks",
    "Object Interaction Blocks",
    "Spawning Blocks",
    "World Blocks",
    "Special Blocks Registry",
];

/// A Tiled layer name as the convention matches it: spaces at the ends do not count (the
/// original's own map has `"Interior Furniture L2 "`), nor does case.
fn same_name(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

// ------------------------------------------------------------------------------------------
// The art: plain data, drawn by the window (`game::tiled_art`).
// ------------------------------------------------------------------------------------------

/// A Tiled map's own art: its tilesets and the tile layers that are not block layers, in
/// drawing order. Plain data (paths and gids), so a headless run carries it for free and a
/// save can keep it; the window decodes the images.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TiledArt {
    /// The Tiled file (an absolute path).
    pub source: PathBuf,
    /// Width in tiles.
    pub width: i32,
    /// Height in tiles.
    pub height: i32,
    /// Pixels per tile, across.
    pub tile_width: u32,
    /// Pixels per tile, down.
    pub tile_height: u32,
    /// The tilesets, by first gid.
    pub tilesets: Vec<ArtTileset>,
    /// The art layers, bottom first.
    pub layers: Vec<ArtLayer>,
    /// What of the art cannot be drawn, one line each (told once when the town is drawn).
    pub notes: Vec<String>,
}

/// One tileset: a single image cut into tiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtTileset {
    /// Its name in Tiled.
    pub name: String,
    /// The gid of its first tile.
    pub first_gid: u32,
    /// Tiles it holds.
    pub tile_count: u32,
    /// Tiles per row of the image.
    pub columns: u32,
    /// Tile width in pixels.
    pub tile_width: u32,
    /// Tile height in pixels.
    pub tile_height: u32,
    /// Pixels around the tiles.
    pub margin: u32,
    /// Pixels between tiles.
    pub spacing: u32,
    /// The image file (absolute); `None` for a collection of single images (not drawn).
    pub image: Option<PathBuf>,
    /// The image's width in pixels, as the map says.
    pub image_width: u32,
    /// The image's height in pixels, as the map says.
    pub image_height: u32,
    /// The colour drawn as transparent (Tiled's `transparentcolor`), as RGB.
    pub transparent: Option<[u8; 3]>,
}

impl ArtTileset {
    /// The top-left pixel of a tile (by its id within the tileset) in the image.
    pub fn tile_origin(&self, local: u32) -> (u32, u32) {
        let c = self.columns.max(1);
        (
            self.margin + (local % c) * (self.tile_width + self.spacing),
            self.margin + (local / c) * (self.tile_height + self.spacing),
        )
    }
}

/// One art layer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ArtLayer {
    /// Its name in Tiled.
    pub name: String,
    /// Drawn above people (the original draws layers named `Foreground…` above its sprites).
    pub above_people: bool,
    /// Tiled's layer opacity, 0 to 1.
    pub opacity: f32,
    /// Gids, row-major from the top-left, with Tiled's flip bits; 0 where empty.
    pub gids: Vec<u32>,
}

/// Tiled's flip bits: horizontal, vertical, diagonal (an x/y swap, applied first).
pub const FLIP_H: u32 = 0x8000_0000;
/// See [`FLIP_H`].
pub const FLIP_V: u32 = 0x4000_0000;
/// See [`FLIP_H`].
pub const FLIP_D: u32 = 0x2000_0000;

impl TiledArt {
    /// The tileset (index) and id within it of a gid (flip bits ignored), if a tileset holds it.
    pub fn tileset_of(&self, gid: u32) -> Option<(usize, u32)> {
        let g = gid & GID_MASK;
        if g == 0 {
            return None;
        }
        let (i, ts) = self
            .tilesets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.first_gid <= g)
            .max_by_key(|(_, t)| t.first_gid)?;
        let local = g - ts.first_gid;
        (local < ts.tile_count).then_some((i, local))
    }

    /// Indices of the tilesets the layers use.
    pub fn used_tilesets(&self) -> Vec<usize> {
        let mut used = vec![false; self.tilesets.len()];
        for l in &self.layers {
            for g in &l.gids {
                if let Some((i, _)) = self.tileset_of(*g) {
                    used[i] = true;
                }
            }
        }
        (0..used.len()).filter(|i| used[*i]).collect()
    }

    /// Whether a tileset's tiles can be drawn on this map's grid: one image, the map's tile size.
    pub fn drawable(&self, ts: &ArtTileset) -> bool {
        ts.image.is_some() && ts.tile_width == self.tile_width && ts.tile_height == self.tile_height
    }

    /// The image files the layers need that are not there (the window then draws our own art).
    pub fn missing_images(&self) -> Vec<PathBuf> {
        self.used_tilesets()
            .into_iter()
            .filter_map(|i| self.tilesets[i].image.clone())
            .filter(|p| !p.is_file())
            .collect()
    }
}

/// Reads only the art of a Tiled map (for a map file of ours that names it in `art:`).
pub fn load_art(path: &Path) -> Result<TiledArt, DataError> {
    let doc = read_doc(path)?;
    art_of(&doc)
}

// ------------------------------------------------------------------------------------------
// The document: what both readers produce.
// ------------------------------------------------------------------------------------------

/// A Tiled map as read, before the convention is applied.
struct Doc {
    path: PathBuf,
    width: i32,
    height: i32,
    tile_width: u32,
    tile_height: u32,
    tilesets: Vec<ArtTileset>,
    layers: Vec<DocLayer>,
    /// Layers and features not read, one line each.
    notes: Vec<String>,
    /// The map's `world` property, if any (a name for the world when no legend gives one).
    world: Option<String>,
}

struct DocLayer {
    name: String,
    visible: bool,
    opacity: f32,
    gids: Vec<u32>,
    /// Line where the layer starts in the file (0 if not found).
    line: usize,
}

fn read_doc(path: &Path) -> Result<Doc, DataError> {
    let src = std::fs::read_to_string(path)
        .map_err(|e| DataError::new(path, 0, "", format!("cannot read the file: {e}")))?;
    let src = src.strip_prefix('\u{feff}').unwrap_or(&src).to_string();
    let is_tmx = path
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("tmx"));
    let mut doc = if is_tmx {
        read_tmx(path, &src)?
    } else {
        read_tmj(path, &src)?
    };
    // Where each layer starts, for errors found later.
    let lines = SourceLines::new(&src);
    let mut from = 0;
    for l in &mut doc.layers {
        let needle = if is_tmx {
            format!("name=\"{}\"", l.name)
        } else {
            serde_json::to_string(&l.name).unwrap_or_default()
        };
        if let Some((line, at)) = lines.find_from(&needle, from) {
            l.line = line;
            from = at + 1;
        }
    }
    let n = (doc.width * doc.height) as usize;
    for l in &doc.layers {
        if l.gids.len() != n {
            return Err(DataError::new(
                path,
                l.line,
                format!("layer '{}'", l.name),
                format!(
                    "has {} cells but the map is {}×{} = {n}",
                    l.gids.len(),
                    doc.width,
                    doc.height
                ),
            ));
        }
    }
    Ok(doc)
}

fn check_map(
    path: &Path,
    orientation: &str,
    infinite: bool,
    w: i64,
    h: i64,
    tw: u32,
    th: u32,
) -> Result<(), DataError> {
    if !orientation.eq_ignore_ascii_case("orthogonal") {
        return Err(DataError::new(
            path,
            0,
            "orientation",
            format!(
                "the map is {orientation}; only orthogonal maps are towns (the original's convention)"
            ),
        ));
    }
    if infinite {
        return Err(DataError::new(
            path,
            0,
            "infinite",
            "an infinite map has no fixed size; in Tiled untick Map > Map Properties > Infinite and save again",
        ));
    }
    for (what, v) in [("width", w), ("height", h)] {
        if !(1..=1024).contains(&v) {
            return Err(DataError::new(
                path,
                0,
                what,
                format!("must be a whole number from 1 to 1024 (found {v})"),
            ));
        }
    }
    if tw == 0 || th == 0 || tw > 1024 || th > 1024 {
        return Err(DataError::new(
            path,
            0,
            "tilewidth",
            format!("tiles of {tw}×{th} pixels cannot be drawn"),
        ));
    }
    Ok(())
}

/// `#rrggbb` or `#aarrggbb` as RGB.
fn parse_colour(s: &str) -> Option<[u8; 3]> {
    let h = s.trim().trim_start_matches('#');
    let h = if h.len() == 8 { &h[2..] } else { h };
    if h.len() != 6 {
        return None;
    }
    let b = |i: usize| u8::from_str_radix(h.get(i..i + 2)?, 16).ok();
    Some([b(0)?, b(2)?, b(4)?])
}

/// Layer data as text (CSV, or base64 with optional zlib/gzip compression) to gids.
fn decode_text(
    text: &str,
    encoding: Option<&str>,
    compression: Option<&str>,
) -> Result<Vec<u32>, String> {
    match encoding {
        Some("csv") => text
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .enumerate()
            .map(|(i, c)| {
                c.parse::<u32>()
                    .map_err(|_| format!("cell {i}: {c:?} is not a tile id"))
            })
            .collect(),
        Some("base64") => {
            let cleaned: String = text.chars().filter(|c| !c.is_whitespace()).collect();
            let raw = base64::engine::general_purpose::STANDARD
                .decode(cleaned.as_bytes())
                .map_err(|e| format!("the base64 data cannot be decoded: {e}"))?;
            let bytes = match compression.unwrap_or("") {
                "" => raw,
                "zlib" => {
                    let mut out = Vec::new();
                    flate2::read::ZlibDecoder::new(&raw[..])
                        .read_to_end(&mut out)
                        .map_err(|e| format!("the zlib data cannot be unpacked: {e}"))?;
                    out
                }
                "gzip" => {
                    let mut out = Vec::new();
                    flate2::read::GzDecoder::new(&raw[..])
                        .read_to_end(&mut out)
                        .map_err(|e| format!("the gzip data cannot be unpacked: {e}"))?;
                    out
                }
                other => {
                    return Err(format!(
                        "layer data compressed with {other:?} cannot be read (zlib, gzip or none can); in Tiled set Map > Map Properties > Tile Layer Format to CSV and save again"
                    ));
                }
            };
            if bytes.len() % 4 != 0 {
                return Err(format!(
                    "the data is {} bytes, not a whole number of 4-byte tile ids",
                    bytes.len()
                ));
            }
            Ok(bytes
                .chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect())
        }
        other => Err(format!(
            "layer data encoded as {:?} cannot be read (csv or base64 can); in Tiled set Map > Map Properties > Tile Layer Format to CSV and save again",
            other.unwrap_or("XML tiles")
        )),
    }
}

// ------------------------------------------------------------------------------------------
// `.tmj` / `.json`: Tiled's JSON format (https://doc.mapeditor.org/en/stable/reference/json-map-format/).
// ------------------------------------------------------------------------------------------

fn yes() -> bool {
    true
}

fn one() -> f32 {
    1.0
}

#[derive(Deserialize)]
struct JMap {
    #[serde(default)]
    orientation: Option<String>,
    #[serde(default)]
    infinite: bool,
    width: i64,
    height: i64,
    tilewidth: u32,
    tileheight: u32,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    tilesets: Vec<JTileset>,
    #[serde(default)]
    properties: Vec<JProperty>,
}

#[derive(Deserialize)]
struct JProperty {
    name: String,
    #[serde(default)]
    value: serde_json::Value,
}

#[derive(Deserialize)]
struct JLayer {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    name: String,
    #[serde(default = "yes")]
    visible: bool,
    #[serde(default = "one")]
    opacity: f32,
    #[serde(default)]
    data: Option<serde_json::Value>,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    compression: Option<String>,
    #[serde(default)]
    chunks: Option<serde_json::Value>,
    #[serde(default)]
    layers: Vec<JLayer>,
    #[serde(default)]
    offsetx: f64,
    #[serde(default)]
    offsety: f64,
}

#[derive(Deserialize)]
struct JTileset {
    #[serde(default)]
    firstgid: u32,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    name: String,
    #[serde(default)]
    tilewidth: u32,
    #[serde(default)]
    tileheight: u32,
    #[serde(default)]
    tilecount: u32,
    #[serde(default)]
    columns: u32,
    #[serde(default)]
    margin: u32,
    #[serde(default)]
    spacing: u32,
    #[serde(default)]
    image: Option<String>,
    #[serde(default)]
    imagewidth: u32,
    #[serde(default)]
    imageheight: u32,
    #[serde(default)]
    transparentcolor: Option<String>,
}

fn json_error(path: &Path, e: serde_json::Error) -> DataError {
    DataError::new(path, e.line(), "", format!("not a Tiled map in JSON: {e}"))
}

fn read_tmj(path: &Path, src: &str) -> Result<Doc, DataError> {
    let map: JMap = serde_json::from_str(src).map_err(|e| json_error(path, e))?;
    check_map(
        path,
        map.orientation.as_deref().unwrap_or("orthogonal"),
        map.infinite,
        map.width,
        map.height,
        map.tilewidth,
        map.tileheight,
    )?;
    let dir = absolute_dir(path);
    let mut tilesets = Vec::new();
    for (i, t) in map.tilesets.iter().enumerate() {
        tilesets.push(json_tileset(path, &dir, i, t)?);
    }
    let mut doc = Doc {
        path: path.to_path_buf(),
        width: map.width as i32,
        height: map.height as i32,
        tile_width: map.tilewidth,
        tile_height: map.tileheight,
        tilesets,
        layers: Vec::new(),
        notes: Vec::new(),
        world: map
            .properties
            .iter()
            .find(|p| p.name.eq_ignore_ascii_case("world"))
            .and_then(|p| p.value.as_str())
            .map(str::to_string),
    };
    json_layers(path, &map.layers, true, 1.0, &mut doc)?;
    Ok(doc)
}

/// The folder of a file, made absolute (so image paths stay right from any working folder).
fn absolute_dir(path: &Path) -> PathBuf {
    let dir = path.parent().unwrap_or(Path::new("."));
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf())
}

fn json_tileset(path: &Path, dir: &Path, i: usize, t: &JTileset) -> Result<ArtTileset, DataError> {
    let field = format!("tilesets[{i}]");
    if t.firstgid == 0 {
        return Err(DataError::new(
            path,
            0,
            field,
            "has no firstgid (the gid of its first tile)",
        ));
    }
    let Some(source) = &t.source else {
        return Ok(art_tileset(dir, t, t.firstgid));
    };
    // An external tileset: `.tsj`/`.json` in the same JSON form, `.tsx` read by the tiled crate.
    let file = dir.join(source);
    let ext = file
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    if ext == "tsx" {
        let ts = ::tiled::Loader::new()
            .load_tsx_tileset(&file)
            .map_err(|e| {
                DataError::new(
                    path,
                    0,
                    field.clone(),
                    format!("the tileset {} cannot be read: {e}", file.display()),
                )
            })?;
        return Ok(tiled_tileset(&ts, t.firstgid));
    }
    let text = std::fs::read_to_string(&file).map_err(|e| {
        DataError::new(
            path,
            0,
            field.clone(),
            format!("the tileset {} cannot be read: {e}", file.display()),
        )
    })?;
    let ext_ts: JTileset = serde_json::from_str(text.strip_prefix('\u{feff}').unwrap_or(&text))
        .map_err(|e| {
            DataError::new(
                &file,
                e.line(),
                "",
                format!("not a Tiled tileset in JSON: {e}"),
            )
        })?;
    Ok(art_tileset(&absolute_dir(&file), &ext_ts, t.firstgid))
}

fn art_tileset(dir: &Path, t: &JTileset, first_gid: u32) -> ArtTileset {
    ArtTileset {
        name: t.name.clone(),
        first_gid,
        tile_count: t.tilecount,
        columns: t.columns,
        tile_width: t.tilewidth,
        tile_height: t.tileheight,
        margin: t.margin,
        spacing: t.spacing,
        image: t.image.as_ref().map(|i| dir.join(i)),
        image_width: t.imagewidth,
        image_height: t.imageheight,
        transparent: t.transparentcolor.as_deref().and_then(parse_colour),
    }
}

fn json_layers(
    path: &Path,
    layers: &[JLayer],
    visible: bool,
    opacity: f32,
    doc: &mut Doc,
) -> Result<(), DataError> {
    for l in layers {
        let field = || format!("layer '{}'", l.name);
        match l.kind.as_str() {
            "tilelayer" => {
                if l.chunks.is_some() {
                    return Err(DataError::new(
                        path,
                        0,
                        field(),
                        "holds chunks (an infinite map); in Tiled untick Map > Map Properties > Infinite and save again",
                    ));
                }
                let gids = match &l.data {
                    Some(serde_json::Value::Array(cells)) => {
                        let mut out = Vec::with_capacity(cells.len());
                        for (i, c) in cells.iter().enumerate() {
                            let g =
                                c.as_u64()
                                    .filter(|g| *g <= u32::MAX as u64)
                                    .ok_or_else(|| {
                                        DataError::new(
                                            path,
                                            0,
                                            format!("{}, cell {i}", field()),
                                            format!(
                                                "{c} is not a tile id (a whole number, 0 for none)"
                                            ),
                                        )
                                    })?;
                            out.push(g as u32);
                        }
                        out
                    }
                    Some(serde_json::Value::String(text)) => decode_text(
                        text,
                        Some(l.encoding.as_deref().unwrap_or("base64")),
                        l.compression.as_deref(),
                    )
                    .map_err(|m| DataError::new(path, 0, field(), m))?,
                    _ => {
                        return Err(DataError::new(
                            path,
                            0,
                            field(),
                            "has no data (a list of tile ids)",
                        ));
                    }
                };
                if l.offsetx != 0.0 || l.offsety != 0.0 {
                    doc.notes.push(format!(
                        "layer '{}' is offset by ({}, {}) pixels in Tiled; it is drawn on the grid",
                        l.name, l.offsetx, l.offsety
                    ));
                }
                doc.layers.push(DocLayer {
                    name: l.name.clone(),
                    visible: visible && l.visible,
                    opacity: opacity * l.opacity,
                    gids,
                    line: 0,
                });
            }
            "group" => json_layers(
                path,
                &l.layers,
                visible && l.visible,
                opacity * l.opacity,
                doc,
            )?,
            other => doc.notes.push(format!(
                "{other} '{}' is not read (only tile layers make the town)",
                l.name
            )),
        }
    }
    Ok(())
}

// ------------------------------------------------------------------------------------------
// `.tmx`: the tiled crate, and quick-xml for the first gids and the raw layer data.
// ------------------------------------------------------------------------------------------

fn tiled_tileset(ts: &::tiled::Tileset, first_gid: u32) -> ArtTileset {
    let img = ts.image.as_ref();
    ArtTileset {
        name: ts.name.clone(),
        first_gid,
        tile_count: ts.tilecount,
        columns: ts.columns,
        tile_width: ts.tile_width,
        tile_height: ts.tile_height,
        margin: ts.margin,
        spacing: ts.spacing,
        image: img.map(|i| std::path::absolute(&i.source).unwrap_or_else(|_| i.source.clone())),
        image_width: img.map(|i| i.width.max(0) as u32).unwrap_or(0),
        image_height: img.map(|i| i.height.max(0) as u32).unwrap_or(0),
        transparent: img
            .and_then(|i| i.transparent_colour)
            .map(|c| [c.red, c.green, c.blue]),
    }
}

/// What the tiled crate does not give: the `firstgid` of each tileset of the map, and the raw
/// gids of each tile layer (in document order, groups included).
fn tmx_raw(path: &Path, src: &str) -> Result<(Vec<u32>, Vec<Vec<u32>>), DataError> {
    use quick_xml::events::Event;
    let err = |m: String| DataError::new(path, 0, "", m);
    let xml = |e: quick_xml::Error| err(format!("not a Tiled map in XML: {e}"));
    let mut reader = quick_xml::Reader::from_str(src);
    let mut depth = 0usize;
    let mut first_gids = Vec::new();
    let mut layers: Vec<Vec<u32>> = Vec::new();
    // The <data> being read: encoding, compression, text.
    let mut data: Option<(Option<String>, Option<String>, String)> = None;
    let attr =
        |e: &quick_xml::events::BytesStart, name: &str| -> Result<Option<String>, DataError> {
            e.try_get_attribute(name)
                .map_err(|e| err(format!("not a Tiled map in XML: {e}")))?
                .map(|a| {
                    a.unescape_value()
                        .map(|v| v.into_owned())
                        .map_err(|e| err(format!("not a Tiled map in XML: {e}")))
                })
                .transpose()
        };
    loop {
        let ev = reader.read_event().map_err(xml)?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                match e.name().as_ref() {
                    b"tileset" if depth == 1 => {
                        let v = attr(e, "firstgid")?.unwrap_or_default();
                        first_gids.push(v.trim().parse::<u32>().map_err(|_| {
                            err(format!("a tileset's firstgid {v:?} is not a whole number"))
                        })?);
                    }
                    b"layer" => layers.push(Vec::new()),
                    b"data" if !layers.is_empty() => {
                        data = Some((attr(e, "encoding")?, attr(e, "compression")?, String::new()));
                        if empty {
                            data = None;
                        }
                    }
                    _ => {}
                }
                if !empty {
                    depth += 1;
                }
            }
            Event::Text(t) => {
                if let Some((_, _, text)) = &mut data {
                    text.push_str(&t.unescape().map_err(xml)?);
                }
            }
            Event::CData(t) => {
                if let Some((_, _, text)) = &mut data {
                    text.push_str(&String::from_utf8_lossy(&t.into_inner()));
                }
            }
            Event::End(e) => {
                depth = depth.saturating_sub(1);
                if e.name().as_ref() == b"data"
                    && let Some((enc, comp, text)) = data.take()
                {
                    let gids =
                        decode_text(&text, enc.as_deref(), comp.as_deref()).map_err(|m| {
                            DataError::new(path, 0, format!("layer {}", layers.len()), m)
                        })?;
                    if let Some(l) = layers.last_mut() {
                        *l = gids;
                    }
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    Ok((first_gids, layers))
}

fn read_tmx(path: &Path, src: &str) -> Result<Doc, DataError> {
    let map = ::tiled::Loader::new()
        .load_tmx_map(path)
        .map_err(|e| DataError::new(path, 0, "", format!("not a Tiled map: {e}")))?;
    let orientation = match map.orientation {
        ::tiled::Orientation::Orthogonal => "orthogonal",
        ::tiled::Orientation::Isometric => "isometric",
        ::tiled::Orientation::Staggered => "staggered",
        ::tiled::Orientation::Hexagonal => "hexagonal",
        ::tiled::Orientation::Oblique => "oblique",
    };
    check_map(
        path,
        orientation,
        map.infinite(),
        map.width as i64,
        map.height as i64,
        map.tile_width,
        map.tile_height,
    )?;
    let (first_gids, raw) = tmx_raw(path, src)?;
    if first_gids.len() != map.tilesets().len() {
        return Err(DataError::new(
            path,
            0,
            "tileset",
            format!(
                "{} tilesets read but {} firstgid attributes found",
                map.tilesets().len(),
                first_gids.len()
            ),
        ));
    }
    let tilesets = map
        .tilesets()
        .iter()
        .zip(&first_gids)
        .map(|(ts, g)| tiled_tileset(ts, *g))
        .collect();
    let world = map.properties.iter().find_map(|(k, v)| match v {
        ::tiled::PropertyValue::StringValue(s) if k.eq_ignore_ascii_case("world") => {
            Some(s.clone())
        }
        _ => None,
    });
    let mut doc = Doc {
        path: path.to_path_buf(),
        width: map.width as i32,
        height: map.height as i32,
        tile_width: map.tile_width,
        tile_height: map.tile_height,
        tilesets,
        layers: Vec::new(),
        notes: Vec::new(),
        world,
    };
    let mut raw = raw.into_iter();
    fn walk<'m>(
        layers: impl Iterator<Item = ::tiled::Layer<'m>>,
        visible: bool,
        opacity: f32,
        raw: &mut std::vec::IntoIter<Vec<u32>>,
        doc: &mut Doc,
    ) {
        for l in layers {
            match l.layer_type() {
                ::tiled::LayerType::Tiles(_) => {
                    if l.offset_x != 0.0 || l.offset_y != 0.0 {
                        doc.notes.push(format!(
                            "layer '{}' is offset by ({}, {}) pixels in Tiled; it is drawn on the grid",
                            l.name, l.offset_x, l.offset_y
                        ));
                    }
                    doc.layers.push(DocLayer {
                        name: l.name.clone(),
                        visible: visible && l.visible,
                        opacity: opacity * l.opacity,
                        gids: raw.next().unwrap_or_default(),
                        line: 0,
                    });
                }
                ::tiled::LayerType::Group(g) => walk(
                    g.layers(),
                    visible && l.visible,
                    opacity * l.opacity,
                    raw,
                    doc,
                ),
                ::tiled::LayerType::Objects(_) => doc.notes.push(format!(
                    "object layer '{}' is not read (only tile layers make the town)",
                    l.name
                )),
                ::tiled::LayerType::Image(_) => doc.notes.push(format!(
                    "image layer '{}' is not read (only tile layers make the town)",
                    l.name
                )),
            }
        }
    }
    walk(map.layers(), true, 1.0, &mut raw, &mut doc);
    Ok(doc)
}

// ------------------------------------------------------------------------------------------
// The convention: block layers and legends into a town; the rest is art.
// ------------------------------------------------------------------------------------------

/// Where the `special_blocks/` legends of a Tiled map are: beside it, in `matrix/` beside it,
/// in its parent folder, or in `../matrix/` (the original's `assets/<town>/visuals/` map with
/// `assets/<town>/matrix/special_blocks/`). Returns the folder holding `special_blocks/`.
pub fn legends_dir(map: &Path) -> Result<PathBuf, DataError> {
    let dir = absolute_dir(map);
    let mut tried = Vec::new();
    let mut candidates = vec![dir.clone(), dir.join("matrix")];
    if let Some(parent) = dir.parent() {
        candidates.push(parent.to_path_buf());
        candidates.push(parent.join("matrix"));
    }
    for c in candidates {
        let sb = c.join("special_blocks");
        if sb.is_dir() {
            return Ok(c);
        }
        tried.push(sb.display().to_string());
    }
    Err(DataError::new(
        map,
        0,
        "",
        format!(
            "no special_blocks/ folder with the legends (sector_blocks.csv, arena_blocks.csv, game_object_blocks.csv, spawning_location_blocks.csv) beside the map; looked in {}",
            tried.join(", ")
        ),
    ))
}

/// Reads a Tiled map that follows the original's layer convention into a town, with its art.
pub fn load_tiled(path: &Path) -> Result<(WorldMap, ImportReport), DataError> {
    let doc = read_doc(path)?;
    let mut report = ImportReport::default();

    // The block layers, by name.
    let find = |name: &str| -> Result<Option<usize>, DataError> {
        let hits: Vec<usize> = doc
            .layers
            .iter()
            .enumerate()
            .filter(|(_, l)| same_name(&l.name, name))
            .map(|(i, _)| i)
            .collect();
        if hits.len() > 1 {
            return Err(DataError::new(
                path,
                doc.layers[hits[1]].line,
                format!("layer '{}'", doc.layers[hits[1]].name),
                format!(
                    "there are {} layers named '{name}'; the town needs exactly one",
                    hits.len()
                ),
            ));
        }
        Ok(hits.first().copied())
    };
    let mut index = [0usize; 5];
    let mut has_spawns = true;
    for l in Layer::ALL {
        match find(l.tiled_name())? {
            Some(i) => index[l as usize] = i,
            None if l == Layer::Spawn => has_spawns = false,
            None => {
                return Err(DataError::new(
                    path,
                    0,
                    format!("layer '{}'", l.tiled_name()),
                    format!(
                        "the map has no '{}' tile layer; a town drawn for the original has Collisions, Sector Blocks, Arena Blocks, Object Interaction Blocks and Spawning Blocks (this map's tile layers: {})",
                        l.tiled_name(),
                        doc.layers
                            .iter()
                            .map(|l| format!("'{}'", l.name))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
        }
    }
    let n = (doc.width * doc.height) as usize;
    let cells = Layer::ALL.map(|l| {
        if l == Layer::Spawn && !has_spawns {
            vec![0; n]
        } else {
            doc.layers[index[l as usize]]
                .gids
                .iter()
                .map(|g| g & GID_MASK)
                .collect()
        }
    });
    if !has_spawns {
        report
            .notes
            .push("no 'Spawning Blocks' layer: the town has no spawn points".into());
    }

    let dir = legends_dir(path)?;
    let stem = path
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("the world")
        .to_string();
    let (fallback, why) = match &doc.world {
        Some(w) => (w.clone(), "from the map's `world` property"),
        None => (stem, "after the map file"),
    };
    let world = read_world(&dir, &fallback, why, &mut report)?;
    let spawn_legend_there = legend_path(&dir, "spawning_location").is_file();
    if has_spawns && !spawn_legend_there && cells[Layer::Spawn as usize].iter().all(|c| *c == 0) {
        has_spawns = false; // an empty layer and no legend: nothing to read
    }
    let [sector_legend, arena_legend, object_legend, spawn_legend] =
        read_legends(&dir, has_spawns)?;
    report.read.push(format!(
        "legends from {}",
        dir.join("special_blocks").display()
    ));

    let mut lines = [0usize; 5];
    for l in Layer::ALL {
        if l != Layer::Spawn || has_spawns {
            lines[l as usize] = doc.layers[index[l as usize]].line;
        }
    }
    let layers = Layers {
        dir,
        origin: Origin::Tiled {
            file: path.to_path_buf(),
            lines,
        },
        world,
        width: doc.width,
        height: doc.height,
        cells,
        sector_legend,
        arena_legend,
        object_legend,
        spawn_legend,
        terrain: None,
        objects_block: false,
    };
    let (mut map, mut report) = original::build_town(layers, report)?;

    let art = art_of(&doc)?;
    let missing = art.missing_images();
    report.read.push(format!(
        "art: {} layer(s) drawn ({} above people), {} tileset(s) used{}",
        art.layers.len(),
        art.layers.iter().filter(|l| l.above_people).count(),
        art.used_tilesets().len(),
        if missing.is_empty() {
            String::new()
        } else {
            format!(
                "; {} image(s) missing, so the window draws our own art: {}",
                missing.len(),
                missing
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    report.notes.extend(doc.notes.iter().cloned());
    report.notes.extend(art.notes.iter().cloned());
    map.art = Some(Arc::new(art));
    Ok((map, report))
}

/// The art of a map: every visible tile layer that is not a block layer, bottom first, with
/// each gid checked against the tilesets.
fn art_of(doc: &Doc) -> Result<TiledArt, DataError> {
    let source = std::path::absolute(&doc.path).unwrap_or_else(|_| doc.path.clone());
    let mut art = TiledArt {
        source,
        width: doc.width,
        height: doc.height,
        tile_width: doc.tile_width,
        tile_height: doc.tile_height,
        tilesets: doc.tilesets.clone(),
        layers: Vec::new(),
        notes: Vec::new(),
    };
    art.tilesets.sort_by_key(|t| t.first_gid);
    let w = doc.width;
    for l in &doc.layers {
        if BLOCK_LAYERS.iter().any(|b| same_name(b, &l.name)) || !l.visible {
            continue;
        }
        let mut any = false;
        let mut only_blocks = true;
        for (i, g) in l.gids.iter().enumerate() {
            if *g & GID_MASK == 0 {
                continue;
            }
            any = true;
            let Some((t, _)) = art.tileset_of(*g) else {
                let (x, y) = (i as i32 % w, i as i32 / w);
                return Err(DataError::new(
                    &doc.path,
                    l.line,
                    format!("layer '{}', cell {i} (x {x}, y {y})", l.name),
                    format!(
                        "gid {} is in no tileset of the map (tilesets hold {})",
                        g & GID_MASK,
                        art.tilesets
                            .iter()
                            .map(|t| format!(
                                "{}–{}",
                                t.first_gid,
                                t.first_gid + t.tile_count.max(1) - 1
                            ))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            };
            only_blocks &= art.tilesets[t]
                .name
                .to_ascii_lowercase()
                .starts_with("blocks");
        }
        if !any {
            continue;
        }
        if only_blocks {
            art.notes.push(format!(
                "layer '{}' holds only block tiles and is not drawn",
                l.name
            ));
            continue;
        }
        art.layers.push(ArtLayer {
            name: l.name.clone(),
            above_people: l.name.trim().to_ascii_lowercase().starts_with("foreground"),
            opacity: l.opacity.clamp(0.0, 1.0),
            gids: l.gids.clone(),
        });
    }
    for i in art.used_tilesets() {
        let ts = &art.tilesets[i];
        if ts.image.is_none() {
            art.notes.push(format!(
                "tileset '{}' is a collection of single images; its tiles are not drawn",
                ts.name
            ));
        } else if !art.drawable(ts) {
            art.notes.push(format!(
                "tileset '{}' has {}×{} tiles on a map of {}×{}; its tiles are not drawn",
                ts.name, ts.tile_width, ts.tile_height, art.tile_width, art.tile_height
            ));
        }
    }
    Ok(art)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_and_layer_data_decode() {
        assert_eq!(parse_colour("#ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("#80ff00ff"), Some([255, 0, 255]));
        assert_eq!(parse_colour("#f0f"), None);
        assert_eq!(
            decode_text("1, 2,\n3", Some("csv"), None).unwrap(),
            vec![1, 2, 3]
        );
        // 1 and 2 as little-endian u32s, base64 ("AQAAAAIAAAA="), then zlib-packed.
        assert_eq!(
            decode_text("AQAAAAIAAAA=", Some("base64"), None).unwrap(),
            vec![1, 2]
        );
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        std::io::Write::write_all(&mut z, &[1, 0, 0, 0, 2, 0, 0, 0]).unwrap();
        let packed = base64::engine::general_purpose::STANDARD.encode(z.finish().unwrap());
        assert_eq!(
            decode_text(&packed, Some("base64"), Some("zlib")).unwrap(),
            vec![1, 2]
        );
        let e = decode_text(&packed, Some("base64"), Some("zstd")).unwrap_err();
        assert!(e.contains("zstd") && e.contains("CSV"), "{e}");
        let e = decode_text("AQAAAAI=", Some("base64"), None).unwrap_err();
        assert!(e.contains("5 bytes"), "{e}");
    }

    #[test]
    fn gids_find_their_tileset_and_flip_bits_are_ignored() {
        let ts = |name: &str, first_gid, tile_count| ArtTileset {
            name: name.into(),
            first_gid,
            tile_count,
            columns: 4,
            tile_width: 32,
            tile_height: 32,
            margin: 0,
            spacing: 0,
            image: Some(PathBuf::from("/nonexistent/x.png")),
            image_width: 128,
            image_height: 128,
            transparent: None,
        };
        let art = TiledArt {
            source: PathBuf::from("/x.tmj"),
            width: 2,
            height: 1,
            tile_width: 32,
            tile_height: 32,
            tilesets: vec![ts("a", 1, 16), ts("b", 100, 4)],
            layers: vec![ArtLayer {
                name: "g".into(),
                above_people: false,
                opacity: 1.0,
                gids: vec![FLIP_H | 101, 0],
            }],
            notes: Vec::new(),
        };
        assert_eq!(art.tileset_of(5), Some((0, 4)));
        assert_eq!(art.tileset_of(FLIP_H | FLIP_D | 101), Some((1, 1)));
        assert_eq!(art.tileset_of(20), None, "past the first tileset's tiles");
        assert_eq!(art.tileset_of(0), None);
        assert_eq!(art.used_tilesets(), vec![1]);
        assert_eq!(art.missing_images().len(), 1);
        assert_eq!(ts("c", 1, 16).tile_origin(5), (32, 32));
    }
}
