// AtomicFile's clean-up of temporaries left by killed writers: the next write of the same
// target removes `<target>.tmp.<pid>.<host>.XXXXXX` files whose writer's process is gone
// (and older `<target>.tmp.XXXXXX` ones once unmodified for kStaleTemporaryAge), never one a
// live writer holds, and nothing else.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include <wick/tensor/atomic_file.h>

namespace wick {
namespace {

namespace fs = std::filesystem;

class AtomicFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("wick_atomic_file_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::set<std::string> names() const {
    std::set<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_)) out.insert(e.path().filename().string());
    return out;
  }
  // The temporaries next to `target` (any name starting with "<target>.tmp.").
  std::set<std::string> temporaries(const std::string& target) const {
    std::set<std::string> out;
    for (const std::string& n : names())
      if (n.rfind(target + ".tmp.", 0) == 0) out.insert(n);
    return out;
  }
  void make_file(const std::string& name) const { std::ofstream(path(name)) << "partial"; }
  // Sets the modification time `seconds` into the past.
  void age(const std::string& name, int seconds) const {
    struct timespec times[2];
    ::clock_gettime(CLOCK_REALTIME, &times[0]);
    times[0].tv_sec -= seconds;
    times[1] = times[0];
    ASSERT_EQ(::utimensat(AT_FDCWD, path(name).c_str(), times, 0), 0);
  }
  std::string contents(const std::string& name) const {
    std::ifstream f(path(name));
    return {std::istreambuf_iterator<char>(f), {}};
  }

  fs::path dir_;
};

const int kOld = static_cast<int>(kStaleTemporaryAge.count()) + 60;

// What a writer killed mid-write leaves: its process exits without the destructor running.
TEST_F(AtomicFileTest, AKilledWritersTemporaryIsRemovedByTheNextWrite) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto* f = new AtomicFile(path("model.bin"), "test");
    f->write("half a model");
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const std::set<std::string> left = temporaries("model.bin");
  ASSERT_EQ(left.size(), 1u);
  // Named after its writer, so a dead one is known at once (issue 25: it used to stay until
  // a save at least kStaleTemporaryAge later).
  EXPECT_NE(left.begin()->find("." + std::to_string(child) + "."), std::string::npos) << *left.begin();

  write_file_atomically(path("model.bin"), "whole model", "test");
  EXPECT_EQ(names(), std::set<std::string>{"model.bin"});
  EXPECT_EQ(contents("model.bin"), "whole model");
}

// The next save removes it as it begins, before its own temporary exists.
TEST_F(AtomicFileTest, AKilledWritersTemporaryIsGoneWhenTheNextSaveBegins) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    auto* f = new AtomicFile(path("ckpt"), "test");
    f->write("torn");
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  ASSERT_EQ(temporaries("ckpt").size(), 1u);
  AtomicFile next(path("ckpt"), "test");
  EXPECT_EQ(temporaries("ckpt"), std::set<std::string>{fs::path(next.temporary_path()).filename().string()});
}

// A temporary named after a live process of this host (here: this one, as a writer that
// has created its file and not yet locked it) is kept while young, even unlocked; one of
// another host is judged by age alone, its pid meaning nothing here.
TEST_F(AtomicFileTest, ALiveOrForeignWritersUnlockedTemporaryIsKeptUntilItIsOld) {
  AtomicFile probe(path("probe"), "test");  // learns this host's tag from a real name
  const std::string probe_name = fs::path(probe.temporary_path()).filename().string();
  const std::string host = probe_name.substr(probe_name.size() - 15, 8);
  const std::string mine = "ckpt.tmp." + std::to_string(::getpid()) + "." + host + ".Ab3xYz";
  const std::string foreign = std::string("ckpt.tmp.999999.") + (host == "00000000" ? "11111111" : "00000000") + ".Ab3xYz";
  make_file(mine);
  make_file(foreign);
  write_file_atomically(path("ckpt"), "1", "test");
  EXPECT_EQ(temporaries("ckpt"), (std::set<std::string>{mine, foreign}));
  age(mine, kOld);
  age(foreign, kOld);
  write_file_atomically(path("ckpt"), "2", "test");
  EXPECT_TRUE(temporaries("ckpt").empty());
}

// A concurrent writer of the same target holds the lock on its temporary: however old
// the file looks, it is kept, and that writer's commit still succeeds.
TEST_F(AtomicFileTest, ALiveWritersTemporaryIsKept) {
  AtomicFile other(path("ckpt"), "test");
  other.write("other");
  const std::set<std::string> theirs = temporaries("ckpt");
  ASSERT_EQ(theirs.size(), 1u);
  age(*theirs.begin(), kOld);

  write_file_atomically(path("ckpt"), "mine", "test");
  EXPECT_EQ(temporaries("ckpt"), theirs);
  other.commit();
  EXPECT_EQ(names(), std::set<std::string>{"ckpt"});
  EXPECT_EQ(contents("ckpt"), "other");
}

// An unlocked temporary younger than kStaleTemporaryAge may belong to a writer that has not
// locked it yet (or has closed it and is about to rename it): kept until it is old.
TEST_F(AtomicFileTest, ARecentUnlockedTemporaryIsKeptUntilItIsOld) {
  make_file("ckpt.tmp.Ab3xYz");
  write_file_atomically(path("ckpt"), "1", "test");
  EXPECT_EQ(temporaries("ckpt"), std::set<std::string>{"ckpt.tmp.Ab3xYz"});
  age("ckpt.tmp.Ab3xYz", kOld);
  write_file_atomically(path("ckpt"), "2", "test");
  EXPECT_EQ(names(), std::set<std::string>{"ckpt"});
}

// Only the exact pattern of the same target is touched.
TEST_F(AtomicFileTest, OtherFilesAreLeftAlone) {
  const std::set<std::string> others = {"ckpt.tmp.abc12",  "ckpt.tmp.abc1234", "other.tmp.abcdef", "ckpt.tmp.ab-def",
                                        "ckpt.tmp.abcdef.x", "xckpt.tmp.abcdef", "ckpt.tmp.",       "ckpt.old",
                                        "ckpt.tmp.99999999.abcdefgh.abcdef", "ckpt.tmp.x1.0000abcd.abcdef",
                                        "ckpt.tmp.0.0000abcd.abcdef", "other.tmp.999999.0000abcd.abcdef"};
  for (const std::string& n : others) {
    make_file(n);
    age(n, kOld);
  }
  fs::create_directory(path("ckpt.tmp.dir123"));
  write_file_atomically(path("ckpt"), "1", "test");
  std::set<std::string> expected = others;
  expected.insert("ckpt");
  expected.insert("ckpt.tmp.dir123");
  EXPECT_EQ(names(), expected);
}

}  // namespace
}  // namespace wick
