// load_linear and Linear::forward.
#include "model/layers/linear.h"

#include "kernels/linear.h"

namespace sgl::model {

void Linear::forward(const Tensor& x, const Tensor& y, backend::Stream stream) const {
  kernels::linear(x, weight, bias.tensor(), y, stream);
}

Status load_linear(WeightLoader& weights, const LinearSpec& spec, Linear& out) {
  SGL_CHECK(!spec.modules.empty() && spec.modules.size() == spec.out_features.size());
  // NOTE: a tensor-parallel rank would narrow the shapes (and rows read) here, by spec.shard.
  if (spec.modules.size() == 1) {
    SGL_ASSIGN_OR_RETURN(out.weight, weights.load(spec.modules[0] + ".weight",
                                                  {spec.out_features[0], spec.in_features}));
    if (spec.bias) {
      SGL_ASSIGN_OR_RETURN(out.bias,
                           weights.load(spec.modules[0] + ".bias", {spec.out_features[0]}));
    }
    return Status::ok_status();
  }
  std::vector<std::string> names, bias_names;
  std::vector<std::vector<int64_t>> shapes, bias_shapes;
  for (size_t i = 0; i < spec.modules.size(); ++i) {
    names.push_back(spec.modules[i] + ".weight");
    shapes.push_back({spec.out_features[i], spec.in_features});
    bias_names.push_back(spec.modules[i] + ".bias");
    bias_shapes.push_back({spec.out_features[i]});
  }
  SGL_ASSIGN_OR_RETURN(out.weight, weights.load_concat(names, shapes));
  if (spec.bias) {
    SGL_ASSIGN_OR_RETURN(out.bias, weights.load_concat(bias_names, bias_shapes));
  }
  return Status::ok_status();
}

}  // namespace sgl::model
