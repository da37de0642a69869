#pragma once
// StagedModel: one model split into stages of consecutive layers, each stage on its own
// device (model parallelism in one process: CPU and GPUs, or several GPUs). Activations
// move to the next stage's device with the differentiable to(device), so plain autograd
// trains it: loss.backward() sends every gradient back across the devices.
//
// Layers may also consume the outputs of earlier layers (residual connections, masks), by
// name, as the seed's `out_variables` / `dependencies` do; such a skip goes straight from
// the producer's device to the consumer's:
//
//   std::vector<StagedLayer> layers = {
//       {linear(1, 512)}, {relu()}, {linear(512, 512), {}, {"res_1"}}, {relu()},
//       {linear(512, 512)}, {relu()}, {linear(512, 512), {"res_1"}}, {relu()},
//       {linear(512, 1)}, {sigmoid()}};
//   StagedModel model(layers, {0, 4, 7}, {Device::cpu(), Device::cuda(0), Device::cuda(1)});
//
// A layer's dependencies are added to its output: y = layer(x) + d1 + d2 + ... (each of
// the same shape as the output). Its parameters are named as in a Sequential of the same
// layers ("0.weight", "6.bias"), so state dicts move between the staged and the unsplit
// model. Everything is checked at construction: a dependency no earlier layer produces
// (also one only a later layer produces: a cycle), a name produced twice, stages that are
// empty, unordered or without a device.
#include <memory>
#include <string>
#include <vector>

#include <wick/nn/containers.h>

namespace wick {

struct StagedLayer {
  std::shared_ptr<UnaryModule> module;
  std::vector<std::string> dependencies;  // outputs of earlier layers, added to this one's
  std::vector<std::string> outputs;       // names later layers can depend on
};

class StagedModel : public UnaryModule {
 public:
  // `stage_starts`: the index of each stage's first layer (the first is 0), ascending;
  // `devices`: one per stage. The layers' parameters and buffers move to their stage's
  // device.
  StagedModel(std::vector<StagedLayer> layers, std::vector<size_t> stage_starts, std::vector<Device> devices);
  // The layers of `model`, split into devices.size() stages of consecutive layers, the
  // largest stage (in parameters) as small as possible.
  static std::shared_ptr<StagedModel> place(const Sequential& model, std::vector<Device> devices);

  const char* type_name() const override { return "StagedModel"; }
  Variable forward(const Variable& x) override;

  size_t num_layers() const { return layers_.size(); }
  size_t num_stages() const { return devices_.size(); }
  size_t stage_of(size_t layer) const { return stage_of_.at(layer); }
  Device device(size_t stage) const { return devices_.at(stage); }
  const StagedLayer& layer(size_t i) const { return layers_.at(i); }

 private:
  std::vector<StagedLayer> layers_;
  std::vector<size_t> stage_of_;  // by layer
  std::vector<Device> devices_;   // by stage
};

// Checks a layout (see StagedModel's refusals) and returns each layer's stage.
std::vector<size_t> check_stages(const std::vector<StagedLayer>& layers, const std::vector<size_t>& stage_starts,
                                 size_t num_devices);
// spec.module->forward(input), with a failure reported as "layer <l> (<type>, stage <s>)
// refused its input <dtype> <shape>: ...".
Variable forward_layer(const Variable& input, size_t layer, const StagedLayer& spec, size_t stage);
// output + dependency (moved to the output's device), refusing a shape mismatch with a
// message naming the layer and the dependency.
Variable add_dependency(const Variable& output, const Variable& dependency, size_t layer, const StagedLayer& spec,
                        const std::string& name, size_t stage);

// The stage boundaries (first layer of each stage) that split layers with these parameter
// counts into `stages` contiguous, non-empty groups, the largest group as small as possible.
std::vector<size_t> balanced_stage_starts(const std::vector<int64_t>& layer_sizes, size_t stages);

}  // namespace wick
