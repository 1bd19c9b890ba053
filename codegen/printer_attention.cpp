// The printer's attention stage, softmax(S)·V in one pass (printer_writer.h).
#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

// softmax(S)·V with S = pointwise(Q·K), never stored. An item is a tile of query rows (of one
// batch entry); the keys come in blocks. Each block's K and V are loaded into a local tile
// once per item (through `elem`, so layout ops on Q, K and V fold into these loads), each row's
// scores for the block are computed and put through the pointwise work between Q·K and the
// Softmax, and folded into the row's running maximum m, sum l and row of sums acc, rescaling
// what came before by exp(m_old - m_new): FlashAttention's online softmax.
// On the CPU an item is kAttentionTileRows rows and a block 64 keys; rows go in groups of
// kAttentionRows, whose scores for the block, and sums along V's row (padded to whole vectors), are
// vectors held in registers (vector_variants) while the depth, or the block's keys, go by. On CUDA
// an item is a thread block of 8 warps, a warp per row; the block's threads load a block of 32
// keys' K and V into shared memory together, a lane's score is its key's, and the lanes share out
// V's row.
std::string Writer::body_attention(const Stage& s) {
  const ir::Node& pv = g_.node(s.node);
  const ir::Node& qk = g_.node(s.attention->scores);
  const ir::Node& sm = g_.node(s.attention->softmax);
  const ValueId out = s.output, q = qk.inputs[0], k = qk.inputs[1], v = pv.inputs[1];
  const ValueId scores = qk.outputs[0], logits = sm.inputs[0];
  const bool cuda = target_ == Target::Cuda;
  const std::optional<DType> mma = attention_mma_type(s);
  const int tile_rows = mma ? 16 * kAttentionWarps : cuda ? kAttentionWarps : kAttentionTileRows;
  const int block = cuda ? 32 : 64;
  const size_t r = rank(out);
  const ir::Dim& queries = type(out).shape[r - 2];
  // Items: the output's batch dims, then tiles of query rows.
  std::vector<std::string> dims;
  std::vector<bool> one;
  std::string items = "1";
  for (size_t a = 0; a + 2 < r; ++a) {
    dims.push_back(dim(out, a));
    one.push_back(dim_is_one(out, a));
    items = imul(items, dim(out, a));
  }
  const std::string rows = dim(queries);
  std::string tiles = queries.is_static()
                          ? std::to_string((queries.value() + tile_rows - 1) / tile_rows)
                          : fmt::format("(({} + {}) / {})", rows, tile_rows - 1, tile_rows);
  dims.push_back(tiles);
  one.push_back(tiles == "1");
  items = imul(items, tiles);
  Index item = decompose("i", dims, one);
  const Index batch(item.begin(), item.end() - 1);
  const std::string keys = dim(k, rank(k) - 1);
  const int64_t depth = type(q).shape[rank(q) - 1].value();
  const int64_t width = type(out).shape[r - 1].value();
  // The logit at query `row`, key `j`, given Q·K's element there.
  auto logit = [&](const std::string& row, const std::string& j, const std::string& dot) {
    substitute_ = {scores, dot};
    Index at = batch;
    at.push_back(row);
    at.push_back(j);
    std::string x = elem(logits, at);
    substitute_.reset();
    return x;
  };
  auto load = [&](ValueId x, const std::string& row, const std::string& col) {
    return "(float)" + elem(x, matrix_index(x, batch, row, col, out));
  };
  std::string r0 = fresh("r"), j0 = fresh("j"), nb = fresh("nb"), bm = fresh("bm"),
              alpha = fresh("alpha"), p = fresh("pe"), jj = fresh("jj"), d = fresh("d");
  line(fmt::format("const int64_t {} = {} * {};", r0, item.back(), tile_rows));
  if (!cuda) {
    std::string nr = fresh("nr"), qt = fresh("qt"), m = fresh("m"), l = fresh("l"),
                acc = fresh("acc"), kt = fresh("kt"), vt = fresh("vt"), sc = fresh("sc"),
                row = fresh("row");
    // Rows of V and of the sums padded with zeros to whole 64-byte vectors.
    const int64_t wp = (width + 15) / 16 * 16;
    line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nr, rows, r0, tile_rows,
                     rows, r0, tile_rows));
    line(fmt::format("float {}[{}][{}], {}[{}], {}[{}], {}[{}][{}];", qt, tile_rows, depth, m,
                     tile_rows, l, tile_rows, acc, tile_rows, wp));
    // Every row of the tile is set, past the item's last too (zeros), since rows go in groups.
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", row, row, tile_rows, row));
    line(fmt::format("{}[{}] = -INFINITY;", m, row));
    line(fmt::format("{}[{}] = 0;", l, row));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] = 0;", d, d, wp, d, acc, row,
                     d));
    open(fmt::format("if ({} < {})", row, nr));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
    line(fmt::format("{}[{}][{}] = {};", qt, row, d, load(q, "(" + r0 + " + " + row + ")", d)));
    close();
    close();
    line(fmt::format("else for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] = 0;", d, d, depth, d, qt,
                     row, d));
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, block));
    line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, block, keys,
                     j0, block));
    line(fmt::format("float {}[{}][{}], {}[{}][{}];", kt, depth, block, vt, block, wp));
    const std::string key = "(" + j0 + " + " + jj + ")";
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
    line(fmt::format("{}[{}][{}] = {};", kt, d, jj, load(k, d, key)));
    close();
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, width, d));
    line(fmt::format("{}[{}][{}] = {};", vt, jj, d, load(v, key, d)));
    close();
    if (wp > width)
      line(fmt::format("for (int64_t {} = {}; {} < {}; ++{}) {}[{}][{}] = 0;", d, width, d, wp, d,
                       vt, jj, d));
    close();
    // A short last block's other keys are zeros, which the scores' whole vectors read.
    open(fmt::format("for (int64_t {} = {}; {} < {}; ++{})", jj, nb, jj, block, jj));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}][{}] = 0;", d, d, depth, d, kt, d,
                     jj));
    close();
    // Rows in groups of kAttentionRows, so that each load of K's and V's tiles feeds a
    // multiply-add of every row of the group, and the group's sums are independent chains (a
    // row alone had 2 to 4, too few to hide the multiply-adds' latency). The group's rows past
    // the item's last (zeros) are computed and never stored.
    // Fewer where the queries are fewer (a single query computes one row, not four).
    const int R = queries.is_static() && queries.value() >= 1 && queries.value() < kAttentionRows
                      ? int(queries.value())
                      : kAttentionRows;
    std::string rr = fresh("rr"), alphas = fresh("alpha");
    open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", row, row, nr, row, R));
    line(fmt::format("float {}[{}][{}], {}[{}];", sc, R, block, alphas, R));
    // The group's scores for the block: vectors of sums in registers over the depth, as many
    // vectors of keys at a time as the tile's accumulators hold for R rows.
    vector_variants("float", [&](int lanes, int accumulators) {
      const int64_t nv = block / lanes,
                    nc = std::max<int64_t>(1, std::min<int64_t>(nv, accumulators / R));
      std::string u0 = fresh("u");
      open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", u0, u0, block, u0, nc * lanes));
      for (int g = 0; g < R; ++g)
        for (int64_t u = 0; u < nc; ++u) line(fmt::format("vec s{}_{} = (vec){{}};", g, u));
      open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, depth, d));
      for (int64_t u = 0; u < nc; ++u)
        line(fmt::format("vec k{}; memcpy(&k{}, &{}[{}][{} + {}], sizeof(vec));", u, u, kt, d, u0,
                         u * lanes));
      for (int g = 0; g < R; ++g) {
        line(fmt::format("const float q{} = {}[{} + {}][{}];", g, qt, row, g, d));
        for (int64_t u = 0; u < nc; ++u) line(fmt::format("s{}_{} += q{} * k{};", g, u, g, u));
      }
      close();
      for (int g = 0; g < R; ++g)
        for (int64_t u = 0; u < nc; ++u)
          line(fmt::format("memcpy(&{}[{}][{} + {}], &s{}_{}, sizeof(vec));", sc, g, u0, u * lanes,
                           g, u));
      close();
    });
    // Each row's logits, weights and sum (the rows past the item's last keep zero weights).
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", rr, rr, R, rr));
    line(fmt::format("{}[{}] = 1.0f;", alphas, rr));
    line(fmt::format("if ({} + {} >= {}) continue;", row, rr, nr));
    line(fmt::format("float* {} = {}[{}];", p, sc, rr));
    const std::string grow = "(" + row + " + " + rr + ")";
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
    std::string x = logit("(" + r0 + " + " + grow + ")", key, p + "[" + jj + "]");
    line(fmt::format("{}[{}] = (float){};", p, jj, x));
    close();
    line(fmt::format("float {} = {}[{}];", bm, m, grow));
    // A maximum in any order is the same (a NaN score is passed over either way), so vectors may
    // take it (eqf_max_float, the prelude's): as a scalar chain it took as long as the block's
    // products.
    line(fmt::format("#pragma omp simd reduction(eqf_max_float : {})", bm));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {} = eqf_max({}, {}[{}]);", jj, jj, nb,
                     jj, bm, bm, p, jj));
    line(fmt::format("const float {} = {} == -INFINITY ? 1.0f : eqf_exp({}[{}] - {});", alpha, bm,
                     m, grow, bm));
    // The weights first, in a loop of their own that vector math takes whole, then their sum.
    line(
        fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {}[{}] = {} == -INFINITY ? 0.0f : "
                    "eqf_exp({}[{}] - {});",
                    jj, jj, nb, jj, p, jj, bm, p, jj, bm));
    std::string ls = fresh("ls");
    line(fmt::format("float {} = 0;", ls));
    line(fmt::format("#pragma omp simd reduction(+ : {})", ls));
    line(fmt::format("for (int64_t {} = 0; {} < {}; ++{}) {} += {}[{}];", jj, jj, nb, jj, ls, p,
                     jj));
    line(fmt::format("{}[{}] = {}[{}] * {} + {};", l, grow, l, grow, alpha, ls));
    line(fmt::format("{}[{}] = {};", alphas, rr, alpha));
    line(fmt::format("{}[{}] = {};", m, grow, bm));
    close();
    // Each row's sums, rescaled, then the block's weighted rows of V added, in registers a chunk
    // of V's row at a time, as many vectors as the accumulators hold for R rows.
    vector_variants("float", [&](int lanes, int accumulators) {
      int64_t nv = std::max<int64_t>(1, std::min<int64_t>(wp / lanes, accumulators / R));
      while ((wp / lanes) % nv != 0) --nv;
      std::string d0 = fresh("d");
      open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", d0, d0, wp, d0, nv * lanes));
      for (int g = 0; g < R; ++g)
        for (int64_t u = 0; u < nv; ++u) {
          line(fmt::format("vec a{}_{}; memcpy(&a{}_{}, &{}[{} + {}][{} + {}], sizeof(vec));", g, u,
                           g, u, acc, row, g, d0, u * lanes));
          line(fmt::format("a{}_{} *= {}[{}];", g, u, alphas, g));
        }
      open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
      for (int64_t u = 0; u < nv; ++u)
        line(fmt::format("vec w{}; memcpy(&w{}, &{}[{}][{} + {}], sizeof(vec));", u, u, vt, jj, d0,
                         u * lanes));
      for (int g = 0; g < R; ++g) {
        line(fmt::format("const float pr{} = {}[{}][{}];", g, sc, g, jj));
        for (int64_t u = 0; u < nv; ++u) line(fmt::format("a{}_{} += pr{} * w{};", g, u, g, u));
      }
      close();
      for (int g = 0; g < R; ++g)
        for (int64_t u = 0; u < nv; ++u)
          line(fmt::format("memcpy(&{}[{} + {}][{} + {}], &a{}_{}, sizeof(vec));", acc, row, g, d0,
                           u * lanes, g, u));
      close();
    });
    close();
    close();  // the block's loop
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", row, row, nr, row));
    std::string inv = fresh("inv");
    line(fmt::format("const float {} = 1.0f / {}[{}];", inv, l, row));
    open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", d, d, width, d));
    Index at = batch;
    at.push_back("(" + r0 + " + " + row + ")");
    at.push_back(d);
    line(store(out, linear(out, at), at, fmt::format("{}[{}][{}] * {}", acc, row, d, inv)));
    close();
    close();
    return items;
  }
  if (mma) {
    body_attention_mma(s, *mma, r0, rows, keys, depth, width, load, logit,
                       [&](const Index& tail, const std::string& value) {
                         Index at = batch;
                         at.insert(at.end(), tail.begin(), tail.end());
                         return store(out, linear(out, at), at, value);
                       });
    return items;
  }
  // CUDA: a block per item, warp `warp` takes query row r0 + warp.
  const int per_lane = int((width + 31) / 32);
  std::string row = fresh("row"), sq = fresh("sq"), sk = fresh("sk"), sv = fresh("sv"),
              m = fresh("m"), l = fresh("l"), acc = fresh("acc"), e = fresh("e");
  line(fmt::format("const int64_t {} = {} + warp;", row, r0));
  // K's tile is [depth][key], padded by a column so that threads storing consecutive depths
  // of one key hit distinct banks.
  line(fmt::format("__shared__ float {}[{}][{}], {}[{}][{}], {}[{}][{}];", sq, tile_rows, depth, sk,
                   depth, block + 1, sv, block, width));
  open(fmt::format("if ({} < {})", row, rows));
  open(fmt::format("for (int64_t {} = lane; {} < {}; {} += 32)", d, d, depth, d));
  line(fmt::format("{}[warp][{}] = {};", sq, d, load(q, row, d)));
  close();
  close();
  line(fmt::format("float {} = -INFINITY, {} = 0;", m, l));
  line(fmt::format("float {}[{}];", acc, per_lane));
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u] = 0;", per_lane, acc));
  open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, block));
  line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, block, keys, j0,
                   block));
  line("__syncthreads();  // the previous block's tiles are used up");
  // K's and V's blocks, each element loaded once by one thread; consecutive threads take
  // consecutive depths (widths) of a key, which lie next to each other in a projection's output.
  for (bool is_k : {true, false}) {
    const int64_t along = is_k ? depth : width, count = block * along;
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e, count, e));
    std::string x = fresh("x");
    line(fmt::format("const int64_t {} = {} / {}, {} = {} % {};", jj, e, along, d, e, along));
    line(fmt::format("float {} = 0;", x));
    open(fmt::format("if ({} < {})", jj, nb));
    const std::string key = "(" + j0 + " + " + jj + ")";
    line(fmt::format("{} = {};", x, is_k ? load(k, d, key) : load(v, key, d)));
    close();
    line(is_k ? fmt::format("{}[{}][{}] = {};", sk, d, jj, x)
              : fmt::format("{}[{}][{}] = {};", sv, jj, d, x));
    close();
  }
  line("__syncthreads();");
  open(fmt::format("if ({} < {})", row, rows));  // the same for a warp's lanes
  std::string j = fresh("j"), sc = fresh("sc"), dot = fresh("dot");
  line(fmt::format("const int64_t {} = {} + lane;", j, j0));
  line(fmt::format("float {} = -INFINITY;", sc));
  open(fmt::format("if ({} < {})", j, keys));
  line(fmt::format("float {} = 0;", dot));
  line(fmt::format("for (int {} = 0; {} < {}; ++{}) {} += {}[warp][{}] * {}[{}][lane];", d, d,
                   depth, d, dot, sq, d, sk, d));
  std::string x = logit(row, j, dot);
  line(fmt::format("{} = (float){};", sc, x));
  close();
  line(fmt::format("const float {} = eqf_max({}, eqf_warp_max({}));", bm, m, sc));
  line(
      fmt::format("const float {} = {} == -INFINITY ? 1.0f : eqf_exp({} - {});", alpha, bm, m, bm));
  line(fmt::format("const float {} = {} == -INFINITY ? 0.0f : eqf_exp({} - {});", p, bm, sc, bm));
  line(fmt::format("{} = {} * {} + eqf_warp_sum({});", l, l, alpha, p));
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u] *= {};", per_lane, acc, alpha));
  std::string pj = fresh("pj");
  open(fmt::format("for (int {} = 0; {} < {}; ++{})", jj, jj, nb, jj));
  line(fmt::format("const float {} = __shfl_sync(0xffffffffu, {}, {});", pj, p, jj));
  line(
      fmt::format("for (int u = 0; u < {}; ++u) if (lane + 32 * u < {}) {}[u] += {} * "
                  "{}[{}][lane + 32 * u];",
                  per_lane, width, acc, pj, sv, jj));
  close();
  line(fmt::format("{} = {};", m, bm));
  close();
  close();
  open(fmt::format("if ({} < {})", row, rows));
  std::string inv = fresh("inv");
  line(fmt::format("const float {} = 1.0f / {};", inv, l));
  open(fmt::format("for (int u = 0; u < {}; ++u)", per_lane));
  line(fmt::format("const int64_t {} = lane + 32 * u;", d));
  line(fmt::format("if ({} >= {}) break;", d, width));
  Index at = batch;
  at.push_back(row);
  at.push_back(d);
  line(store(out, linear(out, at), at, fmt::format("{}[u] * {}", acc, inv)));
  close();
  close();
  line("__syncthreads();  // the next item's rows overwrite the shared tiles");
  return items;
}

std::optional<DType> Writer::attention_mma_type(const Stage& s) const {
  if (target_ != Target::Cuda || !plan_.tensor_cores || s.kind != StageKind::Attention)
    return std::nullopt;
  const ir::Node& qk = g_.node(s.attention->scores);
  const ValueId q = qk.inputs[0], k = qk.inputs[1], v = g_.node(s.node).inputs[1];
  // Under --precision the operands are rounded to it where they are loaded, as they would be
  // where stored; a model of 16-bit operands multiplies in their type.
  if (plan_.precision != DType::f32) return plan_.precision;
  const DType t = type(q).dtype;
  if ((t != DType::bf16 && t != DType::f16) || type(k).dtype != t || type(v).dtype != t)
    return std::nullopt;
  return t;
}

// softmax(S)·V on tensor cores (FlashAttention-2's loop), for 16-bit Q, K and V: an item is
// 128 query rows, 16 for each of the block's 8 warps. Each warp keeps its rows of Q as the A
// fragments of mma.m16n8k16 (loaded once per item), and per block of kMmaKeys keys, which the
// block's threads put in shared memory as 16-bit pairs (K by pairs of depths, V by pairs of
// keys: the B fragments' pairs), computes its 16 x 64 scores S = Q·K in f32 accumulators, puts
// each through the logit's pointwise work, folds the block into each row's running maximum and
// sum, rescales its output accumulators, and multiplies P (S's accumulators rounded to 16 bits,
// already laid out as A fragments) by V into them. Rows and columns past the extents, and
// depths and widths padded to whole steps of 16, are zeros in the fragments, keys past the end
// -INFINITY in S. A lane holds rows g and g + 8 of its warp's 16 (g = lane / 4), so a row's
// maximum and sum combine over the lane's group of 4 by shuffles.
void Writer::body_attention_mma(
    const Stage& s, DType type, const std::string& r0, const std::string& rows,
    const std::string& keys, int64_t depth, int64_t width,
    const std::function<std::string(ValueId, const std::string&, const std::string&)>& load,
    const std::function<std::string(const std::string&, const std::string&, const std::string&)>&
        logit,
    const std::function<std::string(const Index&, const std::string&)>& store_at) {
  uses_mma = true;
  attention_mma_ = true;
  const ir::Node& qk = g_.node(s.attention->scores);
  const ValueId q = qk.inputs[0], k = qk.inputs[1], v = g_.node(s.node).inputs[1];
  const std::string half = type == DType::bf16 ? "bf16" : "f16";
  const int64_t dp = (depth + 15) / 16 * 16, wp = (width + 15) / 16 * 16;
  const int64_t k_row = dp / 2 + 4, v_row = wp + 8;  // padded: lanes read distinct banks
  const int64_t steps = dp / 16, tiles = kMmaKeys / 8, out_tiles = wp / 8;
  auto pack = [&](const std::string& lo, const std::string& hi) {
    return fmt::format("eqf_pack_{}({}, {})", half, lo, hi);
  };
  // `x` = the element at (row, col) where `valid`, else 0 (the loads print inside the branch).
  auto guarded = [&](const std::string& x, const std::string& valid, ValueId from,
                     const std::string& row, const std::string& col) {
    line(fmt::format("float {} = 0;", x));
    open(fmt::format("if ({})", valid));
    line(fmt::format("{} = {};", x, load(from, row, col)));
    close();
  };
  std::string g = fresh("g"), tg = fresh("tg"), rw = fresh("rw"), active = fresh("active"),
              sk = fresh("sk"), sv = fresh("sv"), qa = fresh("qa"), o = fresh("o"), m = fresh("m"),
              l = fresh("l"), j0 = fresh("j"), nb = fresh("nb"), e = fresh("e");
  line(fmt::format("const int {} = lane >> 2, {} = lane & 3;", g, tg));
  line(fmt::format("const int64_t {} = {} + warp * 16;  // the warp's first row", rw, r0));
  line(fmt::format("const bool {} = {} < {};  // the same for the warp's lanes", active, rw, rows));
  line(fmt::format("__shared__ uint32_t {}[{}][{}], {}[{}][{}];", sk, kMmaKeys, k_row, sv,
                   kMmaKeys / 2, v_row));
  line(fmt::format("uint32_t {}[{}][4];", qa, steps));
  line(fmt::format("float {}[{}][4], {}[2] = {{-INFINITY, -INFINITY}}, {}[2] = {{0, 0}};", o,
                   out_tiles, m, l));
  line("#pragma unroll");
  line(fmt::format("for (int u = 0; u < {}; ++u) {}[u][0] = {}[u][1] = {}[u][2] = {}[u][3] = 0;",
                   out_tiles, o, o, o, o));
  // Q's A fragments: register fr of step ks holds row g + 8 (fr & 1), depths 2 tg + 8 (fr >> 1)
  // and one more, of the step's 16.
  open(fmt::format("if ({})", active));
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", steps));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  std::string row = fresh("row"), col = fresh("col"), lo = fresh("lo"), hi = fresh("hi");
  line(fmt::format(
      "const int64_t {} = {} + {} + 8 * (fr & 1), {} = ks * 16 + 2 * {} + 8 * (fr >> 1);", row, rw,
      g, col, tg));
  guarded(lo, fmt::format("{} < {} && {} < {}", row, rows, col, depth), q, row, col);
  guarded(hi, fmt::format("{} < {} && {} + 1 < {}", row, rows, col, depth), q, row,
          "(" + col + " + 1)");
  line(fmt::format("{}[ks][fr] = {};", qa, pack(lo, hi)));
  close();
  close();
  close();
  open(fmt::format("for (int64_t {} = 0; {} < {}; {} += {})", j0, j0, keys, j0, kMmaKeys));
  line(fmt::format("const int64_t {} = {} - {} < {} ? {} - {} : {};", nb, keys, j0, kMmaKeys, keys,
                   j0, kMmaKeys));
  line("__syncthreads();  // the previous block's tiles are used up");
  // K's block by key and pair of depths; consecutive threads take consecutive depths of a key.
  {
    std::string jj = fresh("jj"), pd = fresh("pd"), key = "(" + j0 + " + " + jj + ")";
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e,
                     kMmaKeys * dp / 2, e));
    line(fmt::format("const int {} = {} / {}, {} = 2 * ({} % {});", jj, e, dp / 2, pd, e, dp / 2));
    lo = fresh("lo"), hi = fresh("hi");
    guarded(lo, fmt::format("{} < {} && {} < {}", jj, nb, pd, depth), k, pd, key);
    guarded(hi, fmt::format("{} < {} && {} + 1 < {}", jj, nb, pd, depth), k, "(" + pd + " + 1)",
            key);
    line(fmt::format("{}[{}][{} / 2] = {};", sk, jj, pd, pack(lo, hi)));
    close();
  }
  // V's block by pair of keys and width; consecutive threads take consecutive widths.
  {
    std::string pj = fresh("pj"), w = fresh("w");
    open(fmt::format("for (int {} = threadIdx.x; {} < {}; {} += blockDim.x)", e, e,
                     kMmaKeys / 2 * wp, e));
    line(fmt::format("const int {} = 2 * ({} / {}), {} = {} % {};", pj, e, wp, w, e, wp));
    lo = fresh("lo"), hi = fresh("hi");
    guarded(lo, fmt::format("{} < {} && {} < {}", pj, nb, w, width), v, "(" + j0 + " + " + pj + ")",
            w);
    guarded(hi, fmt::format("{} + 1 < {} && {} < {}", pj, nb, w, width), v,
            "(" + j0 + " + " + pj + " + 1)", w);
    line(fmt::format("{}[{} / 2][{}] = {};", sv, pj, w, pack(lo, hi)));
    close();
  }
  line("__syncthreads();");
  open(fmt::format("if ({})", active));
  // S = Q·K: n-tile nt holds keys 8 nt + 2 tg + (fr & 1) of rows g + 8 (fr >> 1).
  std::string sc = fresh("s"), mx = fresh("mx"), alpha = fresh("alpha"), pa = fresh("pa");
  line(fmt::format("float {}[{}][4];", sc, tiles));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line(fmt::format("{}[nt][0] = {}[nt][1] = {}[nt][2] = {}[nt][3] = 0;", sc, sc, sc, sc));
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", steps));
  line(fmt::format(
      "const uint32_t b[2] = {{{}[nt * 8 + {}][ks * 8 + {}], {}[nt * 8 + {}][ks * 8 + 4 "
      "+ {}]}};",
      sk, g, tg, sk, g, tg));
  line(fmt::format("eqf_mma_{}({}[nt], {}[ks], b);", half, sc, qa));
  close();
  close();
  // The logits, and each row's maximum over the block.
  line(fmt::format("float {}[2] = {{{}[0], {}[1]}};", mx, m, m));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  row = fresh("row");
  std::string key = fresh("key"), x = fresh("x");
  line(fmt::format(
      "const int64_t {} = {} + {} + 8 * (fr >> 1), {} = {} + nt * 8 + 2 * {} + (fr & 1);", row, rw,
      g, key, j0, tg));
  line(fmt::format("float {} = -INFINITY;", x));
  open(fmt::format("if ({} < {} && {} < {})", row, rows, key, keys));
  line(fmt::format("{} = (float){};", x, logit(row, key, sc + "[nt][fr]")));
  close();
  line(fmt::format("{}[nt][fr] = {};", sc, x));
  line(fmt::format("{}[fr >> 1] = eqf_max({}[fr >> 1], {});", mx, mx, x));
  close();
  close();
  line(fmt::format("float {}[2];", alpha));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line(fmt::format("{}[h] = eqf_max({}[h], __shfl_xor_sync(0xffffffffu, {}[h], 1));", mx, mx, mx));
  line(fmt::format("{}[h] = eqf_max({}[h], __shfl_xor_sync(0xffffffffu, {}[h], 2));", mx, mx, mx));
  line(
      fmt::format("{}[h] = {}[h] == -INFINITY ? 1.0f : eqf_exp({}[h] - {}[h]);", alpha, mx, m, mx));
  line(fmt::format("{}[h] = {}[h];", m, mx));
  line(fmt::format("{}[h] *= {}[h];", l, alpha));
  close();
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line("#pragma unroll");
  line(fmt::format("for (int fr = 0; fr < 4; ++fr) {}[u][fr] *= {}[fr >> 1];", o, alpha));
  close();
  // P, rounded to 16 bits, as A fragments: step ks's registers are n-tiles 2 ks (registers 0,
  // 1) and 2 ks + 1 (registers 2, 3), rows g and g + 8. The sums add what P·V multiplies.
  line(fmt::format("uint32_t {}[{}][4];", pa, tiles / 2));
  line("#pragma unroll");
  open(fmt::format("for (int nt = 0; nt < {}; ++nt)", tiles));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  std::string p0 = fresh("p"), p1 = fresh("p");
  line(fmt::format("const eqf_{} {} = {}[h] == -INFINITY ? 0.0f : eqf_exp({}[nt][2 * h] - {}[h]);",
                   half, p0, m, sc, m));
  line(fmt::format(
      "const eqf_{} {} = {}[h] == -INFINITY ? 0.0f : eqf_exp({}[nt][2 * h + 1] - {}[h]);", half, p1,
      m, sc, m));
  line(fmt::format("{}[h] += (float){} + (float){};", l, p0, p1));
  line(fmt::format("{}[nt >> 1][(nt & 1) * 2 + h] = (uint32_t){}.bits | (uint32_t){}.bits << 16;",
                   pa, p0, p1));
  close();
  close();
  // O += P·V: n-tile u holds widths 8 u + 2 tg + (fr & 1).
  line("#pragma unroll");
  open(fmt::format("for (int ks = 0; ks < {}; ++ks)", tiles / 2));
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line(fmt::format(
      "const uint32_t b[2] = {{{}[ks * 8 + {}][u * 8 + {}], {}[ks * 8 + 4 + {}][u * 8 + "
      "{}]}};",
      sv, tg, g, sv, tg, g));
  line(fmt::format("eqf_mma_{}({}[u], {}[ks], b);", half, o, pa));
  close();
  close();
  close();  // active
  close();  // key blocks
  open(fmt::format("if ({})", active));
  line("#pragma unroll");
  open("for (int h = 0; h < 2; ++h)");
  line(fmt::format("{}[h] += __shfl_xor_sync(0xffffffffu, {}[h], 1);", l, l));
  line(fmt::format("{}[h] += __shfl_xor_sync(0xffffffffu, {}[h], 2);", l, l));
  line(fmt::format("{}[h] = 1.0f / {}[h];", l, l));
  close();
  line("#pragma unroll");
  open(fmt::format("for (int u = 0; u < {}; ++u)", out_tiles));
  line("#pragma unroll");
  open("for (int fr = 0; fr < 4; ++fr)");
  row = fresh("row");
  col = fresh("col");
  line(fmt::format("const int64_t {} = {} + {} + 8 * (fr >> 1), {} = u * 8 + 2 * {} + (fr & 1);",
                   row, rw, g, col, tg));
  open(fmt::format("if ({} < {} && {} < {})", row, rows, col, width));
  line(store_at({row, col}, fmt::format("{}[u][fr] * {}[fr >> 1]", o, l)));
  close();
  close();
  close();
  close();
}

}  // namespace eqfuse::codegen::detail
