// The printer's matrix products in loops of their own: MatMul and Gemm as elements, as row
// blocks of register tiles (the twin), and the dot tiles with their lane sums that products with
// B transposed and patch convolutions share (printer_writer.h).
#include <algorithm>
#include <optional>

#include "codegen/printer_writer.h"

namespace eqfuse::codegen::detail {

Contraction contraction(const ir::Graph& g, const ir::Node& n) {
  Contraction c;
  c.a = n.inputs[0];
  c.b = n.inputs[1];
  if (n.op_type == "Gemm") {
    ir::OpContext ctx = ir::make_context(g, n);
    c.gemm = true;
    c.trans_a = ctx.attr_int("transA") != 0;
    c.trans_b = ctx.attr_int("transB") != 0;
    c.alpha = ctx.attr_float("alpha");
    c.beta = ctx.attr_float("beta");
    if (n.inputs.size() > 2) c.c = n.inputs[2];
  }
  return c;
}

std::string Writer::body_matmul_element(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  Index idx = decompose_value("i", out);
  std::string k = fresh("k");
  std::string ct = compute_type({type(out).dtype});
  Index ia, ib;
  std::string K;
  if (c.gemm) {
    std::string m = idx[0], nn = idx[1];
    ia = c.trans_a ? Index{k, m} : Index{m, k};
    ib = c.trans_b ? Index{nn, k} : Index{k, nn};
    K = dim(c.a, c.trans_a ? 0 : 1);
  } else {
    K = dim(c.a, ra - 1);
    size_t batch = ro - (ra >= 2 ? 1 : 0) - (rb >= 2 ? 1 : 0);
    Index bidx(idx.begin(), idx.begin() + long(batch));
    if (ra >= 2) {
      ia = matrix_index(c.a, bidx, idx[batch], k, out);
    } else {
      ia = {k};
    }
    if (rb >= 2) {
      ib = matrix_index(c.b, bidx, k, idx[ro - 1], out);
    } else {
      ib = {k};
    }
  }
  std::string acc = fresh("acc");
  line(fmt::format("{} {} = 0;", ct, acc));
  open(fmt::format("for (int64_t {} = 0; {} < {}; ++{})", k, k, K, k));
  line(fmt::format("{} += ({}){} * ({}){};", acc, ct, elem(c.a, ia), ct, elem(c.b, ib)));
  close();
  std::string v = acc;
  if (c.gemm) {
    v = fmt::format("{} * {}", literal(c.alpha, ct), acc);
    if (c.c != ir::kNoValue && c.beta != 0)
      v += fmt::format(" + {} * ({}){}", literal(c.beta, ct), ct,
                       elem(c.c, broadcast_index(c.c, idx, out)));
  }
  store_output(out, "i", idx, v);
  return numel(out);
}

// The CPU form. Where B's rows are contiguous, one item per block of `mb` output rows (rows of
// the whole batch where B is one matrix) and kColumnChunk columns, in register tiles of rows by
// 2 to 4 vectors of columns, their sums in registers (named variables of the compilers' vector
// extension) over all of K, so each load of B feeds a multiply-add per row of the tile: 4 rows by
// 4 vectors under AVX-512 (16 of its 32 registers), 6 rows by 2 vectors elsewhere (12 of 16;
// 4 rows by 2 left the loads of B and A as many as the multiply-adds, measured 1.3x slower under
// AVX2). A block past the last whole one (rows not a multiple of mb, or a run-time count) takes
// its rows in those tiles while whole ones fit, then a tile of 4 and one of 2 where they fit,
// then one at a time.
// Where B is transposed (Gemm transB), one item per block of rows and kDotChunk columns, in tiles
// of dot products along K (dot_tile); where A is transposed too, one item per kDotChunk columns of
// a row, a dot product per column. Where the plan holds B in panels (Stage::weight_blocks, B^T's
// for transB), B's rows are those of the panel: one item per block of rows and panel, and every
// load of B whole (the last panel is padded with zeros). A thread's items are its rows, all
// panels of each, so that what it writes is what the stage after it reads on the same core;
// but where B's panels take kPanelMajorBytes or more, its panels, all rows of each: a block of
// rows by panel streams the panel from where it is, and a whole B taken once per block of rows
// comes from memory (bert_base's 768 x 3072 products ran 1.4x faster panel by panel).
std::string Writer::body_matmul_rows(const Stage& s) {
  const ir::Node& n = g_.node(s.node);
  Contraction c = contraction(g_, n);
  ValueId out = s.output;
  size_t ro = rank(out), ra = rank(c.a), rb = rank(c.b);
  const std::string ct = compute_type({type(out).dtype});
  const std::optional<ValueId> panels = s.weight_blocks;
  const bool b_rows = panels || !(c.gemm && c.trans_b);  // B's rows (along N) are contiguous
  // Else, where A's rows are contiguous too, tiles of dot products along K.
  const bool dots = !b_rows && !c.trans_a && (ct == "float" || ct == "double");
  // A batch of matrices times one matrix (weights): the rows of the whole batch are one matrix of
  // rows, so that a batch of single rows ([64, 1, K] x [K, N]) still fills the tiles.
  bool flat = !c.gemm && rb == 2 && ra == ro && ro > 2;
  for (size_t k = 0; flat && k + 2 < ro; ++k)
    flat = type(c.a).shape[k].sym() == type(out).shape[k].sym();
  ir::Dim row_dim = type(out).shape[ro - 2];
  std::vector<std::string> lead;  // the output's dims but the last
  std::vector<bool> lead_one;
  for (size_t k = 0; k + 1 < ro; ++k) {
    lead.push_back(dim(out, k));
    lead_one.push_back(dim_is_one(out, k));
    if (flat && k + 2 < ro)
      row_dim = row_dim.is_static() && type(out).shape[k].is_static()
                    ? ir::Dim(row_dim.value() * type(out).shape[k].value())
                    : ir::Dim::symbol("rows");
  }
  std::string R = dim(out, ro - 2);  // rows of one matrix of the output
  if (flat)
    for (size_t k = 0; k + 2 < ro; ++k) R = imul(R, lead[k]);
  // Rows per block: whole tiles of both targets' rows (kMatmulBlockRows; dot tiles: 4); 4 where
  // the product has fewer than kMatmulFewRows rows in all, its batch's included (items of 12
  // rows split 64 rows 36 to 28 over two threads); fewer where a matrix has fewer rows still.
  int64_t mb = dots ? kTileAccumulators / 2 : b_rows ? kMatmulBlockRows : 1;
  std::optional<int64_t> all_rows;  // the output's rows over its batch, where static
  if (row_dim.is_static()) all_rows = row_dim.value();
  for (size_t k = 0; !flat && all_rows && k + 2 < ro; ++k)
    all_rows = type(out).shape[k].is_static()
                   ? std::optional<int64_t>(*all_rows * type(out).shape[k].value())
                   : std::nullopt;
  if (b_rows && !dots && all_rows && *all_rows < kMatmulFewRows) mb = 4;
  if (row_dim.is_static()) mb = fit_block_rows(mb, row_dim.value());
  const bool ragged = mb > 1 && !(row_dim.is_static() && row_dim.value() % mb == 0);
  const std::string blocks = mb > 1 ? fmt::format("(({} + {}) / {})", R, mb - 1, mb) : R;
  std::vector<std::string> rdims{blocks};
  std::vector<bool> rone{row_dim.is_static() && row_dim.value() == 1};
  if (!flat) {
    rdims.assign(lead.begin(), lead.end());
    rone.assign(lead_one.begin(), lead_one.end());
    rdims.back() = blocks;
    rone.back() = rone.back() && mb == 1;
  }
  std::string rows = "1";
  for (const std::string& d : rdims) rows = imul(rows, d);
  std::string N = dim(out, ro - 1);
  // An item takes a chunk of its rows' columns, so that few rows (a classifier at batch 1, 17
  // tokens) still split across threads and a chunk of B stays in cache. `item` numbers the blocks.
  const int64_t chunk = panels ? kPanelWidth : b_rows ? kColumnChunk : kDotChunk;
  const ir::Dim& cols = type(out).shape[ro - 1];
  const bool chunked = !(cols.is_static() && cols.value() <= chunk);
  std::string item = "i", chunks = "1", n0 = "0", n1 = N;
  if (chunked) {
    chunks = fmt::format("(({} + {}) / {})", N, chunk - 1, chunk);
    // Panel by panel where B is large (a thread keeps its panel in cache for all its rows), else
    // row block by row block (what a thread writes is what the stage after it reads).
    int64_t bytes = panels ? int64_t(sizeof(float)) : 0;
    if (panels)
      for (const ir::Dim& d : type(*panels).shape.dims()) bytes *= d.value();
    const bool by_panel = bytes >= kPanelMajorBytes;
    const std::string blocks_of_rows = "(" + rows + ")";  // imul leaves a product unbracketed
    const std::string& per = by_panel ? blocks_of_rows : chunks;
    line(fmt::format("const int64_t nc = i {} {};", by_panel ? "/" : "%", per));
    line(fmt::format("const int64_t ib = i {} {};", by_panel ? "%" : "/", per));
    line(fmt::format("const int64_t n1 = {} - nc * {} < {} ? {} : nc * {} + {};", N, chunk, chunk,
                     N, chunk, chunk));
    item = "ib";
    n0 = fmt::format("nc * {}", chunk);
    n1 = "n1";
  }
  Index ridx = decompose(item, rdims, rone);
  std::string m = ridx.back();
  if (mb > 1) {
    line(fmt::format("const int64_t m0 = {} * {};", m, mb));
    m = "m0";
    ridx.back() = m;
  }
  if (ragged) line(fmt::format("const int64_t mr = {} - m0 < {} ? {} - m0 : {};", R, mb, R, mb));
  // The output row of m (rows of every matrix of the batch in a row): the item's where blocks
  // are single rows, else its matrix's first row plus m.
  std::string l0 = item;
  if (flat)
    l0 = m;
  else if (mb > 1) {
    line(fmt::format("const int64_t l0 = {} / {} * {} + m0;", item, blocks, R));
    l0 = "l0";
  }
  std::string K, sak, sam, sbk, sbn, abase, bbase;
  if (c.gemm) {
    K = dim(c.a, c.trans_a ? 0 : 1);
    abase = linear(c.a, c.trans_a ? Index{"0", m} : Index{m, "0"});
    sak = c.trans_a ? dim(c.a, 1) : "1";
    sam = c.trans_a ? "1" : K;
    bbase = "0";
    sbk = c.trans_b ? "1" : dim(c.b, 1);
    sbn = c.trans_b ? dim(c.b, 1) : "1";
  } else if (flat) {
    K = dim(c.a, ra - 1);
    abase = imul(m, K);
    sak = "1";
    sam = K;
    bbase = "0";
    sbk = dim(c.b, 1);
    sbn = "1";
  } else {
    K = dim(c.a, ra - 1);
    size_t batch = ro - 2;
    const Index batch_index(ridx.begin(), ridx.begin() + long(batch));
    abase = linear(c.a, matrix_index(c.a, batch_index, m, "0", out));
    sak = "1";
    sam = K;
    bbase = linear(c.b, matrix_index(c.b, batch_index, "0", "0", out));
    sbk = dim(c.b, rb - 1);
    sbn = "1";
  }
  // Column n0 of the item's is column bcol of the rows from b.
  std::string bcol = "n0";
  if (panels) {
    bbase = chunked ? fmt::format("nc * {} * {}", K, kPanelWidth) : "0";
    sbk = std::to_string(kPanelWidth);
    if (chunked) bcol = fmt::format("(n0 - {})", n0);
  }
  const ValueId bv = panels ? *panels : c.b;  // the buffer B is read from
  line(fmt::format("const {}* a = {} + {};", buffer_type(c.a), ptr(c.a), abase));
  line(fmt::format("const {}* b = {} + {};", buffer_type(bv), ptr(bv), bbase));
  // Element (row m + q, col) once, from an accumulator in the compute type, whatever the
  // buffer's type; `at` its output index.
  auto store = [&](const std::string& q, const Index& at_row, const std::string& col,
                   const std::string& acc) {
    std::string row = iadd(m, q);
    std::string v = acc;
    if (c.gemm) {
      v = fmt::format("{} * {}", literal(c.alpha, ct), acc);
      if (c.c != ir::kNoValue && c.beta != 0)
        v += fmt::format(" + {} * ({}){}", literal(c.beta, ct), ct,
                         elem(c.c, broadcast_index(c.c, Index{row, col}, out)));
    }
    Index at = at_row;
    at.push_back(col);
    store_output(out, iadd(imul(iadd(l0, q), N), col), at, v);
  };
  // The output index of row m + q but its column.
  auto row_index = [&](const std::string& q) {
    if (flat) return decompose(iadd(m, q), lead, lead_one);
    Index at = ridx;
    at.back() = iadd(m, q);
    return at;
  };
  if (!b_rows && !dots) {
    open(fmt::format("for (int64_t n = {}; n < {}; ++n)", n0, n1));
    line(fmt::format("const {}* br = b + {};", buffer_type(c.b), imul("n", sbn)));
    line(fmt::format("{} acc = 0;", ct));
    line("#pragma omp simd reduction(+ : acc)");
    line(fmt::format("for (int64_t k = 0; k < {}; ++k) acc += ({})a[{}] * ({})br[k];", K, ct,
                     imul("k", sak), ct));
    store("0", row_index("0"), "n", "acc");
    close();
    return imul(rows, chunks);
  }
  // Where B is transposed: a tile of `tm` rows from row m + `first` by 1 to 4 columns, each
  // output a vector of partial sums along K (the rows of A and B are both contiguous there),
  // added across its lanes at the end.
  auto dot_tile = [&](int lanes, int accumulators, int64_t tm, const std::string& first) {
    const int tn = std::clamp<int>(accumulators / int(tm), 1, std::min(4, lanes));
    auto q = [&](int64_t r) { return iadd(first, std::to_string(r)); };
    open(fmt::format("for (int64_t n = {}; n < {}; n += {})", n0, n1, tn));
    line(fmt::format("const int64_t nb = {} - n < {} ? {} - n : {};", n1, tn, n1, tn));
    // Columns past the chunk's end repeat its last (their sums are not stored).
    for (int h = 0; h < tn; ++h)
      line(fmt::format("const {}* b{} = b + (n + {} < {} ? n + {} : {} - 1) * {};",
                       buffer_type(c.b), h, h, n1, h, n1, sbn));
    for (int64_t r = 0; r < tm; ++r) {
      line(fmt::format("const {}* a{} = a + {};", buffer_type(c.a), r, imul(q(r), sam)));
      for (int h = 0; h < tn; ++h) line(fmt::format("vec acc{}_{} = (vec){{}};", r, h));
    }
    line("int64_t k = 0;");
    open(fmt::format("for (; k + {} <= {}; k += {})", lanes, K, lanes));
    for (int64_t r = 0; r < tm; ++r)
      vector_load(ct, lanes, c.a, fmt::format("a{}v", r), fmt::format("a{} + k", r));
    for (int h = 0; h < tn; ++h)
      vector_load(ct, lanes, c.b, fmt::format("b{}v", h), fmt::format("b{} + k", h));
    for (int64_t r = 0; r < tm; ++r)
      for (int h = 0; h < tn; ++h) line(fmt::format("acc{}_{} += a{}v * b{}v;", r, h, r, h));
    close();
    // Each row's tn vectors added across their lanes, then the tail of K.
    const std::vector<std::string> sums = row_lane_sums(ct, lanes, tm, tn);
    for (int64_t r = 0; r < tm; ++r)
      for (int h = 0; h < tn; ++h)
        line(fmt::format("{} s{}_{} = {}[{}];", ct, r, h, sums[size_t(r)], h));
    open(fmt::format("for (; k < {}; ++k)", K));
    for (int64_t r = 0; r < tm; ++r)
      for (int h = 0; h < tn; ++h)
        line(fmt::format("s{}_{} += ({})a{}[k] * ({})b{}[k];", r, h, ct, r, ct, h));
    close();
    for (int h = 0; h < tn; ++h) {
      open(fmt::format("if ({} < nb)", h));
      for (int64_t r = 0; r < tm; ++r)
        store(q(r), row_index(q(r)), fmt::format("(n + {})", h), fmt::format("s{}_{}", r, h));
      close();
    }
    close();
  };
  // A tile of `tm` rows from row m + `first`, by 2 to 4 vectors of columns.
  RowTile rt;
  rt.ct = ct;
  rt.b_buffer = bv;
  rt.K = K;
  rt.a_step = sak;
  rt.a_row = [&](const std::string& q) { return imul(q, sam); };
  rt.b_step = sbk;
  rt.b_col = bcol;
  rt.panels = panels.has_value();
  rt.n0 = n0;
  rt.n1 = n1;
  rt.what = "MatMul '" + n.name + "'";
  rt.row_store = [&](const std::string& q) {
    const Index at = row_index(q);
    return std::function<void(const std::string&, const std::string&)>(
        [&store, q, at](const std::string& col, const std::string& v) { store(q, at, col, v); });
  };
  row_blocks(
      ct, mb, ragged,
      [&](int lanes, int accumulators, int64_t tm, const std::string& first) {
        if (dots)
          dot_tile(lanes, accumulators, tm, first);
        else
          row_tile(rt, lanes, accumulators, tm, first);
      },
      dots);
  return imul(rows, chunks);
}

void Writer::row_groups(int64_t mb, bool ragged, int64_t tm,
                        const std::function<void(int64_t, const std::string&)>& print) {
  auto whole_block = [&] {
    for (int64_t first = 0; first < mb; first += tm)
      print(std::min(tm, mb - first), std::to_string(first));
  };
  if (!ragged) {
    whole_block();
    return;
  }
  open(fmt::format("if (mr == {})", mb));
  whole_block();
  close();
  open("else");
  line("int64_t mq = 0;");
  if (tm < mb) {
    open(fmt::format("for (; mq + {} <= mr; mq += {})", tm, tm));
    print(tm, "mq");
    close();
  }
  // Fewer than tm rows left: a tile of 4 and one of 2 where they fit (each at most once), so
  // that 64 rows in blocks of 12 do not end in four single rows.
  for (int64_t fewer : {4, 2})
    if (fewer < tm) {
      open(fmt::format("if (mq + {} <= mr)", fewer));
      print(fewer, "mq");
      line(fmt::format("mq += {};", fewer));
      close();
    }
  open("for (; mq < mr; ++mq)");
  print(1, "mq");
  close();
  close();
}

void Writer::row_blocks(const std::string& ct, int64_t mb, bool ragged,
                        const std::function<void(int, int, int64_t, const std::string&)>& print,
                        bool dots) {
  vector_variants(ct, [&](int lanes, int accumulators) {
    // The register tile's rows on this target (see body_matmul_rows).
    const int64_t tm =
        dots ? mb : std::min<int64_t>(mb, accumulators >= kTileAccumulatorsAvx512 ? 4 : 6);
    row_groups(mb, ragged, tm, [&](int64_t rows, const std::string& first) {
      print(lanes, accumulators, rows, first);
    });
  });
}

void Writer::row_tile(const RowTile& t, int lanes, int accumulators, int64_t tm,
                      const std::string& first) {
  const std::string& ct = t.ct;
  // Vectors of columns per row: as many as the register tile's accumulators hold over its
  // rows, at least 2 and at most 4, so that rows of 128 columns still fill whole tiles.
  const int vectors = std::clamp<int>(accumulators / int(tm), 2, 4), tile = vectors * lanes;
  // A panel is whole tiles, so that every load of B lies in it.
  if (t.panels && kPanelWidth % tile != 0)
    throw Error(fmt::format("codegen: {}: a tile of {} columns does not divide a panel of {}",
                            t.what, tile, kPanelWidth),
                Error::Kind::Internal);
  auto acc = [](int64_t r, int h) { return fmt::format("acc{}_{}", r, h); };
  auto q = [&](int64_t r) { return iadd(first, std::to_string(r)); };
  open(fmt::format("for (int64_t n0 = {}; n0 < {}; n0 += {})", t.n0, t.n1, tile));
  line(fmt::format("const int64_t nb = {} - n0 < {} ? {} - n0 : {};", t.n1, tile, t.n1, tile));
  for (int64_t r = 0; r < tm; ++r) {
    line(fmt::format("const int64_t ar{} = {};", r, t.a_row(q(r))));
    for (int h = 0; h < vectors; ++h) line(fmt::format("vec {} = (vec){{}};", acc(r, h)));
  }
  const std::string b_type = buffer_type(t.b_buffer);
  auto reduction = [&](bool whole) {
    open(fmt::format("for (int64_t k = 0; k < {}; ++k)", t.K));
    line(fmt::format("const {}* br = b + {} + {};", b_type, imul("k", t.b_step), t.b_col));
    for (int h = 0; h < vectors; ++h) {
      if (whole && b_type == ct) {
        line(fmt::format("vec x{}; memcpy(&x{}, br + {}, sizeof(vec)); EQF_IN_REGISTER(x{});", h, h,
                         h * lanes, h));
        continue;
      }
      std::string elements;
      for (int u = 0; u < lanes; ++u) {
        int e = h * lanes + u;
        elements +=
            (u ? ", " : "") + (whole ? fmt::format("({})br[{}]", ct, e)
                                     : fmt::format("({} < nb ? ({})br[{}] : ({})0)", e, ct, e, ct));
      }
      line(fmt::format("const vec x{} = {{{}}};", h, elements));
    }
    for (int64_t r = 0; r < tm; ++r) {
      line(fmt::format("const {} a{} = ({})a[{}];", ct, r, ct,
                       iadd("ar" + std::to_string(r), imul("k", t.a_step))));
      for (int h = 0; h < vectors; ++h) line(fmt::format("{} += a{} * x{};", acc(r, h), r, h));
    }
    close();
  };
  if (t.panels) {  // whole loads: a panel's columns past N are zeros
    reduction(true);
  } else {
    open(fmt::format("if (nb == {})", tile));
    reduction(true);
    close();
    open("else");
    reduction(false);
    close();
  }
  // Each row's elements stored (and their epilogue computed) by one loop, not unrolled: the
  // epilogue is printed once per row, and the compiler vectorizes the loop.
  for (int64_t r = 0; r < tm; ++r) {
    const auto store = t.row_store(q(r));
    std::string u = fresh("u"), e = fresh("e");
    // Through an array: indexing the vectors themselves by a variable would keep them in
    // memory for the whole reduction.
    line(fmt::format("{} {}[{}];", ct, e, tile));
    for (int h = 0; h < vectors; ++h)
      line(fmt::format("memcpy({} + {}, &{}, sizeof(vec));", e, h * lanes, acc(r, h)));
    open_vector_store(u, 0, tile, "nb");
    store(fmt::format("(n0 + {})", u), fmt::format("{}[{}]", e, u));
    close();
  }
  close();
}

std::string Writer::lane_sums(int lanes, std::vector<std::string> vectors) {
  // Each vector holds `groups` sums-in-progress of `width` lanes each, side by side; a shuffle of
  // lanes by `pick(j)` for each lane j of the result.
  auto shuffle = [&](const std::string& x, const std::string& y, const auto& pick) {
    std::string mask;
    for (int j = 0; j < lanes; ++j) mask += (j ? ", " : "") + std::to_string(pick(j));
    return fmt::format("EQF_LANES({}, {}, lane_mask, {})", x, y, mask);
  };
  int width = lanes;
  while (vectors.size() > 1) {
    // Two vectors of g groups each become one of 2g groups half as wide: x's then y's.
    const int groups = lanes / width, half = width / 2;
    std::vector<std::string> next;
    for (size_t p = 0; p + 1 < vectors.size(); p += 2) {
      auto pick = [&](int j, int side) {
        const int g = j / half, o = j % half + side * half;
        return g < groups ? g * width + o : lanes + (g - groups) * width + o;
      };
      std::string z = fresh("z");
      line(fmt::format("const vec {} = {} + {};", z,
                       shuffle(vectors[p], vectors[p + 1], [&](int j) { return pick(j, 0); }),
                       shuffle(vectors[p], vectors[p + 1], [&](int j) { return pick(j, 1); })));
      next.push_back(z);
    }
    vectors = std::move(next);
    width = half;
  }
  // One vector of n groups: each group's halves added until a group is one lane.
  const int n = lanes / width;
  std::string z = vectors.front();
  while (width > 1) {
    const int half = width / 2;
    auto pick = [&](int j, int side) {
      const int jj = j % (n * half);
      return jj / half * width + jj % half + side * half;
    };
    std::string y = fresh("z");
    line(fmt::format("const vec {} = {} + {};", y, shuffle(z, z, [&](int j) { return pick(j, 0); }),
                     shuffle(z, z, [&](int j) { return pick(j, 1); })));
    z = y;
    width = half;
  }
  return z;
}

std::vector<std::string> Writer::row_lane_sums(const std::string& ct, int lanes, int64_t rows,
                                               int columns) {
  line(fmt::format("typedef {} lane_mask __attribute__((vector_size(sizeof(vec))));",
                   ct == "double" ? "int64_t" : "int32_t"));
  std::vector<std::string> sums;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<std::string> accs;
    for (int c = 0; c < columns; ++c) accs.push_back(fmt::format("acc{}_{}", r, c));
    sums.push_back(lane_sums(lanes, accs));
  }
  return sums;
}

void Writer::vector_load(const std::string& ct, int lanes, ValueId v, const std::string& name,
                         const std::string& at) {
  if (buffer_type(v) == ct) {
    line(fmt::format("vec {}; memcpy(&{}, {}, sizeof(vec)); EQF_IN_REGISTER({});", name, name, at,
                     name));
    return;
  }
  std::string elements;
  for (int u = 0; u < lanes; ++u)
    elements += fmt::format("{}({})({})[{}]", u ? ", " : "", ct, at, u);
  line(fmt::format("const vec {} = {{{}}};", name, elements));
}

}  // namespace eqfuse::codegen::detail
