#include <wick/train/loop_state.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include <wick/tensor/atomic_file.h>
#include <wick/tensor/error.h>
#include <wick/tensor/factories.h>
#include <wick/train/plot.h>
#include <wick/train/tensorboard.h>

namespace wick {
namespace {

// Checkpoints before wall_time was recorded hold 8 columns; they load with wall_time 0.
constexpr int64_t kCurveColumns = 9, kCurveColumnsBeforeWallTime = 8;

double or_nan(const std::optional<double>& v) { return v ? *v : NAN; }
std::optional<double> from_nan(double v) { return std::isnan(v) ? std::nullopt : std::optional<double>(v); }

Tensor number(double v) { return full({}, v, Options(DType::Float64)); }

// The names of every metric in `member` (train_metrics or validation_metrics) of any point.
std::set<std::string> metric_names(const std::vector<CurvePoint>& curve, std::map<std::string, double> CurvePoint::*member) {
  std::set<std::string> names;
  for (const CurvePoint& p : curve)
    for (const auto& [name, v] : p.*member) names.insert(name);
  return names;
}

const Tensor& need(const TensorMap& t, const std::string& key) {
  auto it = t.find(key);
  WICK_CHECK(it != t.end(), "loop_state_from_tensors: missing '", key, "'");
  WICK_CHECK(it->second.dtype() == DType::Float64, "loop_state_from_tensors: '", key, "' is ",
             dtype_name(it->second.dtype()), ", expected float64");
  return it->second;
}
double scalar(const TensorMap& t, const std::string& key) {
  const Tensor& v = need(t, key);
  WICK_CHECK(v.numel() == 1, "loop_state_from_tensors: '", key, "' has ", v.numel(), " elements, expected 1");
  return v.item<double>();
}

// The learning curve's columns, in the CSV's order: the name the CSV and JSON lines give
// each, and its TensorBoard tag. (Epoch, wall time and the metrics are written apart.)
struct CurveColumn {
  const char* name;
  const char* tag;
  std::optional<double> (*get)(const CurvePoint&);
};
const CurveColumn kColumns[] = {
    {"train_loss", "train/loss", [](const CurvePoint& p) -> std::optional<double> { return p.train_loss; }},
    {"train_accuracy", "train/accuracy", [](const CurvePoint& p) -> std::optional<double> { return p.train_accuracy; }},
    {"validation_loss", "validation/loss", [](const CurvePoint& p) { return p.validation_loss; }},
    {"smoothed_validation_loss", "validation/smoothed_loss", [](const CurvePoint& p) { return p.smoothed_validation_loss; }},
    {"validation_accuracy", "validation/accuracy", [](const CurvePoint& p) { return p.validation_accuracy; }},
    {"examples_per_second", "train/examples_per_second",
     [](const CurvePoint& p) -> std::optional<double> { return p.examples_per_second; }},
    {"learning_rate", "train/learning_rate", [](const CurvePoint& p) -> std::optional<double> { return p.learning_rate; }},
};

}  // namespace

TensorMap loop_state_to_tensors(const LoopState& s) {
  TensorMap out;
  out["loop.epoch"] = number(static_cast<double>(s.epoch));
  out["loop.smoothed_validation_loss"] = number(or_nan(s.smoothed_validation_loss));
  out["loop.min_validation_loss"] = number(or_nan(s.min_validation_loss));
  out["loop.min_validation_epoch"] = number(s.min_validation_epoch ? static_cast<double>(*s.min_validation_epoch) : NAN);
  std::vector<double> rows;
  for (const CurvePoint& p : s.learning_curve) {
    rows.insert(rows.end(), {static_cast<double>(p.epoch), p.train_loss, p.train_accuracy, or_nan(p.validation_loss),
                             or_nan(p.smoothed_validation_loss), or_nan(p.validation_accuracy), p.examples_per_second,
                             p.learning_rate, p.wall_time});
  }
  out["loop.learning_curve"] =
      tensor<double>(rows, {static_cast<int64_t>(s.learning_curve.size()), kCurveColumns});
  // Each metric as a column of its own over the epochs (NaN where an epoch has none).
  const auto put = [&](const char* part, auto member) {
    for (const std::string& name : metric_names(s.learning_curve, member)) {
      std::vector<double> column;
      for (const CurvePoint& p : s.learning_curve) {
        auto it = (p.*member).find(name);
        column.push_back(it == (p.*member).end() ? NAN : it->second);
      }
      out[std::string("loop.metric.") + part + "." + name] = tensor<double>(column, {static_cast<int64_t>(column.size())});
    }
  };
  put("train", &CurvePoint::train_metrics);
  put("validation", &CurvePoint::validation_metrics);
  return out;
}

LoopState loop_state_from_tensors(const TensorMap& t) {
  LoopState s;
  double epoch = scalar(t, "loop.epoch");
  WICK_CHECK(epoch >= 0 && epoch == std::floor(epoch), "loop_state_from_tensors: loop.epoch is ", epoch);
  s.epoch = static_cast<int64_t>(epoch);
  s.smoothed_validation_loss = from_nan(scalar(t, "loop.smoothed_validation_loss"));
  s.min_validation_loss = from_nan(scalar(t, "loop.min_validation_loss"));
  if (auto e = from_nan(scalar(t, "loop.min_validation_epoch"))) s.min_validation_epoch = static_cast<int64_t>(*e);
  const Tensor& curve = need(t, "loop.learning_curve");
  WICK_CHECK(curve.dim() == 2 && (curve.size(1) == kCurveColumns || curve.size(1) == kCurveColumnsBeforeWallTime),
             "loop_state_from_tensors: loop.learning_curve has shape ", shape_str(curve.shape()), ", expected [epochs, ",
             kCurveColumns, "]");
  const int64_t columns = curve.size(1);
  std::vector<double> v = curve.contiguous().to_vector<double>();
  for (int64_t r = 0; r < curve.size(0); ++r) {
    const double* row = v.data() + r * columns;
    s.learning_curve.push_back({static_cast<int64_t>(row[0]), row[1], row[2], from_nan(row[3]), from_nan(row[4]),
                                from_nan(row[5]), row[6], row[7], columns > 8 ? row[8] : 0.0, {}, {}});
  }
  for (const char* part : {"train", "validation"}) {
    const std::string prefix = std::string("loop.metric.") + part + ".";
    for (auto it = t.lower_bound(prefix); it != t.end() && it->first.rfind(prefix, 0) == 0; ++it) {
      const Tensor& column = need(t, it->first);
      WICK_CHECK(column.dim() == 1 && column.size(0) == curve.size(0), "loop_state_from_tensors: '", it->first,
                 "' has shape ", shape_str(column.shape()), ", expected [", curve.size(0), "]");
      const std::vector<double> values = column.contiguous().to_vector<double>();
      for (int64_t r = 0; r < curve.size(0); ++r) {
        CurvePoint& p = s.learning_curve[static_cast<size_t>(r)];
        if (!std::isnan(values[static_cast<size_t>(r)]))
          (part[0] == 't' ? p.train_metrics : p.validation_metrics)[it->first.substr(prefix.size())] = values[static_cast<size_t>(r)];
      }
    }
  }
  return s;
}

std::string learning_curve_csv(const std::vector<CurvePoint>& curve) {
  const std::set<std::string> train_names = metric_names(curve, &CurvePoint::train_metrics),
                              validation_names = metric_names(curve, &CurvePoint::validation_metrics);
  std::string out = "epoch";
  for (const CurveColumn& c : kColumns) out += std::string(",") + c.name;
  for (const std::string& name : train_names) out += ",train_metric_" + name;
  for (const std::string& name : validation_names) out += ",validation_metric_" + name;
  out += '\n';
  auto metric = [](const std::map<std::string, double>& m, const std::string& name) {
    auto it = m.find(name);
    return it == m.end() ? std::nullopt : std::optional<double>(it->second);
  };
  auto cell = [&](const std::optional<double>& v) {
    out += ',';
    if (v) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.6g", *v);
      out += buf;
    }
  };
  for (const CurvePoint& p : curve) {
    out += std::to_string(p.epoch + 1);
    for (const CurveColumn& c : kColumns) cell(c.get(p));
    for (const std::string& name : train_names) cell(metric(p.train_metrics, name));
    for (const std::string& name : validation_names) cell(metric(p.validation_metrics, name));
    out += '\n';
  }
  return out;
}

void write_learning_curve_csv(const std::string& path, const std::vector<CurvePoint>& curve) {
  write_file_atomically(path, learning_curve_csv(curve), "write_learning_curve_csv");
}

std::string learning_curve_jsonl(const std::vector<CurvePoint>& curve) {
  std::string out;
  auto number = [&](double v) {
    if (std::isnan(v)) out += "NaN";
    else if (std::isinf(v)) out += v > 0 ? "Infinity" : "-Infinity";
    else {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      out += buf;
    }
  };
  auto field = [&](const char* name, const std::optional<double>& v, bool last = false) {
    out += '"';
    out += name;
    out += "\": ";
    if (v) number(*v);
    else out += "null";
    out += last ? "}\n" : ", ";
  };
  for (const CurvePoint& p : curve) {
    out += "{\"epoch\": " + std::to_string(p.epoch + 1) + ", ";
    for (const CurveColumn& c : kColumns) field(c.name, c.get(p));
    for (const auto& [key, metrics] : {std::pair{"train_metrics", &p.train_metrics}, std::pair{"validation_metrics", &p.validation_metrics}}) {
      if (metrics->empty()) continue;
      out += std::string("\"") + key + "\": {";
      size_t i = 0;
      for (const auto& [name, v] : *metrics) {
        out += "\"" + name + "\": ";
        number(v);
        out += ++i < metrics->size() ? ", " : "}, ";
      }
    }
    field("wall_time", p.wall_time, true);
  }
  return out;
}

void write_learning_curve_jsonl(const std::string& path, const std::vector<CurvePoint>& curve) {
  write_file_atomically(path, learning_curve_jsonl(curve), "write_learning_curve_jsonl");
}

std::vector<ScalarEvent> curve_point_scalars(const CurvePoint& p) {
  std::vector<ScalarEvent> events;
  const int64_t step = p.epoch + 1;
  for (const CurveColumn& c : kColumns)
    if (const std::optional<double> v = c.get(p)) events.push_back({c.tag, step, *v, p.wall_time});
  for (const auto& [name, v] : p.train_metrics) events.push_back({"train/metric/" + name, step, v, p.wall_time});
  for (const auto& [name, v] : p.validation_metrics) events.push_back({"validation/metric/" + name, step, v, p.wall_time});
  return events;
}

void write_learning_curve_png(const std::string& path, const std::vector<CurvePoint>& curve) {
  LinePlot plot{.title = "Learning curve", .x_label = "epoch", .y_label = "loss"};
  LineSeries train{"train loss"}, validation{"validation loss"}, smoothed{"smoothed validation loss"};
  bool smoothing = false;
  for (const CurvePoint& p : curve) {
    double x = static_cast<double>(p.epoch + 1);
    train.x.push_back(x);
    train.y.push_back(p.train_loss);
    if (p.validation_loss) {
      validation.x.push_back(x);
      validation.y.push_back(*p.validation_loss);
      smoothed.x.push_back(x);
      smoothed.y.push_back(or_nan(p.smoothed_validation_loss));
      smoothing = smoothing || p.smoothed_validation_loss != p.validation_loss;
    }
  }
  plot.series.push_back(std::move(train));
  if (!validation.x.empty()) plot.series.push_back(std::move(validation));
  if (smoothing) plot.series.push_back(std::move(smoothed));
  write_line_plot_png(path, plot);
}

}  // namespace wick
