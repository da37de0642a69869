#include <wick/distributed/pipeline/stage_command.h>

#include <cmath>
#include <optional>
#include <type_traits>
#include <utility>

#include <wick/distributed/control/control_message.h>
#include <wick/tensor/error.h>

namespace wick::distributed {
namespace {

template <class T>
concept HasFields = requires(T& t) { T::fields(t, [](const char*, auto&) {}); };

// The largest value of each enum a command carries.
constexpr uint8_t last_value(PipelineSchedule) { return static_cast<uint8_t>(PipelineSchedule::OneFOneB); }
constexpr uint8_t last_value(BatchNormStatistics) { return static_cast<uint8_t>(BatchNormStatistics::PerMicroBatch); }

// Declared first so that a struct's fields and a list's items find every form.
template <class T>
void put(PayloadWriter& w, const std::vector<T>& v);

void put(PayloadWriter& w, int64_t v) { w.u64(static_cast<uint64_t>(v)); }
void put(PayloadWriter& w, uint64_t v) { w.u64(v); }
void put(PayloadWriter& w, bool v) { w.u8(v ? 1 : 0); }
void put(PayloadWriter& w, double v) { w.f64(v); }
void put(PayloadWriter& w, const std::string& v) { w.string(v); }
template <class E>
  requires std::is_enum_v<E>
void put(PayloadWriter& w, E v) {
  w.u8(static_cast<uint8_t>(v));
}
template <HasFields T>
void put(PayloadWriter& w, const T& v) {
  T::fields(v, [&](const char*, const auto& field) { put(w, field); });
}
template <class T>
void put(PayloadWriter& w, const std::vector<T>& v) {
  WICK_CHECK(v.size() <= kMaxFrameBytes, "encode_stage_command: a list of ", v.size(), " items is too long");
  w.u32(static_cast<uint32_t>(v.size()));
  for (const T& item : v) put(w, item);
}

// The fewest bytes an item of a list takes on the wire, so that a list's count is checked
// against the payload left before anything is allocated for it.
template <class T>
size_t wire_bytes() {
  if constexpr (std::is_same_v<T, bool> || std::is_enum_v<T>) {
    return 1;
  } else if constexpr (std::is_arithmetic_v<T>) {
    return 8;
  } else if constexpr (HasFields<T>) {
    size_t n = 0;
    T t{};
    T::fields(t, [&n]<class F>(const char*, F&) { n += wire_bytes<F>(); });
    return n > 0 ? n : 1;
  } else {
    return 4;  // a string or a list: its u32 length
  }
}

// A payload being read, with the name of the command for error messages.
struct Reader {
  PayloadReader payload;
  const std::string& what;

  void get(const char*, int64_t& v) { v = static_cast<int64_t>(payload.u64()); }
  void get(const char*, uint64_t& v) { v = payload.u64(); }
  void get(const char* name, bool& v) {
    const uint8_t b = payload.u8();
    WICK_CHECK(b <= 1, what, ": ", name, " is ", int{b}, ", expected 0 or 1");
    v = b == 1;
  }
  void get(const char*, double& v) { v = payload.f64(); }
  void get(const char*, std::string& v) { v = payload.string(); }
  template <class E>
    requires std::is_enum_v<E>
  void get(const char* name, E& v) {
    const uint8_t b = payload.u8();
    WICK_CHECK(b <= last_value(E{}), what, ": ", name, " is ", int{b}, ", expected 0..", int{last_value(E{})});
    v = static_cast<E>(b);
  }
  template <HasFields T>
  void get(const char*, T& v) {
    T::fields(v, [&](const char* field_name, auto& field) { get(field_name, field); });
  }
  template <class T>
  void get(const char* name, std::vector<T>& v) {
    const uint32_t n = payload.u32();
    WICK_CHECK(n <= payload.remaining() / wire_bytes<T>(), what, ": ", name, " announces ", n, " items, more than the ",
               payload.remaining(), " bytes left can hold");
    v.resize(n);
    for (T& item : v) get(name, item);
  }
};

// The values a command's fields may take, beyond their types'.
void check_micro_batches(int64_t m, const std::string& what) {
  WICK_CHECK(m >= 1 && m <= kMaxMicroBatches, what, ": micro_batches is ", m, ", expected 1..", kMaxMicroBatches);
}
void check_text(const std::string& text, const char* name, const std::string& what) {
  WICK_CHECK(text.size() <= kMaxDescriptionBytes, what, ": ", name, " of ", text.size(), " bytes, more than the ",
             kMaxDescriptionBytes, " a description may take");
}
template <class T>
void check(const T&, const std::string&) {}
void check(const stage::Description& c, const std::string& what) { check_text(c.text, "text", what); }
void check(const stage::Refusal& c, const std::string& what) { check_text(c.reason, "reason", what); }
void check(const stage::Forward& c, const std::string& what) { check_micro_batches(c.micro_batches, what); }
void check(const stage::Backward& c, const std::string& what) { check_micro_batches(c.micro_batches, what); }
void check(const stage::TrainStep& c, const std::string& what) { check_micro_batches(c.micro_batches, what); }
void check(const stage::Clip& c, const std::string& what) {
  WICK_CHECK(std::isfinite(c.max_norm) && c.max_norm > 0, what, ": max_norm must be finite and > 0, got ", c.max_norm);
}
void check(const stage::AverageGradients& c, const std::string& what) {
  WICK_CHECK(std::isfinite(c.examples) && c.examples >= 0, what, ": examples must be finite and >= 0, got ",
             c.examples);
}

std::string name_of(CommandType type) { return std::string(command_type_name(type)) + " command"; }
std::string name_of(stage::ReplyType type) {
  return type == stage::ReplyType::OptimizerStateNames ? "OptimizerStateNames reply" : "GeneratorState reply";
}

template <class Message>
Bytes fields_of(const Message& m) {
  check(m, "encoding a pipeline " + name_of(Message::type));
  PayloadWriter w;
  put(w, m);
  return w.take();
}

// The alternative of `Variant` whose type is `type`, read from `payload`; nullopt when no
// alternative has that type.
template <class Variant, class Type, size_t... I>
std::optional<Variant> read_alternative(Type type, const Bytes& payload, const std::string& who,
                                        std::index_sequence<I...>) {
  std::optional<Variant> out;
  auto try_one = [&]<class Message>(Message message) {
    if (Message::type != type) return false;
    const std::string what = who + ": " + name_of(type);
    Reader r{PayloadReader(payload, what.c_str()), what};
    r.get("", message);
    r.payload.expect_end();
    check(message, what);
    out = std::move(message);
    return true;
  };
  (try_one(std::variant_alternative_t<I, Variant>{}) || ...);
  return out;
}

}  // namespace

CommandType stage_command_type(const StageCommand& command) {
  return std::visit([](const auto& m) { return m.type; }, command);
}

Command encode_stage_command(const StageCommand& command) {
  return std::visit([](const auto& m) { return Command{m.type, fields_of(m)}; }, command);
}

StageCommand decode_stage_command(const Command& command, const std::string& who) {
  std::optional<StageCommand> out = read_alternative<StageCommand>(
      command.type, command.payload, who, std::make_index_sequence<std::variant_size_v<StageCommand>>());
  WICK_CHECK(out.has_value(), who, " got a control command '", command_type_name(command.type),
             "' instead of a pipeline command");
  return std::move(*out);
}

Bytes encode_stage_reply(const StageReply& reply) {
  return std::visit(
      [](const auto& m) {
        Bytes fields = fields_of(m);
        fields.insert(fields.begin(), static_cast<char>(m.type));
        return fields;
      },
      reply);
}

StageReply decode_stage_reply(const Bytes& bytes, const std::string& who) {
  WICK_CHECK(!bytes.empty(), who, ": an empty reply (expected a type byte and its fields)");
  const auto type = static_cast<stage::ReplyType>(static_cast<uint8_t>(bytes[0]));
  const Bytes fields(bytes.begin() + 1, bytes.end());
  std::optional<StageReply> out = read_alternative<StageReply>(
      type, fields, who, std::make_index_sequence<std::variant_size_v<StageReply>>());
  WICK_CHECK(out.has_value(), who, ": unknown reply type ", int{static_cast<uint8_t>(bytes[0])});
  return std::move(*out);
}

}  // namespace wick::distributed
