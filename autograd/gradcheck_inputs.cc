#include "autograd/gradcheck_inputs.h"

#include <utility>

namespace attograd::gradcheck_inputs {

Tensor param(const Shape& shape, Generator& gen, DType dtype) {
  return Tensor::randn(shape, gen, dtype).set_requires_grad();
}

Tensor param_in(const Shape& shape, Generator& gen, DType dtype, double low, double high) {
  return Tensor::uniform(shape, gen, low, high, dtype).set_requires_grad();
}

Tensor param_away_from_zero(const Shape& shape, Generator& gen, DType dtype) {
  Tensor t = Tensor::uniform(shape, gen, 0.2, 1.5, dtype);
  std::vector<double> v = t.to_vector();
  for (double& x : v) x = gen.uniform() < 0.5 ? -x : x;
  return Tensor::from_vector(v, shape, dtype).set_requires_grad();
}

Tensor param_distinct(const Shape& shape, Generator& gen, DType dtype, double gap) {
  const int64_t n = shape_numel(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = gap * (static_cast<double>(i) - static_cast<double>(n - 1) / 2);
  for (int64_t i = n - 1; i > 0; --i)  // Fisher-Yates
    std::swap(v[static_cast<size_t>(i)],
              v[static_cast<size_t>(gen.below(static_cast<uint64_t>(i) + 1))]);
  return Tensor::from_vector(v, shape, dtype).set_requires_grad();
}

Tensor random_ids(const Shape& shape, int64_t n, Generator& gen) {
  std::vector<int64_t> ids(static_cast<size_t>(shape_numel(shape)));
  for (int64_t& v : ids) v = static_cast<int64_t>(gen.below(static_cast<uint64_t>(n)));
  return Tensor::from_ids(ids, shape);
}

Tensor targets_with_ignored(const Shape& shape, int64_t V, Generator& gen) {
  std::vector<int64_t> t = random_ids(shape, V, gen).to_ids();
  if (t.size() >= 2) t[1] = t.back() = -1;
  return Tensor::from_ids(t, shape);
}

int64_t heads_for(int64_t C) { return C % 2 == 0 ? 2 : 1; }

GradcheckCase unary_case(std::function<Tensor(const Tensor&)> f, double low, double high) {
  return {"(B, T, C)",
          [low, high](Generator& g, DType d, const Sizes& s) {
            return Inputs{param_in({s.B, s.T, s.C}, g, d, low, high)};
          },
          [f = std::move(f)](const Inputs& in) { return f(in[0]); }};
}

GradcheckCase params_case(std::string label, std::function<Shapes(const Sizes&)> shapes,
                          GradcheckFn f) {
  return {std::move(label),
          [shapes = std::move(shapes)](Generator& g, DType d, const Sizes& s) {
            Inputs in;
            for (const Shape& shape : shapes(s)) in.push_back(param(shape, g, d));
            return in;
          },
          std::move(f)};
}

}  // namespace attograd::gradcheck_inputs
