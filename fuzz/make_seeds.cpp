// Writes the fuzzers' seed corpora: small valid files made by wick's own writers (and, for
// the control channel, frames made by its PayloadWriter and a pipeline's messages made by
// encode_stage_command), one folder per fuzzer under the folder given on the command line.
// Run by the build (fuzz/CMakeLists.txt).
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <wick/data/cifar.h>
#include <wick/data/idx.h>
#include <wick/distributed/control/control_message.h>
#include <wick/distributed/pipeline/stage_command.h>
#include <wick/tensor/factories.h>
#include <wick/tensor/safetensors.h>

namespace {

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string frame(wick::distributed::FrameType type, const wick::distributed::Bytes& payload) {
  std::string out(5, '\0');
  const uint32_t n = static_cast<uint32_t>(payload.size());
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>(n >> (8 * i));
  out[4] = static_cast<char>(type);
  return out + std::string(payload.begin(), payload.end());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUTPUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string root = argv[1];
  for (const char* sub : {"", "/safetensors", "/idx", "/idx_gzip", "/cifar", "/control_frame", "/stage_command"})
    ::mkdir((root + sub).c_str(), 0755);
  using namespace wick;

  save_safetensors(root + "/safetensors/two.safetensors",
                   {{"w", arange(0, 6, 1, DType::Float32).view({2, 3})}, {"b", zeros({3}, DType::Int64)}},
                   {{"format", "pt"}});
  save_safetensors(root + "/safetensors/empty_and_bool.safetensors",
                   {{"e", zeros({0, 4}, DType::Float16)}, {"m", ones({2}, DType::Bool)}});
  save_safetensors(root + "/safetensors/none.safetensors", {});

  write_idx(root + "/idx/u8.idx", arange(0, 12, 1, DType::UInt8).view({3, 4}), /*gzip=*/false);
  write_idx(root + "/idx/f32.idx", arange(0, 4, 1, DType::Float32), false);
  write_idx(root + "/idx/i16.idx", arange(-3, 3, 1, DType::Int32).view({2, 3}), false, IdxType::Int16);
  write_idx(root + "/idx/f64.idx.gz", arange(0, 3, 1, DType::Float64), /*gzip=*/true);
  write_idx(root + "/idx/u8.idx.gz", zeros({2, 2, 2}, DType::UInt8), true);
  // fuzz_idx_gzip compresses its input after a first byte that picks the member count.
  for (const char* name : {"u8.idx", "f32.idx", "i16.idx"})
    write_bytes(root + "/idx_gzip/" + name, std::string(1, '\1') + read_bytes(root + "/idx/" + name));

  // fuzz_cifar reads its input after a first byte that picks the kind.
  const std::string cifar = root + "/cifar/.tmp";
  write_cifar(cifar, Dataset(zeros({1, 3, 32, 32}, DType::UInt8), full({1}, 7, DType::Int64)), CifarKind::Cifar10);
  write_bytes(root + "/cifar/cifar10", std::string(1, '\0') + read_bytes(cifar));
  write_cifar(cifar, Dataset(zeros({1, 3, 32, 32}, DType::UInt8), full({1}, 42, DType::Int64)),
              CifarKind::Cifar100Fine);
  write_bytes(root + "/cifar/cifar100", std::string(1, '\1') + read_bytes(cifar));
  std::remove(cifar.c_str());

  using namespace wick::distributed;
  Hello h;
  h.world_size = 2;
  h.rank = 1;
  h.nonce.assign(kNonceBytes, 'n');
  h.proof = hello_proof("token", Bytes(kNonceBytes, 'd'), h);
  const std::string hello = frame(FrameType::Hello, encode_hello(h));
  write_bytes(root + "/control_frame/hello", hello);
  write_bytes(root + "/control_frame/session",
              frame(FrameType::Challenge, PayloadWriter().bytes(Bytes(kNonceBytes, 'd')).take()) +
                  frame(FrameType::Welcome, PayloadWriter().bytes(Bytes(32, 'p')).take()) + frame(FrameType::Command, PayloadWriter().u8(1).bytes({'x'}).take()) +
                  frame(FrameType::StoreSet, PayloadWriter().u64(1).string("key").bytes({'v', 'w'}).take()) +
                  frame(FrameType::StoreGet, PayloadWriter().u64(2).string("key").take()) +
                  frame(FrameType::StoreReply, PayloadWriter().u64(2).bytes({'v'}).take()) +
                  frame(FrameType::ToDriver, PayloadWriter().bytes({'r'}).take()) +
                  frame(FrameType::Refused, PayloadWriter().string("no").take()));

  // fuzz_stage_command reads a command as its type byte and then its payload, and a reply
  // as it travels.
  auto command = [&](const std::string& name, const StageCommand& c) {
    const Command encoded = encode_stage_command(c);
    write_bytes(root + "/stage_command/" + name,
                std::string(1, static_cast<char>(encoded.type)) + std::string(encoded.payload.begin(), encoded.payload.end()));
  };
  command("forward", stage::Forward{4, true, BatchNormStatistics::PerMicroBatch});
  command("train_step", stage::TrainStep{8, PipelineSchedule::GPipe, BatchNormStatistics::PerStep});
  command("step", stage::Step{{1e-3, 5e-4}});
  command("clip", stage::Clip{1.0});
  command("average", stage::AverageGradients{64});
  command("load_optimizer", stage::LoadOptimizerState{{{}, {"0.step", "0.exp_avg"}}});
  command("load_generators", stage::LoadGenerators{{{1, 2}, {3, 4}}});
  command("description", stage::Description{"seed 1\nstarts 0 2\n"});
  command("stop", stage::Stop{});
  const Bytes names = encode_stage_reply(stage::OptimizerStateNames{{"0.step", "2.exp_avg_sq"}});
  write_bytes(root + "/stage_command/reply_names", std::string(names.begin(), names.end()));
  const Bytes generator = encode_stage_reply(stage::GeneratorReply{{7, 11}});
  write_bytes(root + "/stage_command/reply_generator", std::string(generator.begin(), generator.end()));
  return 0;
}
