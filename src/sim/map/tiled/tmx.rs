//! The `.tmx` reader (and `.tsx` tilesets): the tiled crate, after a pass of quick-xml for what
//! that crate keeps private or does not check (the map's size, before any layer is unpacked;
//! each tileset's `firstgid`; each layer's raw gids, so a short layer is an error rather than a
//! panic).

use super::ArtTileset;
use super::absolute;
use super::doc::{Doc, check_map, decode_text};
use crate::data_error::DataError;
use quick_xml::events::BytesStart;
use std::path::Path;

/// A tileset as the tiled crate read it (a `.tsx` file, or one of a `.tmx` map), given its first
/// gid, which that crate keeps private.
pub(super) fn tiled_tileset(ts: &::tiled::Tileset, first_gid: u32) -> ArtTileset {
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
        image: img.map(|i| absolute(&i.source)),
        image_width: img.map(|i| i.width.max(0) as u32).unwrap_or(0),
        image_height: img.map(|i| i.height.max(0) as u32).unwrap_or(0),
        transparent: img
            .and_then(|i| i.transparent_colour)
            .map(|c| [c.red, c.green, c.blue]),
    }
}

/// An attribute of an element, unescaped, if it is there.
fn attr(path: &Path, e: &BytesStart, name: &str) -> Result<Option<String>, DataError> {
    let err = |m: String| DataError::new(path, 0, "", m);
    e.try_get_attribute(name)
        .map_err(|e| err(format!("not a Tiled map in XML: {e}")))?
        .map(|a| {
            a.unescape_value()
                .map(|v| v.into_owned())
                .map_err(|e| err(format!("not a Tiled map in XML: {e}")))
        })
        .transpose()
}

/// A whole-number attribute of `<map>`.
fn map_number(path: &Path, e: &BytesStart, name: &str) -> Result<i64, DataError> {
    let v = attr(path, e, name)?
        .ok_or_else(|| DataError::new(path, 0, name, "is missing from the <map> element"))?;
    v.trim()
        .parse::<i64>()
        .map_err(|_| DataError::new(path, 0, name, format!("{v:?} is not a whole number")))
}

/// The `<map>` element checked as [`check_map`] checks a map: its cells (width × height).
fn map_cells(path: &Path, e: &BytesStart) -> Result<usize, DataError> {
    let orientation = attr(path, e, "orientation")?;
    let infinite = attr(path, e, "infinite")?.is_some_and(|v| v.trim() == "1");
    let (w, h) = (
        map_number(path, e, "width")?,
        map_number(path, e, "height")?,
    );
    let tile = |v: i64| v.clamp(0, u32::MAX.into()) as u32;
    let (tw, th) = (
        map_number(path, e, "tilewidth")?,
        map_number(path, e, "tileheight")?,
    );
    check_map(
        path,
        orientation.as_deref().unwrap_or("orthogonal"),
        infinite,
        w,
        h,
        tile(tw),
        tile(th),
    )?;
    Ok((w * h) as usize)
}

/// The gids of layer `name` from its `<data>` text, unpacked no further than the map's `cells`
/// (`None`, an error, when the layer comes before the `<map>` element's size).
fn layer_gids(
    path: &Path,
    name: &str,
    cells: Option<usize>,
    (enc, comp, text): (Option<String>, Option<String>, String),
) -> Result<Vec<u32>, DataError> {
    let field = format!("layer '{name}'");
    let Some(cells) = cells else {
        return Err(DataError::new(
            path,
            0,
            field,
            "comes before the <map> element's size",
        ));
    };
    decode_text(&text, enc.as_deref(), comp.as_deref(), cells)
        .map_err(|m| DataError::new(path, 0, field, m))
}

/// What the tiled crate does not give or does not check, read before it runs: the map's size
/// (checked first, as [`check_map`] does), the `firstgid` of each tileset of the map, and the
/// raw gids of each tile layer (in document order, groups included), unpacked no further than
/// the map's size holds.
fn tmx_raw(path: &Path, src: &str) -> Result<(Vec<u32>, Vec<Vec<u32>>), DataError> {
    use quick_xml::events::Event;
    let err = |m: String| DataError::new(path, 0, "", m);
    let xml = |e: quick_xml::Error| err(format!("not a Tiled map in XML: {e}"));
    let mut reader = quick_xml::Reader::from_str(src);
    let mut depth = 0usize;
    // Cells of the map (width × height), once its `<map>` element is read and checked.
    let mut cells: Option<usize> = None;
    let mut first_gids = Vec::new();
    let mut layers: Vec<Vec<u32>> = Vec::new();
    // The `<layer>` being read: its depth and name. Only its own `<data>` holds its gids (an
    // image layer's or a tileset's `<image>` may hold a `<data>` too).
    let mut layer: Option<(usize, String)> = None;
    // The <data> being read: encoding, compression, text.
    let mut data: Option<(Option<String>, Option<String>, String)> = None;
    loop {
        let ev = reader.read_event().map_err(xml)?;
        match ev {
            Event::Start(ref e) | Event::Empty(ref e) => {
                let empty = matches!(ev, Event::Empty(_));
                match e.name().as_ref() {
                    b"map" if depth == 0 => cells = Some(map_cells(path, e)?),
                    b"tileset" if depth == 1 => {
                        let v = attr(path, e, "firstgid")?.unwrap_or_default();
                        first_gids.push(v.trim().parse::<u32>().map_err(|_| {
                            err(format!("a tileset's firstgid {v:?} is not a whole number"))
                        })?);
                    }
                    b"layer" => {
                        layers.push(Vec::new());
                        if !empty {
                            layer = Some((depth, attr(path, e, "name")?.unwrap_or_default()));
                        }
                    }
                    b"data" if !empty && layer.as_ref().is_some_and(|(d, _)| depth == d + 1) => {
                        data = Some((
                            attr(path, e, "encoding")?,
                            attr(path, e, "compression")?,
                            String::new(),
                        ));
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
                    && let Some(read) = data.take()
                {
                    let name = layer.as_ref().map(|(_, n)| n.as_str()).unwrap_or_default();
                    let gids = layer_gids(path, name, cells, read)?;
                    if let Some(l) = layers.last_mut() {
                        *l = gids;
                    }
                }
                if layer.as_ref().is_some_and(|(d, _)| *d == depth) {
                    layer = None;
                }
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if cells.is_none() {
        return Err(err("not a Tiled map: no <map> element".into()));
    }
    Ok((first_gids, layers))
}

/// Reads a `.tmx` map into a [`Doc`]: our own pass first ([`tmx_raw`]), then the tiled crate.
pub(super) fn read_tmx(path: &Path, src: &str) -> Result<Doc, DataError> {
    // First our own pass: the tiled crate unpacks every layer before anyone sees the map's
    // size, so a huge size or an unpacking bomb is refused here, before it runs.
    let (first_gids, raw) = tmx_raw(path, src)?;
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
    let mut doc = Doc::new(
        path,
        (map.width as i32, map.height as i32),
        (map.tile_width, map.tile_height),
        tilesets,
        world,
    );
    let mut raw = raw.into_iter();
    walk_layers(map.layers(), true, 1.0, &mut raw, &mut doc);
    Ok(doc)
}

/// Tile layers (groups walked into, their visibility and opacity passed down) pushed onto the
/// document with their raw gids, in document order; object and image layers are noted as not
/// read.
fn walk_layers<'m>(
    layers: impl Iterator<Item = ::tiled::Layer<'m>>,
    visible: bool,
    opacity: f32,
    raw: &mut std::vec::IntoIter<Vec<u32>>,
    doc: &mut Doc,
) {
    for l in layers {
        match l.layer_type() {
            ::tiled::LayerType::Tiles(_) => {
                doc.push_tile_layer(
                    &l.name,
                    (l.offset_x as f64, l.offset_y as f64),
                    visible && l.visible,
                    opacity * l.opacity,
                    raw.next().unwrap_or_default(),
                );
            }
            ::tiled::LayerType::Group(g) => walk_layers(
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

#[cfg(test)]
mod tests {
    use super::super::doc::tests::bombs;
    use super::super::read_doc;
    use super::*;

    /// A one-layer `.tmx` of `w`×`h` tiles whose layer holds `data` (a whole `<data>` element),
    /// with `more` after the layer.
    fn tmx_text(w: &str, h: &str, data: &str, more: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<map version="1.8" orientation="orthogonal" width="{w}" height="{h}" tilewidth="32" tileheight="32" infinite="0">
 <tileset firstgid="1" name="t" tilewidth="32" tileheight="32" tilecount="4" columns="2">
  <image source="t.png" width="64" height="64"/>
 </tileset>
 <layer id="1" name="Ground" width="{w}" height="{h}">
  {data}
 </layer>
 {more}
</map>"#
        )
    }

    #[test]
    fn a_tmx_map_is_checked_before_its_layers_are_unpacked() {
        let path = Path::new("town.tmx");
        let csv = r#"<data encoding="csv">1,2,3,4</data>"#;
        let (gids, layers) = tmx_raw(path, &tmx_text("2", "2", csv, "")).unwrap();
        assert_eq!((gids, layers), (vec![1], vec![vec![1, 2, 3, 4]]));
        // A size past the limit, or none, is refused before any layer is read.
        let e = tmx_raw(path, &tmx_text("100000", "2", csv, "")).unwrap_err();
        assert_eq!((e.field.as_str(), e.file.as_path()), ("width", path), "{e}");
        assert!(e.message.contains("100000"), "{e}");
        let e = tmx_raw(path, &tmx_text("2", "two", csv, "")).unwrap_err();
        assert_eq!(e.field, "height", "{e}");
        let e = tmx_raw(
            path,
            &tmx_text("2", "2", csv, "").replace("infinite=\"0\"", "infinite=\"1\""),
        )
        .unwrap_err();
        assert_eq!(e.field, "infinite", "{e}");
        // A packed layer that unpacks past the map's size names the file and the layer.
        for (packed, how) in bombs(64 << 20) {
            let data = format!(r#"<data encoding="base64" compression="{how}">{packed}</data>"#);
            let e = tmx_raw(path, &tmx_text("2", "2", &data, "")).unwrap_err();
            assert_eq!(
                (e.field.as_str(), e.file.as_path()),
                ("layer 'Ground'", path),
                "{e}"
            );
            assert!(e.message.contains("more than the 16 bytes"), "{e}");
        }
        // read_doc refuses the file before the tiled crate unpacks it.
        let dir = std::env::temp_dir().join(format!("simulacra-tmx-bomb-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("town.tmx");
        let [(packed, _), _] = bombs(64 << 20);
        let data = format!(r#"<data encoding="base64" compression="zlib">{packed}</data>"#);
        std::fs::write(&file, tmx_text("2", "2", &data, "")).unwrap();
        let e = read_doc(&file).err().expect("refused");
        assert_eq!(
            (e.field.as_str(), e.file.as_path()),
            ("layer 'Ground'", file.as_path()),
            "{e}"
        );
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn only_a_tile_layer_s_own_data_holds_its_gids() {
        // An image layer after the tile layer with an embedded image (`<data>` in `<image>`).
        let path = Path::new("town.tmx");
        let csv = r#"<data encoding="csv">1,2,3,4</data>"#;
        let more = r#"<imagelayer id="2" name="Sky"><image format="png"><data encoding="base64">AAAAAAAA</data></image></imagelayer>"#;
        let (_, layers) = tmx_raw(path, &tmx_text("2", "2", csv, more)).unwrap();
        assert_eq!(layers, vec![vec![1, 2, 3, 4]]);
        // Nor does a tileset's embedded image before any layer count.
        let text = tmx_text("2", "2", csv, "").replace(
            r#"<image source="t.png" width="64" height="64"/>"#,
            r#"<image format="png" width="64" height="64"><data encoding="base64">AAAA</data></image>"#,
        );
        let (_, layers) = tmx_raw(path, &text).unwrap();
        assert_eq!(layers, vec![vec![1, 2, 3, 4]]);
    }
}
