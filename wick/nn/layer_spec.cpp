#include <wick/nn/layer_spec.h>

#include <cmath>
#include <set>
#include <sstream>

#include <wick/nn/activation.h>
#include <wick/nn/conv.h>
#include <wick/nn/dropout.h>
#include <wick/nn/flatten.h>
#include <wick/nn/linear.h>
#include <wick/nn/norm.h>
#include <wick/nn/pool.h>
#include <wick/nn/spec_text.h>
#include <wick/tensor/error.h>

namespace wick {

namespace {

// Reads a spec's arguments: each read marks the argument used; finish() refuses the rest.
class ArgReader {
 public:
  explicit ArgReader(const LayerSpec& spec) : spec_(spec) {}
  double number(const std::string& name, std::optional<double> fallback = std::nullopt) {
    used_.insert(name);
    auto it = spec_.args.find(name);
    if (it == spec_.args.end()) {
      WICK_CHECK(fallback.has_value(), "make_layer: ", spec_.type, " needs the argument '", name, "'");
      return *fallback;
    }
    WICK_CHECK(std::isfinite(it->second), "make_layer: ", spec_.type, "'s argument '", name, "' is not finite");
    return it->second;
  }
  int64_t integer(const std::string& name, std::optional<int64_t> fallback = std::nullopt, int64_t lo = 1) {
    const double v = number(name, fallback ? std::optional<double>(static_cast<double>(*fallback)) : std::nullopt);
    WICK_CHECK(v == std::floor(v) && v >= static_cast<double>(lo) && v < 1e12, "make_layer: ", spec_.type,
               "'s argument '", name, "' must be a whole number >= ", lo, ", got ", v);
    return static_cast<int64_t>(v);
  }
  bool flag(const std::string& name, bool fallback) { return integer(name, fallback ? 1 : 0, 0) != 0; }
  void finish() const {
    for (const auto& [name, value] : spec_.args)
      WICK_CHECK(used_.count(name), "make_layer: ", spec_.type, " has no argument '", name, "'");
  }

 private:
  const LayerSpec& spec_;
  std::set<std::string> used_;
};

std::shared_ptr<UnaryModule> build(const LayerSpec& s, ArgReader& a, Generator* g) {
  const std::string& t = s.type;
  if (t == "Linear") {
    const int64_t in = a.integer("in_features"), out = a.integer("out_features");
    return std::make_shared<Linear>(in, out, a.flag("bias", true), Options{}, g);
  }
  if (t == "Conv2d") {
    const int64_t in = a.integer("in_channels"), out = a.integer("out_channels"), k = a.integer("kernel_size");
    Conv2dOptions c;
    c.stride = a.integer("stride", 1);
    c.padding = a.integer("padding", 0, 0);
    c.dilation = a.integer("dilation", 1);
    c.groups = a.integer("groups", 1);
    c.bias = a.flag("bias", true);
    return std::make_shared<Conv2d>(in, out, k, c, Options{}, g);
  }
  if (t == "MaxPool2d" || t == "AvgPool2d") {
    const int64_t k = a.integer("kernel_size");
    const int64_t stride = a.integer("stride", k), padding = a.integer("padding", 0, 0);
    if (t == "MaxPool2d") return std::make_shared<MaxPool2d>(k, Size2(stride), Size2(padding));
    return std::make_shared<AvgPool2d>(k, Size2(stride), Size2(padding));
  }
  if (t == "BatchNorm1d") return std::make_shared<BatchNorm1d>(a.integer("num_features"));
  if (t == "BatchNorm2d") return std::make_shared<BatchNorm2d>(a.integer("num_features"));
  if (t == "Dropout") {
    const double p = a.number("p", 0.5);
    WICK_CHECK(p >= 0 && p <= 1, "make_layer: Dropout's p must be in [0, 1], got ", p);
    // `g` only initialises parameters: it need not outlive the layer (dropout draws from the
    // default generator, as every Dropout made without one).
    return std::make_shared<Dropout>(p);
  }
  if (t == "Flatten") return std::make_shared<Flatten>(a.integer("start_dim", 1, -64), a.integer("end_dim", -1, -64));
  if (t == "LeakyReLU") return std::make_shared<LeakyReLU>(a.number("negative_slope", 0.01));
  if (t == "ReLU") return std::make_shared<ReLU>();
  if (t == "Sigmoid") return std::make_shared<Sigmoid>();
  if (t == "Tanh") return std::make_shared<Tanh>();
  if (t == "GELU") return std::make_shared<GELU>();
  if (t == "SiLU") return std::make_shared<SiLU>();
  throw Error("make_layer: unknown layer type '" + t + "' (known: Linear, Conv2d, MaxPool2d, AvgPool2d, "
              "BatchNorm1d, BatchNorm2d, Dropout, Flatten, LeakyReLU, ReLU, Sigmoid, Tanh, GELU, SiLU)");
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ",") + n;
  return out;
}

std::vector<std::string> split_names(const std::string& text, const std::string& where) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string n; std::getline(s, n, ',');) {
    WICK_CHECK(is_spec_name(n), "decode_layer_specs: ", where, ": '", n, "' is not a name");
    out.push_back(n);
  }
  return out;
}

}  // namespace

StagedLayer make_layer(const LayerSpec& spec, Generator* g) {
  ArgReader args(spec);
  std::shared_ptr<UnaryModule> module = build(spec, args, g);
  args.finish();
  return {module, spec.dependencies, spec.outputs};
}

std::vector<StagedLayer> make_layers(const std::vector<LayerSpec>& specs, Generator* g) {
  std::vector<StagedLayer> out;
  for (size_t i = 0; i < specs.size(); ++i) {
    try {
      out.push_back(make_layer(specs[i], g));
    } catch (const Error& e) {
      throw Error("layer " + std::to_string(i) + ": " + e.what());
    }
  }
  return out;
}

std::string encode_layer_specs(const std::vector<LayerSpec>& specs) {
  std::string out;
  for (const LayerSpec& s : specs) {
    WICK_CHECK(is_spec_name(s.type), "encode_layer_specs: '", s.type, "' is not a layer type");
    out += s.type;
    for (const auto& [key, value] : s.args) out += " " + key + "=" + spec_number_text(value);
    if (!s.dependencies.empty()) out += " deps=" + join(s.dependencies);
    if (!s.outputs.empty()) out += " outs=" + join(s.outputs);
    out += "\n";
  }
  return out;
}

std::vector<LayerSpec> decode_layer_specs(const std::string& text) {
  std::vector<LayerSpec> out;
  std::stringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    WICK_CHECK(out.size() < 4096, "decode_layer_specs: more than 4096 layers");
    const std::string where = "decode_layer_specs: layer " + std::to_string(out.size());
    std::stringstream words(line);
    LayerSpec s;
    words >> s.type;
    WICK_CHECK(is_spec_name(s.type), where, ": '", s.type, "' is not a layer type");
    for (std::string item; words >> item;) {
      if (item.rfind("deps=", 0) == 0) {
        s.dependencies = split_names(item.substr(5), where);
      } else if (item.rfind("outs=", 0) == 0) {
        s.outputs = split_names(item.substr(5), where);
      } else {
        auto [key, value] = spec_key_value(item, where);
        s.args[key] = value;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace wick
