#include <wick/nn/staged_model.h>

#include <algorithm>
#include <limits>
#include <map>

#include <wick/autograd/ops.h>
#include <wick/tensor/error.h>

namespace wick {

std::vector<size_t> check_stages(const std::vector<StagedLayer>& layers, const std::vector<size_t>& stage_starts,
                                 size_t num_devices) {
  WICK_CHECK(!layers.empty(), "StagedModel: no layers");
  WICK_CHECK(!stage_starts.empty() && stage_starts[0] == 0, "StagedModel: the first stage must start at layer 0");
  WICK_CHECK(stage_starts.size() == num_devices, "StagedModel: ", stage_starts.size(), " stages but ", num_devices,
             " devices");
  for (size_t s = 1; s < stage_starts.size(); ++s)
    WICK_CHECK(stage_starts[s] > stage_starts[s - 1] && stage_starts[s] < layers.size(), "StagedModel: stage ", s,
               " starts at layer ", stage_starts[s], "; stages must start in ascending order within the ",
               layers.size(), " layers, each holding at least one layer");
  std::vector<size_t> stage_of;
  size_t stage = 0;
  for (size_t l = 0; l < layers.size(); ++l) {
    if (stage + 1 < stage_starts.size() && l == stage_starts[stage + 1]) ++stage;
    stage_of.push_back(stage);
  }
  auto where = [&](size_t l) {
    return "layer " + std::to_string(l) + " (" + layers[l].module->type_name() + ", stage " +
           std::to_string(stage_of[l]) + ")";
  };
  // Where each name is produced, to tell a missing dependency from a cycle.
  std::map<std::string, size_t> producer;
  for (size_t l = 0; l < layers.size(); ++l) {
    WICK_CHECK(layers[l].module != nullptr, "StagedModel: layer ", l, " has no module");
    for (const std::string& name : layers[l].outputs) {
      auto [it, fresh] = producer.emplace(name, l);
      WICK_CHECK(fresh, "StagedModel: layers ", it->second, " and ", l, " both produce '", name, "'");
    }
  }
  for (size_t l = 0; l < layers.size(); ++l)
    for (const std::string& name : layers[l].dependencies) {
      auto it = producer.find(name);
      WICK_CHECK(it != producer.end(), "StagedModel: ", where(l), " depends on '", name,
                 "', which no layer produces");
      WICK_CHECK(it->second < l, "StagedModel: ", where(l), " depends on '", name, "', which ", where(it->second),
                 " produces after it (a cycle)");
    }
  return stage_of;
}

Variable forward_layer(const Variable& input, size_t layer, const StagedLayer& spec, size_t stage) {
  try {
    return spec.module->forward(input);
  } catch (const Error& e) {
    throw Error("layer " + std::to_string(layer) + " (" + spec.module->type_name() + ", stage " +
                std::to_string(stage) + ") refused its input " + dtype_name(input.dtype()) + " " +
                shape_str(input.shape()) + ": " + e.what());
  }
}

Variable add_dependency(const Variable& output, const Variable& dependency, size_t layer, const StagedLayer& spec,
                        const std::string& name, size_t stage) {
  WICK_CHECK(dependency.shape() == output.shape(), "StagedModel: layer ", layer, " (", spec.module->type_name(),
             ", stage ", stage, ") gives shape ", shape_str(output.shape()), " but its dependency '", name, "' has shape ",
             shape_str(dependency.shape()));
  return add(output, dependency.device() == output.device() ? dependency : wick::to(dependency, output.device()));
}

StagedModel::StagedModel(std::vector<StagedLayer> layers, std::vector<size_t> stage_starts,
                         std::vector<Device> devices)
    : layers_(std::move(layers)), devices_(std::move(devices)) {
  stage_of_ = check_stages(layers_, stage_starts, devices_.size());
  for (size_t l = 0; l < layers_.size(); ++l) {
    layers_[l].module->to(devices_[stage_of_[l]]);
    register_module(std::to_string(l), layers_[l].module);
  }
}

std::shared_ptr<StagedModel> StagedModel::place(const Sequential& model, std::vector<Device> devices) {
  std::vector<StagedLayer> layers;
  std::vector<int64_t> sizes;
  for (const auto& m : model) {
    layers.push_back({m, {}, {}});
    int64_t n = 0;
    for (const Variable& p : m->parameters()) n += p.numel();
    sizes.push_back(n);
  }
  return std::make_shared<StagedModel>(std::move(layers), balanced_stage_starts(sizes, devices.size()),
                                       std::move(devices));
}

Variable StagedModel::forward(const Variable& x) {
  std::map<std::string, Variable> kept;
  Variable h = x;
  for (size_t l = 0; l < layers_.size(); ++l) {
    const Device device = devices_[stage_of_[l]];
    if (h.device() != device) h = wick::to(h, device);
    h = forward_layer(h, l, layers_[l], stage_of_[l]);
    for (const std::string& name : layers_[l].dependencies)
      h = add_dependency(h, kept.at(name), l, layers_[l], name, stage_of_[l]);
    for (const std::string& name : layers_[l].outputs) kept[name] = h;
  }
  return h;
}

// The contiguous split that minimises the largest stage (dynamic programming over the
// layers; models have tens to hundreds of layers).
std::vector<size_t> balanced_stage_starts(const std::vector<int64_t>& layer_sizes, size_t stages) {
  const size_t n = layer_sizes.size();
  WICK_CHECK(stages >= 1 && stages <= n, "StagedModel: cannot split ", n, " layers into ", stages, " stages");
  std::vector<int64_t> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_sizes[i];
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  // cost[k][i]: the smallest largest stage when the first i layers form k stages; cut[k][i]
  // where the last of those stages starts.
  std::vector<std::vector<int64_t>> cost(stages + 1, std::vector<int64_t>(n + 1, kNone));
  std::vector<std::vector<size_t>> cut(stages + 1, std::vector<size_t>(n + 1, 0));
  cost[0][0] = 0;
  for (size_t k = 1; k <= stages; ++k)
    for (size_t i = k; i <= n; ++i)
      for (size_t m = k - 1; m < i; ++m) {
        if (cost[k - 1][m] == kNone) continue;
        const int64_t c = std::max(cost[k - 1][m], prefix[i] - prefix[m]);
        if (c <= cost[k][i]) {  // on ties the later cut: earlier stages take more
          cost[k][i] = c;
          cut[k][i] = m;
        }
      }
  std::vector<size_t> starts(stages);
  for (size_t k = stages, i = n; k >= 1; --k) {
    starts[k - 1] = cut[k][i];
    i = cut[k][i];
  }
  return starts;
}

}  // namespace wick
