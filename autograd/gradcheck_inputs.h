// Sample inputs for the gradcheck cases of the op registry (op_registry.h): the helpers each
// ops_*.cc file builds its entries' cases from.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "autograd/op_registry.h"
#include "autograd/random.h"
#include "autograd/tensor.h"

namespace attograd::gradcheck_inputs {

using Inputs = std::vector<Tensor>;
using Sizes = GradcheckSizes;
using Shapes = std::vector<Shape>;

/// A differentiable N(0, 1) input of `shape`.
Tensor param(const Shape& shape, Generator& gen, DType dtype);

/// A differentiable input with values uniform in [low, high): keeps log, sqrt, pow and
/// division away from their singularities.
Tensor param_in(const Shape& shape, Generator& gen, DType dtype, double low, double high);

/// A differentiable input with |x| uniform in [0.2, 1.5) and a random sign: keeps relu away
/// from its kink at 0 and a divisor away from 0.
Tensor param_away_from_zero(const Shape& shape, Generator& gen, DType dtype);

/// A differentiable input whose values are all different, at least `gap` apart (a random
/// permutation of gap * (i - (numel - 1) / 2)): for max, whose gradient goes to the largest of
/// a row, so that x ± eps never changes which one that is (with N(0, 1) inputs, near ties in a
/// 16-wide row flipped within f32's step, eps = 5e-3, and the check failed).
Tensor param_distinct(const Shape& shape, Generator& gen, DType dtype, double gap);

/// i64 ids of `shape`, each uniform in [0, n): indices and targets.
Tensor random_ids(const Shape& shape, int64_t n, Generator& gen);

/// Targets in [0, V) of `shape` with the second and the last set to -1, the losses' default
/// ignore_index; with a single target (`attograd gradcheck -B 1 -T 1`) none is ignored, since a
/// loss with every target ignored has no gradient to check.
Tensor targets_with_ignored(const Shape& shape, int64_t V, Generator& gen);

/// The heads the attention cases split C channels into: 2, or 1 when C is odd
/// (`attograd gradcheck -C` takes any C from 2 to 16).
int64_t heads_for(int64_t C);

/// The case of a one-input function on a (B, T, C) input uniform in [low, high).
GradcheckCase unary_case(std::function<Tensor(const Tensor&)> f, double low = -2, double high = 2);

/// The case of f on differentiable N(0, 1) inputs of the shapes `shapes` gives for the sizes.
GradcheckCase params_case(std::string label, std::function<Shapes(const Sizes&)> shapes,
                          GradcheckFn f);

}  // namespace attograd::gradcheck_inputs
