// The C++ twin's Winograd convolution (Stage::winograd): a 3x3 convolution at stride 1 as
// Winograd's F(2x2, 3x3). Each 2x2 tile of output pixels is A^T [U (.) V] A, where V = B^T d B
// transforms the tile's 4x4 input patch d of each input channel, U = G g G^T each filter g (the
// plan's weight blocks), and (.) is a sum over input channels of elementwise products: 16 products
// per channel pair and tile where the direct sum has 36.
#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

namespace {

// The scratch an item keeps on the stack (transformed inputs, the tiles' products, four padded
// input rows): at most this many bytes, which leaves a thread's stack (2 MiB or more under glibc)
// room to spare.
constexpr int64_t kWinogradScratchBytes = 192 * 1024;
constexpr int64_t kTileLanes = 8;  // the widest vector the form takes (32 bytes under AVX-512 too)

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

}  // namespace

// An item is a row of 2x2 output tiles (two output rows), or a chunk of one where the scratch
// would not hold the whole row. For each input channel it pads the item's four input rows into
// `xp` and transforms them, a vector of tiles at a time (the tiles' columns are the even and odd
// lanes of two loads), into V[16][C][Tp]: place p of every tile's 4x4 V for channel c is row
// (p, c). Then for each block of 16 output channels and each place, a register tile of tiles
// sums U's vector of channels times V over the input channels (the channel tiles' loop, with one
// tap), into P[16][Tc][16]; the output transform of P, with the bias and the stage's epilogue,
// stores each pixel's 16 channels.
std::string Writer::body_conv_winograd(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  const ValueId x = n.inputs[0], u_blocks = *s.weight_blocks, out = s.output;
  const auto& ws = type(n.inputs[1]).shape;
  const int64_t M = ws[0].value(), C = ws[1].value();
  auto win = window_of(g_, n, {3, 3});
  const int64_t ph = win[0].pad_begin, pw = win[1].pad_begin;
  const int64_t H = type(x).shape[2].value(), W = type(x).shape[3].value();
  const int64_t OH = type(out).shape[2].value(), OW = type(out).shape[3].value();
  const int64_t T = (OW + 1) / 2, TR = (OH + 1) / 2, blocks = M / kWeightBlock;
  // Tiles an item takes: the row's, or as many as the scratch holds (at least a vector's: the
  // plan takes at most kWinogradMaxChannels channels).
  auto scratch = [&](int64_t tiles) {
    const int64_t tp = round_up(tiles, kTileLanes);
    return 4 * (16 * (C * tp + 16) + 16 * tiles * kWeightBlock);
  };
  int64_t most = T;
  while (most > kTileLanes && scratch(most) > kWinogradScratchBytes)
    most = std::max(kTileLanes, most - kTileLanes);
  const int64_t chunks = (T + most - 1) / most, Tc = (T + chunks - 1) / chunks;
  const int64_t Tp = round_up(Tc, kTileLanes);
  // V's place p at V + p * plane: a cache line more than its C * Tp floats, so that the 16 places
  // a vector of tiles stores (strides of 4 KiB multiples otherwise) fall in different sets of
  // the L1 cache.
  const int64_t plane = C * Tp + 16;
  const std::string B = std::to_string(kWeightBlock);
  Index r = decompose("i", {dim(out, 0), std::to_string(TR), std::to_string(chunks)},
                      {dim_is_one(out, 0), TR == 1, chunks == 1});
  const std::string img = r[0], tr = r[1];
  line(fmt::format("const int64_t t_first = {} * {};  // the item's first tile", r[2], Tc));
  line(fmt::format("const int64_t oh0 = {} * 2;", tr));
  line(fmt::format("const float* xg = {} + {} * {};", ptr(x), img, C * H * W));
  line(fmt::format("const float* ub = {};", ptr(u_blocks)));
  line(fmt::format("alignas(64) float V[{}];", 16 * plane));
  line(fmt::format("alignas(64) float P[{}];", 16 * Tc * kWeightBlock));
  // Input column col0 + 2 t + k is element k of tile t's patches.
  line(fmt::format("const int64_t col0 = t_first * 2 - {};", pw));
  vector_variants(
      "float",
      [&](int lanes, int accumulators) {
        const int64_t nv = kWeightBlock / lanes;  // vectors per tile's channels
        // Input transform. Each vector of tiles loads its four input rows' columns directly
        // where they lie inside the row, and through masks (or element by element) at its edges.
        line(
            fmt::format("int64_t in_lo = col0 < 0 ? (1 - col0) / 2 : 0;  // the first inner tile"));
        line(fmt::format("in_lo = (in_lo + {} - 1) / {} * {};", lanes, lanes, lanes));
        line(fmt::format("if (in_lo > {}) in_lo = {};", Tp, Tp));
        line(fmt::format("const int64_t room = {} - col0;  // 2 t0 may reach this",
                         W - 2 - 2 * lanes));
        line(fmt::format("int64_t in_hi = room < 0 ? 0 : (room / 2 / {} + 1) * {};", lanes, lanes));
        line(fmt::format("if (in_hi > {}) in_hi = {};", Tp, Tp));
        line("if (in_hi < in_lo) in_hi = in_lo;");
        open(fmt::format("for (int64_t c = 0; c < {}; ++c)", C));
        for (int row = 0; row < 4; ++row) {
          line(fmt::format("const int64_t ih{} = oh0 - {} + {};", row, ph, row));
          line(fmt::format(
              "const float* x{} = ih{} >= 0 && ih{} < {} ? xg + (c * {} + ih{}) * {} : 0;", row,
              row, row, H, H, row, W));
        }
        // Row `row`'s d_k = x[col0 + 2 t + k] (k = 0..3) and h = d B: (d0 - d2, d1 + d2,
        // d2 - d1, d1 - d3), for the vector of tiles from t0; zero where the row is padding.
        auto row_transform = [&](int row, bool edge) {
          const std::string xr = fmt::format("x{}", row);
          for (int k = 0; k < 4; ++k) line(fmt::format("vec h{}{} = {{}};", row, k));
          open(fmt::format("if ({})", xr));
          line(edge ? "#if defined(EQF_EVEN_LANES) && defined(EQF_MASKED_LOADS)"
                    : "#if defined(EQF_EVEN_LANES)");
          const int64_t offsets[4] = {0, lanes, 2, 2 + lanes};
          for (int k = 0; k < 4; ++k) {
            const std::string at = fmt::format("col0 + 2 * t0 + {}", offsets[k]);
            line(edge ? fmt::format("vec l{}; eqf_load_lanes(l{}, {}, {}, {}, {});", k, k, xr, at,
                                    W, lanes)
                      : fmt::format("vec l{}; memcpy(&l{}, {} + {}, sizeof(vec));", k, k, xr, at));
          }
          line("const vec d0 = eqf_even_lanes(l0, l1), d1 = eqf_odd_lanes(l0, l1);");
          line("const vec d2 = eqf_even_lanes(l2, l3), d3 = eqf_odd_lanes(l2, l3);");
          line("#else");
          for (int k = 0; k < 4; ++k) {
            std::string elements;
            for (int u = 0; u < lanes; ++u) {
              const std::string col = fmt::format("col0 + 2 * t0 + {}", 2 * u + k);
              elements +=
                  (u ? ", " : "") +
                  (edge ? fmt::format("{} >= 0 && {} < {} ? {}[{}] : 0.0f", col, col, W, xr, col)
                        : fmt::format("{}[{}]", xr, col));
            }
            line(fmt::format("const vec d{} = {{{}}};", k, elements));
          }
          line("#endif");
          line(fmt::format("h{}0 = d0 - d2;", row));
          line(fmt::format("h{}1 = d1 + d2;", row));
          line(fmt::format("h{}2 = d2 - d1;", row));
          line(fmt::format("h{}3 = d1 - d3;", row));
          close();
        };
        auto tiles_transform = [&](const std::string& from, const std::string& to, bool edge) {
          open(fmt::format("for (int64_t t0 = {}; t0 < {}; t0 += {})", from, to, lanes));
          for (int row = 0; row < 4; ++row) row_transform(row, edge);
          // V = B^T h down the four rows, stored at V[4a + b][c][t].
          for (int b = 0; b < 4; ++b) {
            const std::string v[4] = {
                fmt::format("h0{} - h2{}", b, b), fmt::format("h1{} + h2{}", b, b),
                fmt::format("h2{} - h1{}", b, b), fmt::format("h1{} - h3{}", b, b)};
            for (int a = 0; a < 4; ++a)
              line(fmt::format(
                  "{{ const vec v = {}; memcpy(V + {} + c * {} + t0, &v, sizeof(vec)); }}", v[a],
                  (4 * a + b) * plane, Tp));
          }
          close();
        };
        tiles_transform("0", "in_lo", true);
        tiles_transform("in_lo", "in_hi", false);
        tiles_transform("in_hi", std::to_string(Tp), true);
        close();

        // Products, a block of output channels at a time.
        open(fmt::format("for (int64_t mb = 0; mb < {}; ++mb)", blocks));
        line(fmt::format("const int64_t m0 = mb * {};", B));
        // Accumulators, U's vectors of channels and the broadcast in the vector registers, two
        // spare (as the channel tiles).
        const int64_t registers = accumulators == kTileAccumulatorsAvx512 ? 32 : 16;
        const int64_t fit = std::max<int64_t>(1, (registers - nv - 3) / nv);
        const int64_t steps = (Tc + fit - 1) / fit, tp = (Tc + steps - 1) / steps;
        open("for (int p = 0; p < 16; ++p)");
        line(fmt::format("const float* u = ub + (mb * 16 + p) * {};", C * kWeightBlock));
        line(fmt::format("const float* vp = V + p * {};", plane));
        line(fmt::format("float* pp = P + p * {};", Tc * kWeightBlock));
        // `size` tiles from t0 (a loop's, or `first`).
        auto tile = [&](int64_t first, int64_t size) {
          const std::string t0 = first < 0 ? "t0" : std::to_string(first);
          for (int64_t j = 0; j < size; ++j)
            for (int64_t v = 0; v < nv; ++v) line(fmt::format("vec a{}_{} = {{}};", j, v));
          open(fmt::format("for (int64_t c = 0; c < {}; ++c)", C));
          for (int64_t v = 0; v < nv; ++v) {
            line(fmt::format("vec w{}; memcpy(&w{}, u + c * {} + {}, sizeof(vec));", v, v, B,
                             v * lanes));
            line(fmt::format("EQF_IN_REGISTER(w{});", v));
          }
          line(fmt::format("const float* vc = vp + c * {} + {};", Tp, t0));
          for (int64_t j = 0; j < size; ++j) {
            std::string sums;
            for (int64_t v = 0; v < nv; ++v) sums += fmt::format(" a{}_{} += q * w{};", j, v, v);
            line(fmt::format("{{ const float q = vc[{}];{} }}", j, sums));
          }
          close();
          for (int64_t j = 0; j < size; ++j)
            for (int64_t v = 0; v < nv; ++v)
              line(fmt::format("memcpy(pp + ({} + {}) * {} + {}, &a{}_{}, sizeof(vec));", t0, j, B,
                               v * lanes, j, v));
        };
        const int64_t full = (steps - 1) * tp;  // the tiles of the steps before the last
        if (steps > 2) {
          open(fmt::format("for (int64_t t0 = 0; t0 < {}; t0 += {})", full, tp));
          tile(-1, tp);
          close();
        } else if (steps == 2) {
          open("");
          tile(0, tp);
          close();
        }
        open("");
        tile(full, Tc - full);
        close();
        close();

        // Output transform: y = A^T P A, A^T's rows (1, 1, 1, 0) and (0, 1, -1, -1).
        std::vector<std::string> bias(size_t(kWeightBlock), "0.0f");
        if (n.inputs.size() > 2 && n.inputs[2] != ir::kNoValue)
          for (int64_t k = 0; k < kWeightBlock; ++k) {
            bias[size_t(k)] = fresh("b");
            line(fmt::format("const float {} = (float){};", bias[size_t(k)],
                             elem(n.inputs[2], Index{iadd("m0", std::to_string(k))})));
          }
        for (int64_t v = 0; v < nv; ++v) {
          std::string lanes_of;
          for (int u = 0; u < lanes; ++u) lanes_of += (u ? ", " : "") + bias[size_t(v * lanes + u)];
          line(fmt::format("const vec bv{} = {{{}}};", v, lanes_of));
        }
        open(fmt::format("for (int64_t t = 0; t < {}; ++t)", Tc));
        line("const int64_t ow0 = (t_first + t) * 2;");
        line(
            fmt::format("float y[4][{}];  // the tile's pixels (0, 0), (0, 1), (1, 0), (1, 1)", B));
        for (int64_t v = 0; v < nv; ++v) {
          open("");
          for (int p = 0; p < 16; ++p)
            line(fmt::format("vec z{}; memcpy(&z{}, P + ({} * {} + t) * {} + {}, sizeof(vec));", p,
                             p, p, Tc, B, v * lanes));
          for (int b = 0; b < 4; ++b)
            line(fmt::format("const vec s0{} = z{} + z{} + z{}, s1{} = z{} - z{} - z{};", b, b,
                             4 + b, 8 + b, b, 4 + b, 8 + b, 12 + b));
          const std::string y[4] = {"s00 + s01 + s02", "s01 - s02 - s03", "s10 + s11 + s12",
                                    "s11 - s12 - s13"};
          for (int k = 0; k < 4; ++k)
            line(fmt::format("{{ const vec e = {} + bv{}; memcpy(y[{}] + {}, &e, sizeof(vec)); }}",
                             y[k], v, k, v * lanes));
          close();
        }
        // A pixel past the output's last row or column (odd sizes, a ragged last chunk) is not
        // stored.
        const bool ragged = chunks * Tc != T;
        for (int k = 0; k < 4; ++k) {
          const int a = k / 2, b = k % 2;
          std::vector<std::string> checks;
          if (a == 1 && OH % 2 == 1) checks.push_back(fmt::format("oh0 + 1 < {}", OH));
          if (ragged || (b == 1 && OW % 2 == 1))
            checks.push_back(fmt::format("ow0 + {} < {}", b, OW));
          std::string cond;
          for (const std::string& c : checks) cond += (cond.empty() ? "" : " && ") + c;
          open(cond.empty() ? std::string("") : "if (" + cond + ")");
          const std::string e = fresh("u");
          open(fmt::format("for (int {} = 0; {} < {}; ++{})", e, e, B, e));
          Index at = {img, fmt::format("(m0 + {})", e), fmt::format("(oh0 + {})", a),
                      fmt::format("(ow0 + {})", b)};
          store_output(out, linear(out, at), at, fmt::format("y[{}][{}]", k, e));
          close();
          close();
        }
        close();
        close();
      },
      std::nullopt, /*wide=*/false);
  return fmt::format("{} * {} * {}", dim(out, 0), TR, chunks);
}

}  // namespace eqfuse::codegen::detail
