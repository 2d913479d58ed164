#include "executors/step_cost.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <vector>

#include "executors/model_cost.h"
#include "proto/json.h"

namespace switchyard::executors {

// ---- RooflineStepCost --------------------------------------------------------------------

Result<RooflineStepCost> RooflineStepCost::Create(const v1::ModelConfig& m, const v1::GpuSpec& g,
                                                  Duration step_overhead) {
  // The per-call roofline validates the same fields (errors name them) and derives the
  // KV bytes per token.
  Result<RooflineCostModel> base = RooflineCostModel::Create(m, g);
  if (!base.ok()) return base.status().Annotate("roofline step cost");
  if (step_overhead < Duration(0))
    return Status::InvalidArgument("roofline step cost: step_overhead must be >= 0 (got " +
                                   FormatDuration(step_overhead) + ")");
  double tp = std::max<uint32_t>(1, m.tensor_parallel());
  RooflineStepCost r;
  r.params_ = static_cast<double>(m.num_parameters());
  r.attention_flops_per_pair_ =
      4.0 * m.num_layers() * static_cast<double>(m.num_attention_heads()) * m.head_dim();
  r.kv_bytes_per_token_ = base->KvBytesPerToken();
  r.flops_rate_ = g.bf16_flops() * g.compute_efficiency() * tp;
  r.bytes_rate_ = g.hbm_bandwidth_bytes_per_s() * g.memory_efficiency() * tp;
  r.overhead_ = step_overhead;
  return r;
}

Result<RooflineStepCost> RooflineStepCost::FromFiles(const std::string& model_json,
                                                     const std::string& gpu_json,
                                                     Duration step_overhead) {
  v1::ModelConfig m;
  v1::GpuSpec g;
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(model_json, &m));
  SY_RETURN_IF_ERROR(proto::ParseJsonFile(gpu_json, &g));
  return Create(m, g, step_overhead);
}

namespace {
double Tokens(const StepShape& s) {
  return static_cast<double>(std::max<int64_t>(0, s.prefill_tokens)) +
         static_cast<double>(std::max(0, s.decode_seqs));
}
}  // namespace

double RooflineStepCost::Flops(const StepShape& s) const {
  double pairs = std::max(0.0, s.prefill_attention) +
                 static_cast<double>(std::max<int64_t>(0, s.kv_tokens_read)) +
                 static_cast<double>(std::max(0, s.decode_seqs));
  return 2.0 * params_ * Tokens(s) + attention_flops_per_pair_ * pairs;
}

double RooflineStepCost::Bytes(const StepShape& s) const {
  double kv = static_cast<double>(std::max<int64_t>(0, s.kv_tokens_read)) + Tokens(s);
  return 2.0 * params_ + static_cast<double>(kv_bytes_per_token_) * kv;
}

Duration RooflineStepCost::StepTime(const StepShape& s) const {
  if (Tokens(s) <= 0) return Duration(0);
  double t = std::max(Flops(s) / flops_rate_, Bytes(s) / bytes_rate_);
  return Seconds(t) + overhead_;
}

// ---- TableStepCost -----------------------------------------------------------------------

namespace {

// Coefficients of a plane: (intercept, prefill, decode, kv, prefill_attention). A
// four-column table leaves the last regressor 0 on every row, so every support that uses
// it is singular and the fit is the four-coefficient one.
constexpr int kColumns = 5;
constexpr int kBaseColumns = 4;  // coefficients a four-column table determines
constexpr const char* kHeader4 = "prefill_tokens,decode_seqs,kv_tokens,step_time_s";
constexpr const char* kHeader5 =
    "prefill_tokens,decode_seqs,kv_tokens,prefill_attention,step_time_s";
const std::vector<std::string_view> kNames4 = {"prefill_tokens", "decode_seqs", "kv_tokens",
                                               "step_time_s"};
const std::vector<std::string_view> kNames5 = {"prefill_tokens", "decode_seqs", "kv_tokens",
                                               "prefill_attention", "step_time_s"};

// One measured row: the design vector (1, prefill, decode, kv, attention) and the time.
struct Row {
  double x[kColumns];
  double t;
};

// The table's layout, from its header.
struct Layout {
  const std::vector<std::string_view>* names = &kNames4;
  const char* header = kHeader4;
  bool attention = false;
};

std::string_view Trim(std::string_view s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

// Splits on commas (no quoting: every cell is a number) and trims every cell.
void SplitCells(std::string_view line, std::vector<std::string_view>* cells) {
  cells->clear();
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    cells->push_back(Trim(line.substr(start, comma - start)));
    if (comma == std::string_view::npos) return;
    start = comma + 1;
  }
}

std::string Where(const std::string& source, int line) {
  return "step table " + source + ":" + std::to_string(line);
}

Status BadCell(const Layout& l, const std::string& source, int line, int col, std::string_view cell,
               const char* want) {
  return Status::InvalidArgument(Where(source, line) + ": column " + std::to_string(col + 1) +
                                 " (" + std::string((*l.names)[col]) + "): '" + std::string(cell) +
                                 "' is not " + want);
}

// Parses one data line into `row`.
Status ParseRow(const Layout& l, const std::vector<std::string_view>& cells,
                const std::string& source, int line, Row* row) {
  const size_t want = l.names->size();
  if (cells.size() != want)
    return Status::InvalidArgument(Where(source, line) + ": expected " + std::to_string(want) +
                                   " columns (" + l.header + "), found " +
                                   std::to_string(cells.size()));
  row->x[0] = 1;
  row->x[4] = 0;
  if (l.attention) {
    std::string_view cell = cells[3];
    double a = 0;
    auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), a);
    if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() ||
        !std::isfinite(a) || a < 0)
      return BadCell(l, source, line, 3, cell, "a non-negative number");
    row->x[4] = a;
  }
  for (int c = 0; c < 3; ++c) {
    std::string_view cell = cells[c];
    int64_t v = 0;
    auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), v);
    if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() || v < 0)
      return BadCell(l, source, line, c, cell, "a non-negative integer");
    row->x[c + 1] = static_cast<double>(v);
  }
  const int tc = static_cast<int>(want) - 1;
  std::string_view cell = cells[tc];
  double t = 0;
  auto [end, ec] = std::from_chars(cell.data(), cell.data() + cell.size(), t);
  if (cell.empty() || ec != std::errc() || end != cell.data() + cell.size() || !std::isfinite(t) ||
      !(t > 0))
    return BadCell(l, source, line, tc, cell, "a positive number of seconds");
  row->t = t;
  return Status::OK();
}

// The layout a header line names, or false.
bool IsHeader(const std::vector<std::string_view>& cells, Layout* l) {
  if (cells == kNames4) {
    *l = Layout{&kNames4, kHeader4, false};
    return true;
  }
  if (cells == kNames5) {
    *l = Layout{&kNames5, kHeader5, true};
    return true;
  }
  return false;
}

Result<std::vector<Row>> ParseTable(std::string_view text, const std::string& source,
                                    Layout* layout) {
  std::vector<Row> rows;
  std::vector<std::string_view> cells;
  bool header = false;
  int line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t nl = text.find('\n', pos);
    std::string_view line =
        Trim(text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos));
    ++line_no;
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    if (line.empty() || line.front() == '#') continue;
    SplitCells(line, &cells);
    if (!header) {
      if (!IsHeader(cells, layout))
        return Status::InvalidArgument(Where(source, line_no) + ": missing header: expected '" +
                                       kHeader4 + "' or '" + kHeader5 + "', found '" +
                                       std::string(line) + "'");
      header = true;
      continue;
    }
    Row row;
    SY_RETURN_IF_ERROR(ParseRow(*layout, cells, source, line_no, &row));
    rows.push_back(row);
  }
  if (!header)
    return Status::InvalidArgument("step table " + source + ": missing header '" + kHeader4 +
                                   "' or '" + kHeader5 + "' (no data lines)");
  return rows;
}

// Solves the k x k system a z = b (Gaussian elimination with partial pivoting). False when
// a pivot falls below `tol` (the columns are dependent).
bool Solve(double a[kColumns][kColumns], double b[kColumns], int k, double tol,
           double z[kColumns]) {
  for (int col = 0; col < k; ++col) {
    int piv = col;
    for (int r = col + 1; r < k; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[piv][col])) piv = r;
    if (std::fabs(a[piv][col]) <= tol) return false;
    if (piv != col) {
      std::swap(a[piv], a[col]);
      std::swap(b[piv], b[col]);
    }
    for (int r = col + 1; r < k; ++r) {
      double f = a[r][col] / a[col][col];
      for (int c = col; c < k; ++c) a[r][c] -= f * a[col][c];
      b[r] -= f * b[col];
    }
  }
  for (int r = k - 1; r >= 0; --r) {
    double s = b[r];
    for (int c = r + 1; c < k; ++c) s -= a[r][c] * z[c];
    z[r] = s / a[r][r];
  }
  return true;
}

// (intercept, prefill, decode, kv, attention) in seconds
using Coef = std::array<double, kColumns>;

double Predict(const Coef& c, const double x[kColumns]) {
  double t = 0;
  for (int j = 0; j < kColumns; ++j) t += c[j] * x[j];
  return t;
}

double MaxPredict(const std::vector<Coef>& planes, const double x[kColumns]) {
  double t = -INFINITY;
  for (const Coef& c : planes) t = std::max(t, Predict(c, x));
  return t;
}

double SumSquares(const std::vector<Row>& rows, const std::vector<Coef>& planes) {
  double sse = 0;
  for (const Row& row : rows) {
    double e = row.t - MaxPredict(planes, row.x);
    sse += e * e;
  }
  return sse;
}

// Normal equations of the rows in `idx`, columns scaled to at most 1 (conditioning).
struct Normal {
  double n[kColumns][kColumns] = {};
  double r[kColumns] = {};
  double scale[kColumns] = {};
  double tol = 0;
};

Normal BuildNormal(const std::vector<Row>& rows, const std::vector<int>& idx) {
  Normal ne;
  for (int j = 0; j < kColumns; ++j) {
    for (int i : idx) ne.scale[j] = std::max(ne.scale[j], rows[i].x[j]);
    if (ne.scale[j] == 0) ne.scale[j] = 1;
  }
  for (int k : idx) {
    double x[kColumns];
    for (int j = 0; j < kColumns; ++j) x[j] = rows[k].x[j] / ne.scale[j];
    for (int i = 0; i < kColumns; ++i) {
      ne.r[i] += x[i] * rows[k].t;
      for (int j = 0; j < kColumns; ++j) ne.n[i][j] += x[i] * x[j];
    }
  }
  double biggest = 0;
  for (int i = 0; i < kColumns; ++i) biggest = std::max(biggest, ne.n[i][i]);
  ne.tol = 1e-10 * biggest;
  return ne;
}

// The unconstrained least-squares fit on the columns in `mask` (others 0), unscaled; false
// when those columns are dependent over the rows.
bool SolveSupport(const Normal& ne, unsigned mask, Coef* out) {
  int idx[kColumns], k = 0;
  for (int j = 0; j < kColumns; ++j)
    if (mask & (1u << j)) idx[k++] = j;
  double a[kColumns][kColumns], b[kColumns], s[kColumns];
  for (int i = 0; i < k; ++i) {
    b[i] = ne.r[idx[i]];
    for (int j = 0; j < k; ++j) a[i][j] = ne.n[idx[i]][idx[j]];
  }
  if (!Solve(a, b, k, ne.tol, s)) return false;
  out->fill(0);
  for (int i = 0; i < k; ++i) (*out)[idx[i]] = s[i] / ne.scale[idx[i]];
  return true;
}

std::vector<int> AllRows(const std::vector<Row>& rows) {
  std::vector<int> idx(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) idx[i] = static_cast<int>(i);
  return idx;
}

// Non-negative least squares of the rows in `idx`: the best feasible support fit.
Coef FitPlane(const std::vector<Row>& rows, const std::vector<int>& idx) {
  Normal ne = BuildNormal(rows, idx);
  Coef best{}, z;
  double best_sse = INFINITY;
  for (unsigned mask = 1; mask < (1u << kColumns); ++mask) {
    if (!SolveSupport(ne, mask, &z)) continue;
    if (std::any_of(z.begin(), z.end(), [](double v) { return v < 0; })) continue;
    double sse = 0;
    for (int i : idx)
      sse += (rows[i].t - Predict(z, rows[i].x)) * (rows[i].t - Predict(z, rows[i].x));
    if (sse < best_sse) {
      best_sse = sse;
      best = z;
    }
  }
  return best;
}

// Two planes are kept only when they cut the squared error of one by this factor.
constexpr double kTwoPlaneGain = 0.9;
constexpr int kMaxPartitionRounds = 32;

// Least-squares partition from a first split `side`: fit a plane to each side, move every
// row to the side whose plane is higher there, repeat until stable (or a side has fewer
// rows than coefficients). Updates `best`.
void RefinePartition(const std::vector<Row>& rows, size_t coefs, std::vector<char> side,
                     std::vector<Coef>* best, double* best_sse) {
  for (int round = 0; round < kMaxPartitionRounds; ++round) {
    std::vector<int> idx[2];
    for (size_t i = 0; i < rows.size(); ++i) idx[side[i] ? 1 : 0].push_back(static_cast<int>(i));
    if (idx[0].size() < coefs || idx[1].size() < coefs) return;  // too few to fit
    std::vector<Coef> two{FitPlane(rows, idx[0]), FitPlane(rows, idx[1])};
    double sse = SumSquares(rows, two);
    if (sse < *best_sse) {
      *best_sse = sse;
      *best = two;
    }
    bool changed = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      char s = Predict(two[1], rows[i].x) > Predict(two[0], rows[i].x);
      changed |= s != side[i];
      side[i] = s;
    }
    if (!changed) return;
  }
}

// One non-negative plane, or the max of two (see the header comment). The partition starts
// from four splits (rows above the single plane; rows above the median of each input) and
// keeps the best.
std::vector<Coef> FitPlanes(const std::vector<Row>& rows, int coefs) {
  Coef one = FitPlane(rows, AllRows(rows));
  const double sse1 = SumSquares(rows, {one});
  double total = 0;
  for (const Row& row : rows) total += row.t * row.t;
  if (sse1 <= 1e-18 * total) return {one};  // linear to rounding
  std::vector<Coef> best{one};
  double best_sse = sse1;
  std::vector<char> side(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) side[i] = rows[i].t > Predict(one, rows[i].x);
  RefinePartition(rows, static_cast<size_t>(coefs), side, &best, &best_sse);
  for (int j = 1; j < coefs; ++j) {
    std::vector<double> v;
    for (const Row& row : rows) v.push_back(row.x[j]);
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    double median = v[v.size() / 2];
    for (size_t i = 0; i < rows.size(); ++i) side[i] = rows[i].x[j] > median;
    RefinePartition(rows, static_cast<size_t>(coefs), side, &best, &best_sse);
  }
  if (best.size() == 2 && !(best_sse < kTwoPlaneGain * sse1)) return {one};
  return best;
}

TableStepCost::Plane ToPlane(const Coef& c) {
  return TableStepCost::Plane{c[0], c[1], c[2], c[3], c[4]};
}

}  // namespace

Result<TableStepCost> TableStepCost::FromFile(const std::string& path) {
  SY_ASSIGN_OR_RETURN(std::string text, proto::ReadFile(path));
  return FromText(text, path);
}

Result<TableStepCost> TableStepCost::FromText(std::string_view text,
                                              const std::string& source_name) {
  Layout layout;
  SY_ASSIGN_OR_RETURN(std::vector<Row> rows, ParseTable(text, source_name, &layout));
  const int coefs = layout.attention ? kColumns : kBaseColumns;
  if (rows.size() < static_cast<size_t>(coefs))
    return Status::InvalidArgument("step table " + source_name + ": " +
                                   std::to_string(rows.size()) + " rows; the fit needs at least " +
                                   std::to_string(coefs));
  Coef unused;
  if (!SolveSupport(BuildNormal(rows, AllRows(rows)), (1u << coefs) - 1, &unused))
    return Status::InvalidArgument(
        "step table " + source_name +
        (layout.attention ? ": the rows do not determine the fit: vary prefill_tokens, "
                            "decode_seqs, kv_tokens and prefill_attention (the prefill's "
                            "cached tokens) independently"
                          : ": the rows do not determine the fit: vary prefill_tokens, "
                            "decode_seqs and kv_tokens independently"));
  TableStepCost t;
  t.attention_column_ = layout.attention;
  for (const Coef& c : FitPlanes(rows, coefs)) t.planes_.push_back(ToPlane(c));
  t.rows_ = rows.size();
  t.min_time_s_ = std::min_element(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
                    return a.t < b.t;
                  })->t;
  t.source_ = source_name;
  return t;
}

double TableStepCost::Plane::Seconds(const StepShape& s) const {
  return intercept_s +
         per_prefill_token_s * static_cast<double>(std::max<int64_t>(0, s.prefill_tokens)) +
         per_decode_seq_s * static_cast<double>(std::max(0, s.decode_seqs)) +
         per_kv_token_s * static_cast<double>(std::max<int64_t>(0, s.kv_tokens_read)) +
         per_prefill_attention_s * std::max(0.0, s.prefill_attention);
}

Duration TableStepCost::StepTime(const StepShape& s) const {
  if (Tokens(s) <= 0) return Duration(0);
  double t = min_time_s_;
  for (const Plane& p : planes_) t = std::max(t, p.Seconds(s));
  return ::switchyard::Seconds(t);
}

}  // namespace switchyard::executors
