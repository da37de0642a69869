#pragma once
// A small bitmap font for plot text: 5x7 capitals and digits, lowercase with descenders
// (cells are 9 rows: 7 above the baseline, 2 below), common punctuation. Characters
// without a glyph draw as a hollow box so that missing ones show.
#include <array>
#include <cstdint>

namespace wick::font {

constexpr int kGlyphWidth = 5;
constexpr int kGlyphHeight = 9;
constexpr int kAdvance = 6;  // glyph width plus one column of spacing

// Rows top to bottom; bit 4 is the leftmost column.
using Glyph = std::array<uint8_t, kGlyphHeight>;
Glyph glyph(char c);

}  // namespace wick::font
