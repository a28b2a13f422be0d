#!/usr/bin/env python3
"""Lays out the bundled Smallville (maps/smallville.ron).

This script is how the bundled town was drawn; the .ron file it writes is the source of truth
that the game reads and that users edit by hand (see maps/README.md). Re-running it overwrites
maps/smallville.ron. Coordinates are (x, y) with y growing downwards, row 0 at the top.
"""
import sys
from collections import deque

W, H = 140, 100
WORLD = "the Ville"
grid = [["." for _ in range(W)] for _ in range(H)]
sectors = []  # (name, rect, arenas[(name, rect, objects[(kind, rect)])])


def fill(x, y, w, h, ch):
    for yy in range(y, y + h):
        for xx in range(x, x + w):
            grid[yy][xx] = ch


class Sector:
    def __init__(self, name, x, y, w, h):
        self.name, self.rect, self.arenas = name, (x, y, w, h), []
        sectors.append(self)

    def arena(self, name, x, y, w, h, floor="_", objects=()):
        fill(x, y, w, h, floor)
        objs = []
        for kind, dx, dy, ow, oh in objects:
            ox = x + dx if dx >= 0 else x + w + dx
            oy = y + dy if dy >= 0 else y + h + dy
            objs.append((kind, (ox, oy, ow, oh)))
        self.arenas.append((name, (x, y, w, h), objs))


def walls(x, y, w, h):
    """Outline a building: walls on the border of the rect."""
    for xx in range(x, x + w):
        grid[y][xx] = "#"
        grid[y + h - 1][xx] = "#"
    for yy in range(y, y + h):
        grid[yy][x] = "#"
        grid[yy][x + w - 1] = "#"


def door(x, y):
    grid[y][x] = "+"


BEDROOM = [("bed", 0, 0, 1, 2), ("desk", -1, 0, 1, 1), ("closet", -2, 0, 1, 1)]
BATH = [("toilet", 0, 0, 1, 1), ("shower", -1, 0, 1, 1), ("bathroom sink", -2, 0, 1, 1)]
KITCHEN = [("refrigerator", 0, -1, 1, 1), ("cooking area", 1, -1, 2, 1), ("kitchen sink", 3, -1, 1, 1),
           ("toaster", 4, -1, 1, 1)]
COMMON = [("common room sofa", 1, 1, 3, 1), ("common room table", 1, 3, 2, 1)]
MAIN_ROOM = [("bed", 0, 0, 1, 2), ("desk", -1, 0, 1, 1), ("closet", -2, 0, 1, 1), ("refrigerator", 0, -1, 1, 1),
             ("cooking area", 1, -1, 2, 1), ("kitchen sink", 3, -1, 1, 1), ("shelf", -1, -1, 1, 1),
             ("common room table", 3, 2, 2, 1)]

# ---- roads -------------------------------------------------------------------------------
fill(0, 41, W, 3, "=")        # Main street
fill(0, 73, W, 3, "=")        # Lower street
fill(42, 0, 2, 41, "=")       # West lane
fill(96, 0, 2, 41, "=")       # East lane
fill(42, 44, 2, 29, "=")
fill(96, 44, 2, 29, "=")
for x in range(0, W, 7):       # trees along the northern edge
    grid[0][x] = "T"
for y in range(46, 73, 4):     # a row of trees along the park's east lane
    grid[y][40] = "T"

# ---- artist's co-living space ------------------------------------------------------------
s = Sector("artist's co-living space", 2, 2, 38, 37)
walls(2, 2, 38, 37)
people = ["Latoya Williams", "Rajiv Patel", "Abigail Chen", "Francisco Lopez", "Hailey Johnson"]
extra = {"Latoya Williams": [("shelf", 0, -1, 1, 1)], "Rajiv Patel": [("easel", 0, -1, 1, 1), ("guitar", -1, -1, 1, 1)],
         "Abigail Chen": [("computer", -1, -1, 1, 1)], "Francisco Lopez": [("microphone", 0, -1, 1, 1)],
         "Hailey Johnson": [("computer desk", -1, -1, 1, 1)]}
for i, p in enumerate(people):
    x0 = 3 + i * 7
    rw = 6 if i < 4 else 8
    s.arena(f"{p}'s room", x0, 3, rw, 9, "_", BEDROOM + extra[p])
    if i < 4:
        fill(x0 + 6, 3, 1, 9, "#")
    door(x0 + 2, 12)
    s.arena(f"{p}'s bathroom", x0, 29, rw, 9, ":", BATH)
    if i < 4:
        fill(x0 + 6, 29, 1, 9, "#")
    door(x0 + 2, 28)
fill(3, 12, 36, 1, "#")
for i in range(5):
    door(3 + i * 7 + 2, 12)
fill(3, 28, 36, 1, "#")
for i in range(5):
    door(3 + i * 7 + 2, 28)
s.arena("common room", 3, 13, 24, 15, "_", [("common room sofa", 2, 2, 4, 1), ("common room table", 2, 6, 3, 2),
                                                  ("game console", 8, 2, 1, 1), ("piano", -2, 1, 2, 1),
                                                  ("shelf", -1, 5, 1, 1)])
fill(27, 13, 1, 15, "#")
door(27, 20)
s.arena("kitchen", 28, 13, 11, 15, ":", KITCHEN + [("common room table", 3, 6, 3, 2)])
door(39, 20)  # east doors of the kitchen, onto the west lane
door(39, 16)

# ---- Hobbs Cafe --------------------------------------------------------------------------
s = Sector("Hobbs Cafe", 46, 4, 22, 16)
walls(46, 4, 22, 16)
s.arena("cafe", 47, 5, 20, 14, "_", [("behind the cafe counter", 1, 1, 6, 2), ("cafe customer seating", 2, 6, 3, 2),
                                     ("cafe customer seating", 8, 6, 3, 2), ("cafe customer seating", 14, 6, 3, 2),
                                     ("cafe customer seating", 8, 10, 3, 2), ("piano", -2, 1, 2, 1),
                                     ("refrigerator", 8, 0, 1, 1), ("cooking area", 9, 0, 2, 1)])
door(56, 19)
door(57, 19)

# ---- The Rose and Crown Pub --------------------------------------------------------------
s = Sector("The Rose and Crown Pub", 71, 4, 22, 16)
walls(71, 4, 22, 16)
s.arena("pub", 72, 5, 20, 14, "_", [("behind the bar counter", 1, 1, 8, 2), ("bar customer seating", 1, 4, 8, 1),
                                    ("pool table", 12, 3, 3, 2), ("microphone", -2, -2, 1, 1),
                                    ("bar customer seating", 3, 8, 3, 2), ("bar customer seating", 11, 9, 3, 2),
                                    ("shelf", 9, 0, 1, 1)])
door(81, 19)
door(82, 19)

# ---- Harvey Oak Supply Store -------------------------------------------------------------
s = Sector("Harvey Oak Supply Store", 46, 23, 22, 16)
walls(46, 23, 22, 16)
s.arena("supply store", 47, 24, 20, 14, "_", [("behind the supply store counter", 1, 1, 4, 2),
                                              ("supply store counter", 1, 3, 4, 1),
                                              ("supply store product shelf", 8, 1, 1, 8),
                                              ("supply store product shelf", 11, 1, 1, 8),
                                              ("supply store product shelf", 14, 1, 1, 8),
                                              ("supply store product shelf", 17, 1, 1, 8)])
door(56, 38)
door(57, 38)

# ---- The Willows Market and Pharmacy -----------------------------------------------------
s = Sector("The Willows Market and Pharmacy", 71, 23, 22, 16)
walls(71, 23, 22, 16)
s.arena("store", 72, 24, 20, 14, "_", [("behind the grocery counter", 1, 1, 4, 2), ("grocery store counter", 1, 3, 4, 1),
                                       ("grocery store shelf", 7, 1, 1, 7), ("grocery store shelf", 10, 1, 1, 7),
                                       ("behind the pharmacy counter", 15, 1, 4, 2),
                                       ("pharmacy store counter", 15, 3, 4, 1),
                                       ("pharmacy store shelf", 13, 8, 6, 1), ("refrigerator", 7, 10, 4, 1)])
door(81, 38)
door(82, 38)

# ---- Oak Hill College --------------------------------------------------------------------
s = Sector("Oak Hill College", 100, 2, 38, 37)
walls(100, 2, 38, 37)
s.arena("classroom", 101, 3, 18, 22, "_", [("classroom podium", 7, 1, 2, 1), ("blackboard", 4, 0, 8, 1),
                                           ("classroom student seating", 2, 5, 14, 2),
                                           ("classroom student seating", 2, 9, 14, 2),
                                           ("classroom student seating", 2, 13, 14, 2)])
fill(119, 3, 1, 22, "#")
s.arena("library", 120, 3, 17, 22, "_", [("bookshelf", 1, 0, 15, 1), ("bookshelf", 1, 4, 1, 10),
                                         ("bookshelf", -2, 4, 1, 10), ("library table", 5, 6, 6, 2),
                                         ("library sofa", 5, 12, 6, 1), ("computer", 6, 16, 1, 1),
                                         ("computer desk", 7, 16, 3, 1)])
fill(101, 25, 36, 1, "#")
s.arena("hallway", 101, 26, 36, 12, ":", [("shelf", 0, 0, 1, 1), ("harp", 2, 0, 1, 1), ("lifting weight", -3, -1, 2, 1)])
door(110, 25)
door(128, 25)
door(100, 31)
door(100, 32)
door(118, 38)
door(119, 38)

# ---- apartments (five sectors side by side) ----------------------------------------------
apartments = ["Arthur Burton's apartment", "Ryan Park's apartment", "Isabella Rodriguez's apartment",
              "Giorgio Rossi's apartment", "Carlos Gomez's apartment"]
for i, name in enumerate(apartments):
    x0 = 46 + i * 10
    s = Sector(name, x0, 46, 10, 14)
    walls(x0, 46, 10, 14)
    s.arena("main room", x0 + 1, 47, 8, 8, "_", MAIN_ROOM)
    fill(x0 + 1, 55, 8, 1, "#")
    s.arena("bathroom", x0 + 1, 56, 8, 3, ":", BATH)
    door(x0 + 4, 46)
    door(x0 + 6, 55)

# ---- Johnson Park ------------------------------------------------------------------------
s = Sector("Johnson Park", 2, 46, 36, 26)
fill(2, 46, 36, 26, ".")
s.arena("park", 2, 46, 36, 26, ".", [("park garden", 2, 2, 6, 3), ("park garden", -8, 2, 6, 3),
                                    ("garden chair", 14, 4, 1, 1), ("garden chair", 18, 4, 1, 1),
                                    ("park garden", 2, -5, 6, 3), ("lifting weight", -6, -3, 2, 1)])
fill(12, 53, 12, 8, "~")    # the pond
fill(3, 58, 34, 1, "=")     # a path across the park
fill(19, 47, 1, 24, "=")
for x, y in [(5, 52), (9, 64), (29, 52), (33, 64), (26, 66), (12, 69)]:
    grid[y][x] = "T"

# ---- Dorm for Oak Hill College -----------------------------------------------------------
s = Sector("Dorm for Oak Hill College", 100, 46, 38, 26)
walls(100, 46, 38, 17)
students = ["Klaus Mueller", "Maria Lopez", "Ayesha Khan", "Wolfgang Schulz"]
for i, p in enumerate(students):
    x0 = 101 + i * 9
    s.arena(f"{p}'s room", x0, 47, 8 if i < 3 else 9, 6, "_", BEDROOM + [("computer", 0, -1, 1, 1)])
    if i < 3:
        fill(x0 + 8, 47, 1, 6, "#")
    door(x0 + 3, 53)
fill(101, 53, 36, 1, "#")
for i in range(4):
    door(101 + i * 9 + 3, 53)
s.arena("common room", 101, 54, 18, 8, "_", COMMON + [("game console", 8, 1, 1, 1), ("shelf", -1, 0, 1, 1)])
fill(119, 54, 1, 8, "#")
s.arena("kitchen", 120, 54, 7, 8, ":", KITCHEN[:4] + [("toaster", 0, -2, 1, 1)])
fill(127, 54, 1, 8, "#")
s.arena("man's bathroom", 128, 54, 9, 3, ":", BATH)
fill(128, 57, 9, 1, "#")
s.arena("woman's bathroom", 128, 58, 9, 4, ":", BATH)
door(119, 58)
door(127, 55)
door(127, 60)
door(109, 62)
door(110, 62)
s.arena("garden", 100, 64, 38, 8, ".", [("dorm garden", 2, 1, 8, 2), ("dorm garden", 14, 1, 8, 2),
                                       ("garden chair", 26, 2, 1, 1), ("dorm garden", -9, 4, 6, 2)])


# ---- houses on the lower street ----------------------------------------------------------
def family_house(name, x0, rooms, garden_kind="house garden"):
    """Two bedrooms (or more) on top, common room, kitchen and bathroom below; a garden beside."""
    s = Sector(name, x0, 78, 22, 21)
    walls(x0, 78, 22, 14)
    n = len(rooms)
    rw = (20 - (n - 1)) // n
    for i, (room, objs) in enumerate(rooms):
        rx = x0 + 1 + i * (rw + 1)
        w = rw if i < n - 1 else (x0 + 21 - rx)
        s.arena(room, rx, 79, w, 5, "_", objs)
        if i < n - 1:
            fill(rx + w, 79, 1, 5, "#")
        door(rx + 1, 84)
    fill(x0 + 1, 84, 20, 1, "#")
    for i in range(n):
        rx = x0 + 1 + i * (rw + 1)
        door(rx + 1, 84)
    s.arena("common room", x0 + 1, 85, 10, 6, "_", COMMON)
    fill(x0 + 11, 85, 1, 6, "#")
    s.arena("kitchen", x0 + 12, 85, 9, 3, ":", KITCHEN)
    fill(x0 + 12, 88, 9, 1, "#")
    s.arena("bathroom", x0 + 12, 89, 9, 2, ":", [("toilet", 3, 0, 1, 1), ("shower", -1, 0, 1, 1),
                                                ("bathroom sink", 5, 0, 1, 1)])
    door(x0 + 11, 86)
    door(x0 + 11, 89)
    door(x0 + 5, 78)   # front door to the lower street
    s.arena("garden", x0, 93, 22, 6, ".", [(garden_kind, 1, 1, 6, 2), ("garden chair", 10, 2, 1, 1),
                                          (garden_kind, -7, 1, 6, 2)])
    door(x0 + 5, 91)   # back door to the garden


family_house("Lin family's house", 2, [("Mei and John Lin's bedroom", BEDROOM + [("bookshelf", 3, -1, 2, 1)]),
                                       ("Eddy Lin's bedroom", BEDROOM + [("piano", 3, -1, 2, 1)])])
family_house("Moreno family's house", 26, [("Tom and Jane Moreno's bedroom", BEDROOM),
                                           ("empty bedroom", [("bed", 0, 0, 1, 2)])])
family_house("Tamara Taylor and Carmen Ortiz's house", 50,
             [("Tamara Taylor's room", BEDROOM + [("computer desk", 3, -1, 1, 1)]),
              ("Carmen Ortiz's room", BEDROOM)])


def small_house(name, x0, extras):
    s = Sector(name, x0, 78, 14, 21)
    walls(x0, 78, 14, 14)
    s.arena("main room", x0 + 1, 79, 12, 8, "_", MAIN_ROOM + extras)
    fill(x0 + 1, 87, 12, 1, "#")
    s.arena("bathroom", x0 + 1, 88, 12, 3, ":", BATH)
    door(x0 + 3, 87)
    door(x0 + 6, 78)
    s.arena("garden", x0, 93, 14, 6, ".", [("house garden", 1, 1, 5, 2), ("garden chair", 8, 2, 1, 1)])
    door(x0 + 9, 91)


small_house("Moore family's house", 76, [("easel", 7, 2, 1, 1)])
small_house("Adam Smith's house", 92, [("bookshelf", 7, 2, 3, 1)])
small_house("Yuriko Yamamoto's house", 108, [("computer desk", 7, 2, 2, 1), ("computer", 9, 2, 1, 1)])
fill(124, 78, 14, 20, ".")
for x in range(125, 138, 3):
    grid[80][x] = "T"
    grid[96][x] = "T"
fill(128, 84, 6, 6, "~")  # a second pond in the meadow

# footpaths from front doors to the lower street (row 75) and into the gardens are implicit:
# the front doors are on row 78 and rows 76-77 are grass, which is walkable.

# ---- output ------------------------------------------------------------------------------
BLOCKING = set("#~T")
WALKABLE_KINDS = {"bar customer seating", "behind the bar counter", "behind the cafe counter", "cafe customer seating",
                  "classroom student seating", "behind the pharmacy counter", "behind the grocery counter",
                  "behind the supply store counter", "dorm garden", "house garden", "park garden"}


def check():
    blocked = [[grid[y][x] in BLOCKING for x in range(W)] for y in range(H)]
    for s in sectors:
        for _, _, objs in s.arenas:
            for kind, (ox, oy, ow, oh) in objs:
                if kind not in WALKABLE_KINDS:
                    for yy in range(oy, oy + oh):
                        for xx in range(ox, ox + ow):
                            blocked[yy][xx] = True
    for s in sectors:
        for _, _, objs in s.arenas:
            for kind, (ox, oy, ow, oh) in objs:
                for yy in range(oy, oy + oh):
                    for xx in range(ox, ox + ow):
                        if grid[yy][xx] in BLOCKING:
                            return [f"{kind} stands on '{grid[yy][xx]}' at ({xx}, {yy})"]
    start = (0, 42)
    seen = {start}
    q = deque([start])
    while q:
        x, y = q.popleft()
        for nx, ny in ((x + 1, y), (x - 1, y), (x, y + 1), (x, y - 1)):
            if 0 <= nx < W and 0 <= ny < H and (nx, ny) not in seen and not blocked[ny][nx]:
                seen.add((nx, ny))
                q.append((nx, ny))
    bad = []
    for s in sectors:
        for name, (ax, ay, aw, ah), _ in s.arenas:
            if not any((xx, yy) in seen for yy in range(ay, ay + ah) for xx in range(ax, ax + aw)):
                bad.append(f"{s.name}:{name}")
    return bad


def rect(r):
    return "(%d, %d, %d, %d)" % r


def write(path):
    out = []
    out.append("// Smallville, the town of Park et al.'s Generative Agents, drawn for Simulacra.")
    out.append("// Format: maps/README.md. Coordinates are (x, y) with y growing downwards; a rect is (x, y, w, h).")
    out.append("(")
    out.append(f'    world: "{WORLD}",')
    out.append(f"    width: {W},")
    out.append(f"    height: {H},")
    out.append("    legend: {")
    for ch, t in [(".", "Grass"), ("=", "Path"), ("~", "Water"), ("T", "Tree"), ("#", "Wall"), ("+", "Door"),
                  ("_", "Floor"), (":", "Tiles")]:
        out.append(f"        '{ch}': {t},")
    out.append("    },")
    out.append("    terrain: [")
    for row in grid:
        out.append('        "' + "".join(row) + '",')
    out.append("    ],")
    out.append("    sectors: [")
    for s in sectors:
        out.append(f'        (name: "{s.name}", rect: {rect(s.rect)}, arenas: [')
        for name, r, objs in s.arenas:
            out.append(f'            (name: "{name}", rect: {rect(r)}, objects: [')
            for kind, orc in objs:
                out.append(f'                (kind: "{kind}", rect: {rect(orc)}),')
            out.append("            ]),")
        out.append("        ]),")
    out.append("    ],")
    out.append(")")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


bad = check()
if bad:
    print("unreachable arenas:", bad, file=sys.stderr)
    sys.exit(1)
write(sys.argv[1] if len(sys.argv) > 1 else "maps/smallville.ron")
print("sectors:", len(sectors), "arenas:", sum(len(s.arenas) for s in sectors))
