#include "lecture/attention_by_hand.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "autograd/ops.h"
#include "autograd/size_math.h"
#include "gpt/io/decimal.h"
#include "nn/io/utf8.h"

namespace attograd::lecture {

Tensor causal_average(const Tensor& x) {
  const int64_t T = x.size(0);
  const Tensor weights =
      softmax(causal_mask(Tensor::zeros({T, T}, x.dtype())));  // uniform over the past
  return matmul(weights, x);
}

AttentionSteps causal_attention_steps(const Tensor& Q, const Tensor& K, const Tensor& V) {
  AttentionSteps s;
  const double d_k = static_cast<double>(Q.size(-1));
  s.qk = matmul(Q, transpose(K, -2, -1));
  s.scores = mul_scalar(s.qk, 1.0 / std::sqrt(d_k));
  // Finite inputs can still multiply past the largest double; softmax would then give NaN.
  for (const double v : s.qk.to_vector())
    if (!std::isfinite(v))
      throw std::invalid_argument(
          "Q Kᵀ overflows: a dot product of a query and a key is not a finite number; use "
          "entries of --Q and --K below about 1e150");
  s.masked = causal_mask(s.scores);
  s.weights = softmax(s.masked);
  s.out = matmul(s.weights, V);
  for (const double v : s.out.to_vector())
    if (!std::isfinite(v))
      throw std::invalid_argument(
          "weights V overflows: an output is not a finite number; use smaller entries of --V");
  s.column_weights = column_softmax(s.masked);
  s.column_out = matmul(s.column_weights, V);
  for (const double v : s.column_out.to_vector())
    if (!std::isfinite(v))
      throw std::invalid_argument(
          "(column softmax) V overflows: the mistake's weights sum to up to T per row, so an "
          "output is not a finite number; use smaller entries of --V");
  return s;
}

namespace {

// The shortest of %.15g, %.16g, %.17g that reads back to x (%.17g always does): 0.1 stays
// "0.1", and a program reading the JSON gets the very double printed.
std::string round_trip(double x) {
  char buf[32];
  for (int digits = 15;; ++digits) {
    std::snprintf(buf, sizeof buf, "%.*g", digits, x);
    if (digits == 17 || std::strtod(buf, nullptr) == x) return buf;
  }
}

// A 2-D tensor as a JSON list of rows; -inf (a masked score) as null.
std::string json_matrix(const Tensor& t) {
  const std::vector<double> v = t.to_vector();
  const int64_t rows = t.size(0), cols = t.size(1);
  std::string out = "[";
  for (int64_t r = 0; r < rows; ++r) {
    out += r ? ", [" : "[";
    for (int64_t c = 0; c < cols; ++c) {
      const double x = v[static_cast<size_t>(r * cols + c)];
      if (c) out += ", ";
      if (std::isinf(x) && x < 0) {
        out += "null";
        continue;
      }
      out += round_trip(x);
    }
    out += "]";
  }
  return out + "]";
}

}  // namespace

std::string attention_steps_json(const Tensor& Q, const Tensor& K, const Tensor& V) {
  const AttentionSteps s = causal_attention_steps(Q, K, V);
  const std::pair<const char*, const Tensor*> fields[] = {{"Q", &Q},
                                                          {"K", &K},
                                                          {"V", &V},
                                                          {"S", &s.qk},
                                                          {"S_scaled", &s.scores},
                                                          {"masked", &s.masked},
                                                          {"A", &s.weights},
                                                          {"Z", &s.out},
                                                          {"column_A", &s.column_weights},
                                                          {"column_Z", &s.column_out}};
  std::string out = "{\"d_k\": " + std::to_string(Q.size(1));
  for (const auto& [name, t] : fields)
    out += ",\n \"" + std::string(name) + "\": " + json_matrix(*t);
  return out + "}\n";
}

Tensor column_softmax(const Tensor& masked) {
  return transpose(softmax(transpose(masked, -2, -1)), -2, -1);
}

Tensor self_attention(const Tensor& x, bool causal) {
  const Tensor scores =
      mul_scalar(matmul(x, transpose(x, -2, -1)), 1.0 / std::sqrt(static_cast<double>(x.size(-1))));
  return matmul(softmax(causal ? causal_mask(scores) : scores), x);
}

Tensor embed_words(const std::vector<std::string>& words) {
  std::vector<double> rows;
  for (const std::string& w : words) {
    if (w == "dog")
      rows.insert(rows.end(), {1.0, 0.2});
    else if (w == "bites")
      rows.insert(rows.end(), {-0.3, 0.8});
    else if (w == "man")
      rows.insert(rows.end(), {0.5, -1.1});
    else
      throw std::invalid_argument("embed_words: '" + w +
                                  "' is not in the toy vocabulary {dog, bites, man}");
  }
  return Tensor::from_vector(rows, {static_cast<int64_t>(words.size()), 2}, DType::f64);
}

std::vector<ScalingRow> measure_scaling(const std::vector<int64_t>& d_ks, int64_t T, int64_t draws,
                                        uint64_t seed) {
  if (T < 2 || draws < 1)
    throw std::invalid_argument("measure_scaling: T = " + std::to_string(T) +
                                ", draws = " + std::to_string(draws) +
                                "; need T >= 2 keys (one key always gets weight 1) and draws >= 1");
  Generator gen(seed);
  std::vector<ScalingRow> rows;
  for (const int64_t d_k : d_ks) {
    if (d_k < 1)
      throw std::invalid_argument("measure_scaling: d_k = " + std::to_string(d_k) +
                                  ", need d_k >= 1");
    const Tensor q = Tensor::randn({draws, 1, d_k}, gen, DType::f64);
    const Tensor k = Tensor::randn({draws, T, d_k}, gen, DType::f64);
    const Tensor scores = matmul(q, transpose(k, -2, -1));  // (draws, 1, T)
    const std::vector<double> s = scores.to_vector();
    double m = 0, m2 = 0;
    for (double v : s) m += v;
    m /= static_cast<double>(s.size());
    for (double v : s) m2 += (v - m) * (v - m);
    ScalingRow row;
    row.d_k = d_k;
    row.score_variance = m2 / static_cast<double>(s.size());
    row.mean_max_unscaled = mean(max(softmax(scores), -1)).item();
    row.mean_max_scaled =
        mean(max(softmax(mul_scalar(scores, 1.0 / std::sqrt(static_cast<double>(d_k)))), -1))
            .item();
    rows.push_back(row);
  }
  return rows;
}

namespace {

// L = Σ out for one query (1, d_k) over keys K and values V.
double readout(const Tensor& q, const Tensor& K, const Tensor& V) {
  return sum(causal_attention_steps(q, K, V).out).item();
}

// x without row j.
Tensor drop_row(const Tensor& x, int64_t j) {
  const Tensor parts[] = {slice(x, 0, 0, j), slice(x, 0, j + 1, x.size(0))};
  return j == 0 ? parts[1] : j == x.size(0) - 1 ? parts[0] : concat(parts, 0);
}

}  // namespace

std::vector<KeyAttribution> attribute_keys(const Tensor& q, const Tensor& K, const Tensor& V) {
  if (q.size(0) != 1 || K.size(0) < 2)
    throw std::invalid_argument("attribute_keys: need one query and at least two keys, got q " +
                                shape_str(q.shape()) + " and K " + shape_str(K.shape()));
  if (q.size(1) != K.size(1) || K.size(0) != V.size(0))
    throw std::invalid_argument("attribute_keys: q " + shape_str(q.shape()) + ", K " +
                                shape_str(K.shape()) + " and V " + shape_str(V.shape()) +
                                " do not fit: q and K need the same d_k, K and V the same rows");
  const Tensor v = V.clone().set_requires_grad();
  const AttentionSteps s = causal_attention_steps(q, K, v);
  sum(s.out).backward();
  const double L = sum(s.out).item();
  const std::vector<double> w = s.weights.to_vector(), g = v.grad().to_vector(),
                            values = V.to_vector();
  const int64_t Tk = K.size(0), d_v = V.size(1);
  std::vector<KeyAttribution> out(static_cast<size_t>(Tk));
  for (int64_t j = 0; j < Tk; ++j) {
    KeyAttribution& a = out[static_cast<size_t>(j)];
    a.weight = w[static_cast<size_t>(j)];
    for (int64_t c = 0; c < d_v; ++c)
      a.grad_x_input +=
          g[static_cast<size_t>(j * d_v + c)] * values[static_cast<size_t>(j * d_v + c)];
    std::vector<double> zeroed = values;
    std::fill_n(zeroed.begin() + j * d_v, d_v, 0.0);
    a.zero_value_change = readout(q, K, Tensor::from_vector(zeroed, V.shape(), DType::f64)) - L;
    a.remove_key_change = readout(q, drop_row(K, j), drop_row(V, j)) - L;
  }
  return out;
}

AttentionCost attention_cost(int64_t T, int64_t head_dim, int64_t bytes_per_element) {
  if (T < 1 || head_dim < 1 || bytes_per_element < 1)
    throw std::invalid_argument(
        "attention_cost: T, head_dim and bytes_per_element must be >= 1, got " + std::to_string(T) +
        ", " + std::to_string(head_dim) + ", " + std::to_string(bytes_per_element));
  const int64_t TT = checked_mul(T, T, "attention_cost: T*T");
  return {T,
          checked_mul(checked_mul(TT, int64_t{2}, "attention_cost: bytes"), bytes_per_element,
                      "attention_cost: bytes"),
          checked_mul(checked_mul(TT, int64_t{4}, "attention_cost: flops"), head_dim,
                      "attention_cost: flops")};
}

namespace {

std::string_view trim(std::string_view s) {
  const auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; };
  while (!s.empty() && blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && blank(s.back())) s.remove_suffix(1);
  return s;
}

// The text with every line break that ends a row turned into ';': a matrix typed one row a line
// (as a student writes it in the page's boxes) reads as the same matrix. A line break right
// after a ';' ("1, 0;" then "0, 1") or after another break (a blank line) ends no second row,
// and those at the ends go with trim.
std::string rows_on_lines(std::string_view text) {
  std::string out;
  char last = ';';  // the last character written that is not blank; ';' at the start
  for (const char c : trim(text)) {
    const bool line_break = c == '\n' || c == '\r';
    out += line_break ? (last == ';' ? ' ' : ';') : c;
    if (line_break)
      last = ';';
    else if (c != ' ' && c != '\t')
      last = c;
  }
  return out;
}

// Splits on `sep`, keeping empty fields (so "1,,2" reports its empty field).
std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (size_t start = 0;;) {
    const size_t end = s.find(sep, start);
    out.push_back(
        s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start));
    if (end == std::string_view::npos) return out;
    start = end + 1;
  }
}

}  // namespace

Tensor parse_matrix(const std::string& text, const std::string& name) {
  const std::string how =
      " (write rows separated by ';' or on separate lines, and numbers by ',', e.g. "
      "\"1,0;0,1;1,1\")";
  if (trim(text).empty()) throw std::invalid_argument(name + " is empty" + how);
  std::vector<double> values;
  size_t cols = 0;
  // A ';' after the last row, or a ',' after a row's last number, ends it as a line break does
  // ("1;2;" as "1" "2" on two lines): a separator typed at the end is no empty row or number.
  std::string rows_text = rows_on_lines(text);
  if (rows_text.size() > 1 && rows_text.back() == ';') rows_text.pop_back();
  const std::vector<std::string_view> rows = split(rows_text, ';');
  // Refused before a number is read: a pasted 2,000-row matrix made 570 MB of T x T tables
  // and a 100 MB answer for the page (issue 31, kind 12).
  const std::string limit = std::to_string(kMaxMatrixSide);
  if (rows.size() > kMaxMatrixSide)
    throw std::invalid_argument(name + " has " + std::to_string(rows.size()) + " rows: at most " +
                                limit + " are read (T <= " + limit +
                                "), so that every T x T table of the steps stays readable; "
                                "remove rows");
  for (size_t r = 0; r < rows.size(); ++r) {
    std::vector<std::string_view> fields = split(rows[r], ',');
    if (fields.size() > 1 && trim(fields.back()).empty()) fields.pop_back();
    if (fields.size() > kMaxMatrixSide)
      throw std::invalid_argument(name + ": row " + std::to_string(r + 1) + " has " +
                                  std::to_string(fields.size()) + " numbers: at most " + limit +
                                  " are read (d_k and d_v <= " + limit + "); remove columns");
    for (std::string_view f : fields) {
      f = trim(f);
      const std::optional<double> v = gpt::parse_decimal(f);
      if (!v)
        throw std::invalid_argument(name + ": row " + std::to_string(r + 1) + ": '" +
                                    nn::escape_controls(f.substr(0, 40)) +
                                    "' is not a finite number" + how);
      values.push_back(*v);
    }
    if (r == 0)
      cols = fields.size();
    else if (fields.size() != cols)
      throw std::invalid_argument(
          name + ": row " + std::to_string(r + 1) + " has " + std::to_string(fields.size()) +
          (fields.size() == 1 ? " number" : " numbers") + " but row 1 has " + std::to_string(cols) +
          "; every row needs the same count" + how);
  }
  return Tensor::from_vector(
      values, {static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)}, DType::f64);
}

void check_attention_shapes(const Tensor& Q, const Tensor& K, const Tensor& V) {
  const auto dims = [](const Tensor& t) {
    return std::to_string(t.size(0)) + "x" + std::to_string(t.size(1));
  };
  if (Q.size(1) != K.size(1))
    throw std::invalid_argument("Q is " + dims(Q) + " and K is " + dims(K) +
                                ": q·k needs queries and keys of the same length d_k (give Q and K "
                                "the same number of columns)");
  if (Q.size(0) != K.size(0) || K.size(0) != V.size(0))
    throw std::invalid_argument("Q is " + dims(Q) + ", K is " + dims(K) + " and V is " + dims(V) +
                                ": self-attention has one query, key and value per token (give Q, "
                                "K and V the same number of rows T)");
}

}  // namespace attograd::lecture
