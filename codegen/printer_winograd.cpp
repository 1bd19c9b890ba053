// The C++ twin's Winograd convolution (Stage::winograd): a 3x3 convolution at stride 1 as
// Winograd's F(m x m, 3 x 3) (winograd.h), m = 2 or 4. Each m x m tile of output pixels is
// A^T [U (.) V] A, where V = B^T d B transforms the tile's alpha x alpha input patch d of each
// input channel (alpha = m + 2), U = G g G^T each filter g (the plan's weight blocks), and (.) is a
// sum over input channels of elementwise products: alpha^2 products per channel pair and tile where
// the direct sum has 9 m^2.
#include "codegen/printer_writer.h"
#include "codegen/winograd.h"

namespace eqfuse::codegen::detail {

namespace {

// The scratch an item keeps on the stack (transformed inputs and the tiles' products): at most
// this many bytes, which leaves a thread's stack (2 MiB or more under glibc) room to spare; a host
// thread with a smaller one (musl's 128 KiB) would overflow.
constexpr int64_t kWinogradScratchBytes = 192 * 1024;
// V's rows hold a multiple of this many tiles: the input transform's vectors of tiles are 8 wide,
// or 16 under AVX-512 where that adds no padding tile (winograd_tile_lanes).
constexpr int64_t kTileLanes = 8;

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

// Tiles in a vector of the input transform, for `lanes` floats in the target's vectors and `tp`
// tiles in V's rows: 16 where the target's vectors hold them and tp is a multiple of 16, else at
// most kTileLanes (a row of 7 tiles would transform 9 padding tiles in a vector of 16).
int64_t winograd_tile_lanes(int64_t lanes, int64_t tp) {
  return lanes >= 16 && tp % 16 == 0 ? 16 : std::min(lanes, kTileLanes);
}

// sum_k c[k] * terms[k] over the nonzero coefficients, as printed code ("d0 - 4.0f * d2").
std::string combination(const double* c, const std::vector<std::string>& terms) {
  std::string sum;
  for (size_t k = 0; k < terms.size(); ++k) {
    if (c[k] == 0) continue;
    std::string literal = fmt::format("{:.9g}", std::abs(c[k]));
    if (literal.find_first_of(".e") == std::string::npos) literal += ".0";
    const std::string term = std::abs(c[k]) == 1 ? terms[k] : literal + "f * " + terms[k];
    sum += sum.empty() ? (c[k] < 0 ? "-" : "") + term : (c[k] < 0 ? " - " : " + ") + term;
  }
  return sum.empty() ? "0.0f" : sum;
}

}  // namespace

// An item is a row of m x m output tiles (m output rows), or a chunk of one where the scratch
// would not hold the whole row. For each input channel it transforms the item's alpha input rows
// a vector of tiles at a time (a tile's columns are lanes of every m-th element, picked from
// contiguous loads by even/odd shuffles) into V[alpha^2][C][Tp]: place p of every tile's V for
// channel c is row (p, c). Then for each block of 16 output channels and each place, a register
// tile of tiles sums U's vector of channels times V over the input channels (the channel tiles'
// loop, with one tap), into P[alpha^2][Tc][16]; the output transform of P, with the bias and the
// stage's epilogue, stores each pixel's 16 channels.
std::string Writer::body_conv_winograd(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  const WinogradTransform& f = winograd_transform(s.winograd);
  const int64_t m = f.m, alpha = f.alpha, places = alpha * alpha;
  const ValueId x = n.inputs[0], u_blocks = *s.weight_blocks, out = s.output;
  const auto& ws = type(n.inputs[1]).shape;
  const int64_t M = ws[0].value(), C = ws[1].value();
  auto win = window_of(g_, n, {3, 3});
  const int64_t ph = win[0].pad_begin, pw = win[1].pad_begin;
  const int64_t H = type(x).shape[2].value(), W = type(x).shape[3].value();
  const int64_t OH = type(out).shape[2].value(), OW = type(out).shape[3].value();
  const int64_t T = (OW + m - 1) / m, TR = (OH + m - 1) / m, blocks = M / kWeightBlock;
  // V's place p at V + p * plane: a cache line more than its C * Tp floats, so that the places a
  // vector of tiles stores (strides of 4 KiB multiples otherwise) fall in different sets of the
  // L1 cache.
  auto plane_of = [&](int64_t tp) { return C * tp + 16; };
  // Tiles an item takes: the row's, or as many as the scratch holds (at least a vector's: the
  // plan takes at most kWinogradMaxChannels channels).
  auto scratch = [&](int64_t tiles) {
    return 4 * places * (plane_of(round_up(tiles, kTileLanes)) + tiles * kWeightBlock);
  };
  int64_t most = T;
  while (most > kTileLanes && scratch(most) > kWinogradScratchBytes)
    most = std::max(kTileLanes, most - kTileLanes);
  if (scratch(most) > kWinogradScratchBytes)
    throw Error(fmt::format("codegen: Conv '{}': a Winograd item of {} channels needs {} bytes of "
                            "scratch (the plan's channel limit and the printer's budget disagree)",
                            n.name, C, scratch(most)),
                Error::Kind::Internal);
  const int64_t chunks = (T + most - 1) / most, Tc = (T + chunks - 1) / chunks;
  const int64_t Tp = round_up(Tc, kTileLanes), plane = plane_of(Tp);
  const std::string B = std::to_string(kWeightBlock);

  Index r = decompose("i", {dim(out, 0), std::to_string(TR), std::to_string(chunks)},
                      {dim_is_one(out, 0), TR == 1, chunks == 1});
  const std::string img = r[0];
  line(fmt::format("const int64_t t_first = {} * {};  // the item's first tile", r[2], Tc));
  line(fmt::format("const int64_t oh0 = {} * {};", r[1], m));
  line(fmt::format("const float* xg = {} + {} * {};", ptr(x), img, C * H * W));
  line(fmt::format("const float* ub = {};", ptr(u_blocks)));
  line(fmt::format("alignas(64) float V[{}];", places * plane));
  line(fmt::format("alignas(64) float P[{}];", places * Tc * kWeightBlock));
  // Input column col0 + m t + k is element k of tile t's patches.
  line(fmt::format("const int64_t col0 = t_first * {} - {};", m, pw));
  vector_variants("float", [&](int lanes, int accumulators) {
    const int64_t nv = kWeightBlock / lanes;  // vectors per tile's channels
    // Input transform, `tl` tiles a vector (tvec). A vector of tiles loads its input rows' columns
    // directly where they lie inside the row, and through masks (or element by element) at its
    // edges; it reads two groups of m vectors, from col0 + m t0 and from col0 + m t0 + m.
    const int64_t tl = winograd_tile_lanes(lanes, Tp);
    if (tl == lanes)
      line("typedef vec tvec;");
    else
      line(fmt::format("typedef float tvec __attribute__((vector_size({})));", 4 * tl));
    line(fmt::format("int64_t in_lo = col0 < 0 ? ({} - 1 - col0) / {} : 0;  // inner tiles", m, m));
    line(fmt::format("in_lo = (in_lo + {} - 1) / {} * {};", tl, tl, tl));
    line(fmt::format("if (in_lo > {}) in_lo = {};", Tp, Tp));
    line(
        fmt::format("const int64_t room = {} - col0;  // {} t0 may reach this", W - m - m * tl, m));
    line(fmt::format("int64_t in_hi = room < 0 ? 0 : (room / {} + 1) * {};", m * tl, tl));
    line(fmt::format("if (in_hi > {}) in_hi = {};", Tp, Tp));
    line("if (in_hi < in_lo) in_hi = in_lo;");
    open(fmt::format("for (int64_t c = 0; c < {}; ++c)", C));
    for (int64_t k = 0; k < alpha; ++k) {
      line(fmt::format("const int64_t ih{} = oh0 - {} + {};", k, ph, k));
      line(fmt::format("const float* x{} = ih{} >= 0 && ih{} < {} ? xg + (c * {} + ih{}) * {} : 0;",
                       k, k, k, H, H, k, W));
    }
    // Row k's d_j = x[col0 + m t + j] (j < alpha) for the vector of tiles from t0, and its
    // h = d B; zero where the row is padding.
    auto row_transform = [&](int64_t k, bool edge) {
      std::vector<std::string> d, h;
      for (int64_t j = 0; j < alpha; ++j) {
        d.push_back(fmt::format("d{}", j));
        h.push_back(fmt::format("h{}_{}", k, j));
        line(fmt::format("tvec {} = {{}};", h.back()));
      }
      open(fmt::format("if (x{})", k));
      if (edge) line("#if defined(EQF_MASKED_LOADS)");
      // d_j is lane j % m of every m-th element from load group j / m (m vectors from
      // col0 + m t0 + m (j / m)): even or odd lanes of pairs, twice for m = 4.
      for (int64_t q = 0; q * m < alpha; ++q) {
        for (int64_t v = 0; v < m; ++v) {
          const std::string at = fmt::format("col0 + {} * t0 + {}", m, m * q + v * tl);
          line(edge ? fmt::format("tvec l{}_{}; eqf_load_lanes(l{}_{}, x{}, {}, {}, {});", q, v, q,
                                  v, k, at, W, tl)
                    : fmt::format("tvec l{}_{}; memcpy(&l{}_{}, x{} + {}, sizeof(tvec));", q, v, q,
                                  v, k, at));
        }
        const int64_t picks = std::min(m, alpha - m * q);
        if (m == 2) {
          for (int64_t j = 0; j < picks; ++j)
            line(fmt::format("const tvec d{} = eqf_{}_lanes(l{}_0, l{}_1);", m * q + j,
                             j ? "odd" : "even", q, q));
        } else {
          line(
              fmt::format("const tvec e{}a = eqf_even_lanes(l{}_0, l{}_1), e{}b = "
                          "eqf_even_lanes(l{}_2, l{}_3);",
                          q, q, q, q, q, q));
          line(
              fmt::format("const tvec o{}a = eqf_odd_lanes(l{}_0, l{}_1), o{}b = "
                          "eqf_odd_lanes(l{}_2, l{}_3);",
                          q, q, q, q, q, q));
          const char* from[4] = {"e", "o", "e", "o"};
          for (int64_t j = 0; j < picks; ++j)
            line(fmt::format("const tvec d{} = eqf_{}_lanes({}{}a, {}{}b);", m * q + j,
                             j < 2 ? "even" : "odd", from[j], q, from[j], q));
        }
      }
      if (edge) {
        line("#else");
        for (int64_t j = 0; j < alpha; ++j) {
          std::string elements;
          for (int u = 0; u < tl; ++u) {
            const std::string col = fmt::format("col0 + {} * (t0 + {}) + {}", m, u, j);
            elements += fmt::format("{}{} >= 0 && {} < {} ? x{}[{}] : 0.0f", u ? ", " : "", col,
                                    col, W, k, col);
          }
          line(fmt::format("const tvec d{} = {{{}}};", j, elements));
        }
        line("#endif");
      }
      for (int64_t j = 0; j < alpha; ++j)
        line(fmt::format("{} = {};", h[size_t(j)], combination(f.BT[j], d)));
      close();
    };
    auto tiles_transform = [&](const std::string& from, const std::string& to, bool edge) {
      open(fmt::format("for (int64_t t0 = {}; t0 < {}; t0 += {})", from, to, tl));
      for (int64_t k = 0; k < alpha; ++k) row_transform(k, edge);
      // V = B^T h down the rows, stored at V[alpha i + j][c][t].
      for (int64_t j = 0; j < alpha; ++j) {
        std::vector<std::string> column;
        for (int64_t k = 0; k < alpha; ++k) column.push_back(fmt::format("h{}_{}", k, j));
        for (int64_t i = 0; i < alpha; ++i)
          line(fmt::format(
              "{{ const tvec v = {}; memcpy(V + {} + c * {} + t0, &v, sizeof(tvec)); }}",
              combination(f.BT[i], column), (alpha * i + j) * plane, Tp));
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
    const int64_t fit = channel_tile_width(accumulators, nv);
    const int64_t steps = (Tc + fit - 1) / fit, tp = (Tc + steps - 1) / steps;
    open(fmt::format("for (int p = 0; p < {}; ++p)", places));
    line(fmt::format("const float* u = ub + (mb * {} + p) * {};", places, C * kWeightBlock));
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

    // Output transform: y = A^T P A.
    block_bias_vectors(block_bias(n, kWeightBlock), lanes, 0, size_t(kWeightBlock));
    open(fmt::format("for (int64_t t = 0; t < {}; ++t)", Tc));
    line(fmt::format("const int64_t ow0 = (t_first + t) * {};", m));
    line(fmt::format("float y[{}][{}];  // the tile's pixels, row by row", m * m, B));
    for (int64_t v = 0; v < nv; ++v) {
      open("");
      for (int64_t p = 0; p < places; ++p)
        line(fmt::format("vec z{}; memcpy(&z{}, P + ({} * {} + t) * {} + {}, sizeof(vec));", p, p,
                         p, Tc, B, v * lanes));
      // A^T down the columns, then along the rows.
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < alpha; ++j) {
          std::vector<std::string> column;
          for (int64_t k = 0; k < alpha; ++k) column.push_back(fmt::format("z{}", k * alpha + j));
          line(fmt::format("const vec s{}_{} = {};", i, j, combination(f.AT[i], column)));
        }
      for (int64_t i = 0; i < m; ++i) {
        std::vector<std::string> row;
        for (int64_t k = 0; k < alpha; ++k) row.push_back(fmt::format("s{}_{}", i, k));
        for (int64_t j = 0; j < m; ++j)
          line(fmt::format("{{ const vec e = {} + bv{}; memcpy(y[{}] + {}, &e, sizeof(vec)); }}",
                           combination(f.AT[j], row), v, i * m + j, v * lanes));
      }
      close();
    }
    // A pixel past the output's last row or column (sizes not a multiple of m, a ragged
    // last chunk) is not stored.
    const bool ragged = chunks * Tc != T;
    for (int64_t a = 0; a < m; ++a)
      for (int64_t b = 0; b < m; ++b) {
        std::vector<std::string> checks;
        if (OH % m != 0 && a >= OH % m) checks.push_back(fmt::format("oh0 + {} < {}", a, OH));
        if (ragged || (OW % m != 0 && b >= OW % m))
          checks.push_back(fmt::format("ow0 + {} < {}", b, OW));
        std::string cond;
        for (const std::string& c : checks) cond += (cond.empty() ? "" : " && ") + c;
        open(cond.empty() ? std::string("") : "if (" + cond + ")");
        const std::string e = fresh("u");
        open(fmt::format("for (int {} = 0; {} < {}; ++{})", e, e, B, e));
        Index at = {img, fmt::format("(m0 + {})", e), fmt::format("(oh0 + {})", a),
                    fmt::format("(ow0 + {})", b)};
        store_output(out, linear(out, at), at, fmt::format("y[{}][{}]", a * m + b, e));
        close();
        close();
      }
    close();
    close();
  });
  return fmt::format("{} * {} * {}", dim(out, 0), TR, chunks);
}

}  // namespace eqfuse::codegen::detail
