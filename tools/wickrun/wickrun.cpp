// wickrun: starts the ranks of a distributed wick job on this machine.
//
//   wickrun --nproc N [--nnodes M --node-rank K --master HOST:PORT] [--token-file F]
//           [--grace SECONDS] [--max-restarts R] PROGRAM ARGS...
//   wickrun --nnodes M --nproc-per-node N PROGRAM ARGS...   (all M nodes on this machine)
//
// Each of the N children gets RANK = node_rank * N + i, WORLD_SIZE = N * M, LOCAL_RANK = i,
// LOCAL_WORLD_SIZE = N, GROUP_RANK = node_rank, MASTER_ADDR / MASTER_PORT (default 127.0.0.1
// and a free port), WICK_JOB_TOKEN (random unless given by --token-file, WICK_JOB_TOKEN_FILE
// or WICK_JOB_TOKEN; required with several nodes so all nodes agree; never on a command
// line, which every local user can read), WICK_RESTART_COUNT, and OMP_NUM_THREADS = cores / (ranks here) unless it is set. With
// --nnodes M but no --master and no --node-rank, wickrun starts all M * N ranks here, node
// by node, each with its node's GROUP_RANK: a multi-node layout (DASO's) on one machine.
// SIGINT/SIGTERM are forwarded to the children. When one child fails (non-zero exit or a
// signal) the others get SIGTERM, then SIGKILL after the grace period, and wickrun exits
// non-zero saying which rank failed and how. Exit status: 0 when every rank succeeded; else
// the failing rank's exit code (or 128 + its signal number). With --max-restarts R, a failed
// attempt is followed by up to R more, every rank started again with WICK_RESTART_COUNT
// counting them (torchrun's restarts for a fixed world size): the program resumes from its
// newest checkpoint. A signal sent to wickrun ends the job without a restart.
//
// Each rank runs under a small guard process of its own, a copy of wickrun forked before
// the rank and never exec'd:
//   wickrun ── guard (process group leader, child subreaper) ── rank ── what the rank starts
// The rank stays in the guard's process group, so wickrun's signals to that group reach it
// and whatever it started there; the guard ignores SIGINT/SIGTERM and outlives the rank.
// As a subreaper (PR_SET_CHILD_SUBREAPER) the guard adopts every orphan of the rank's tree,
// even one that left the group (setsid, a daemon), so it can always find and kill them:
//   - when the rank exits, the guard kills what the rank left behind, then exits with the
//     rank's status (or dies of the rank's signal), which is what wickrun reports;
//   - when wickrun dies, however (even SIGKILL, which forwards nothing), the guard sees the
//     end of a pipe only wickrun holds open for writing, kills the rank's whole tree and
//     exits. PR_SET_PDEATHSIG alone cannot do this: it reaches only a direct child, not a
//     rank started through a wrapper script, and not what the rank starts.
// The rank also gets SIGKILL when its guard dies (PR_SET_PDEATHSIG), and wickrun is a
// subreaper too: what a guard killed with SIGKILL (a hung rank) left behind comes to wickrun,
// which kills it when the attempt ends.
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <wick/distributed/comm/nccl_communicator.h>
#include <wick/distributed/control/control_environment.h>
#include <wick/distributed/control/tcp_socket.h>
#include <wick/tensor/cuda.h>
#include <wick/version.h>

namespace {

struct Options {
  int nproc = 0;
  int nnodes = 1;
  int node_rank = 0;
  bool node_rank_given = false;
  bool all_nodes_here = false;  // --nnodes > 1 without --master: every node on this machine
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: pick a free one (single node only)
  bool master_given = false;
  std::string token;
  double grace_seconds = 5.0;
  int max_restarts = 0;
  bool tag_output = false;
  std::vector<std::string> command;
};

const char* kUsage =
    "usage: wickrun --nproc N [--nnodes M --node-rank K --master HOST:PORT] [--token-file FILE]\n"
    "               [--grace SECONDS] [--max-restarts R] [--tag-output] PROGRAM [ARGS...]\n"
    "       wickrun --version\n"
    "Starts N ranks of PROGRAM on this node with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,\n"
    "MASTER_ADDR, MASTER_PORT, WICK_JOB_TOKEN and WICK_RESTART_COUNT set. With several nodes,\n"
    "--master and a job token (--token-file FILE, readable by you only, or WICK_JOB_TOKEN_FILE or\n"
    "WICK_JOB_TOKEN in the environment) are required and must be the same on every node; without\n"
    "--master and --node-rank all M nodes start here. --max-restarts R starts every rank again,\n"
    "up to R times, after a failure. --tag-output prefixes every line a rank prints with \"[rank R] \".\n";

// What this wickrun was built with and, for CUDA builds, the NCCL library it loaded: it
// runs without a GPU, so it also shows that the build links and loads its libraries.
void print_version() {
  const std::string nccl = wick::distributed::nccl_version();
  std::printf("wickrun %s: wick built %s CUDA%s%s\n", WICK_VERSION_STRING,
              wick::cuda::is_built() ? "with" : "without", nccl.empty() ? "" : ", NCCL ", nccl.c_str());
}

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

int parse_int(const std::string& flag, const std::string& text, int lo, int hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text.c_str(), &end, 10);
  if (errno != 0 || end == text.c_str() || *end != '\0' || v < lo || v > hi) {
    throw UsageError(flag + " expects a whole number in " + std::to_string(lo) + ".." + std::to_string(hi) +
                     ", got '" + text + "'");
  }
  return static_cast<int>(v);
}

Options parse(int argc, char** argv) {
  Options o;
  int i = 1;
  auto value = [&](const std::string& flag) -> std::string {
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    return argv[++i];
  };
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.rfind("--", 0) != 0) break;  // the program
    if (arg == "--nproc" || arg == "--nproc-per-node") {
      o.nproc = parse_int(arg, value(arg), 1, 4096);
    } else if (arg == "--nnodes") {
      o.nnodes = parse_int(arg, value(arg), 1, 65536);
    } else if (arg == "--node-rank") {
      o.node_rank = parse_int(arg, value(arg), 0, 65535);
      o.node_rank_given = true;
    } else if (arg == "--master") {
      std::string m = value(arg);
      auto colon = m.rfind(':');
      if (colon == std::string::npos || colon == 0) throw UsageError("--master expects HOST:PORT, got '" + m + "'");
      o.master_addr = m.substr(0, colon);
      o.master_port = parse_int("--master port", m.substr(colon + 1), 1, 65535);
      o.master_given = true;
    } else if (arg == "--token" || arg.rfind("--token=", 0) == 0) {
      throw UsageError("--token is refused: a command line is readable by every user of this machine; put the "
                       "token in a file only you can read and pass --token-file FILE (or set WICK_JOB_TOKEN_FILE "
                       "or WICK_JOB_TOKEN)");
    } else if (arg == "--token-file") {
      o.token = wick::distributed::read_token_file(value(arg), "--token-file");
    } else if (arg == "--max-restarts") {
      o.max_restarts = parse_int(arg, value(arg), 0, 1000);
    } else if (arg == "--grace") {
      std::string g = value(arg);
      char* end = nullptr;
      o.grace_seconds = std::strtod(g.c_str(), &end);
      // At most 1e8 s: "inf" or "nan" would make the deadline's conversion to clock ticks
      // undefined.
      if (end == g.c_str() || *end != '\0' || !(o.grace_seconds >= 0 && o.grace_seconds <= 1e8)) {
        throw UsageError("--grace expects seconds from 0 to 1e8, got '" + g + "'");
      }
    } else if (arg == "--tag-output") {
      o.tag_output = true;
    } else if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--version") {
      print_version();
      std::exit(0);
    } else {
      throw UsageError("unknown option " + arg);
    }
  }
  for (; i < argc; ++i) o.command.emplace_back(argv[i]);
  if (o.nproc == 0) throw UsageError("--nproc is required");
  if (o.command.empty()) throw UsageError("no program to run");
  if (o.node_rank >= o.nnodes) {
    throw UsageError("--node-rank " + std::to_string(o.node_rank) + " must be below --nnodes " +
                     std::to_string(o.nnodes));
  }
  // Several "nodes" on this machine (tests, or trying a multi-node layout on one box):
  // wickrun starts them all, node by node.
  o.all_nodes_here = o.nnodes > 1 && !o.master_given && !o.node_rank_given;
  if (o.nnodes > 1 && !o.master_given && !o.all_nodes_here)
    throw UsageError("--master HOST:PORT is required with --nnodes > 1 and --node-rank");
  if (o.token.empty()) o.token = wick::distributed::job_token_from_environment();
  if (o.nnodes > 1 && !o.all_nodes_here && o.token.empty()) {
    throw UsageError("a job token is required with --nnodes > 1 (every node must use the same one): "
                     "--token-file FILE, WICK_JOB_TOKEN_FILE or WICK_JOB_TOKEN");
  }
  return o;
}

std::string random_token() {
  std::random_device device;
  std::string token;
  const char* hex = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) token += hex[device() % 16];
  return token;
}

// Signals reach the main loop through a pipe, so the loop can wait on children, signals
// and the kill deadline with one poll().
int signal_pipe[2] = {-1, -1};

void on_signal(int signo) {
  int saved = errno;
  unsigned char byte = static_cast<unsigned char>(signo);
  [[maybe_unused]] ssize_t n = ::write(signal_pipe[1], &byte, 1);
  errno = saved;
}

// Held open for writing by wickrun alone (close-on-exec, and each guard closes its copy):
// the guards see its end when wickrun dies, however it dies.
int lifeline[2] = {-1, -1};

// The pids whose parent is `parent` (from /proc/<pid>/stat; the comm field may hold spaces
// and parentheses, so the fields after its last ')' are read).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  DIR* proc = ::opendir("/proc");
  if (!proc) return out;
  while (const dirent* e = ::readdir(proc)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char text[1024];
    const ssize_t n = ::read(fd, text, sizeof text - 1);
    ::close(fd);
    if (n <= 0) continue;
    text[n] = '\0';
    const char* close_paren = std::strrchr(text, ')');
    char state = 0;
    long ppid = 0;
    if (close_paren && std::sscanf(close_paren + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(pid));
  }
  ::closedir(proc);
  return out;
}

// Kills every descendant of this process and reaps them. With PR_SET_CHILD_SUBREAPER set,
// killing a child hands its children to us, so killing our children until there are none
// reaches the whole tree, however its members regrouped.
void kill_descendants() {
  for (;;) {
    for (pid_t child : children_of(::getpid())) ::kill(child, SIGKILL);
    bool reaped = false;
    for (;;) {
      const pid_t pid = ::waitpid(-1, nullptr, WNOHANG);
      if (pid > 0) {
        reaped = true;
        continue;
      }
      if (pid < 0 && errno == EINTR) continue;
      if (pid < 0 && errno == ECHILD) return;
      break;  // children left, none exited yet
    }
    if (!reaped) ::usleep(1000);
  }
}

void on_guard_signal(int) {}  // only interrupts ppoll

// The guard's life (see the top of the file): it forks the rank, which execs the program,
// and exits once the rank or wickrun is gone and the rank's tree is dead.
[[noreturn]] void run_guard(const std::vector<char*>& args, const sigset_t& unblocked) {
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const pid_t guard = ::getpid();
  const pid_t rank = ::fork();
  if (rank < 0) {
    std::perror("wickrun: fork");
    ::_exit(1);
  }
  if (rank == 0) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != guard) ::_exit(1);
    ::close(lifeline[0]);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int signo : {SIGINT, SIGTERM, SIGCHLD, SIGPIPE}) ::sigaction(signo, &dfl, nullptr);
    ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
    ::execvp(args[0], args.data());
    std::fprintf(stderr, "wickrun: cannot run %s: %s\n", args[0], std::strerror(errno));
    ::_exit(127);
  }
  // SIGCHLD stays blocked except inside ppoll, so a rank that ends is never missed between
  // the check and the wait.
  sigset_t waiting;
  sigemptyset(&waiting);
  for (;;) {
    pollfd p{lifeline[0], POLLIN, 0};
    const int n = ::ppoll(&p, 1, nullptr, &waiting);
    if (n > 0 && p.revents != 0) {
      kill_descendants();  // wickrun is gone: nothing of this rank may train on alone
      ::_exit(128 + SIGKILL);
    }
    int status = 0;
    pid_t pid;
    bool rank_ended = false;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      if (pid == rank) {
        rank_ended = true;
        break;
      }
    }
    if (!rank_ended) continue;
    kill_descendants();
    if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
    // Dies of the rank's signal, so wickrun's report names it; without a core of the guard.
    const int signo = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(signo, SIG_DFL);
    sigset_t only;
    sigemptyset(&only);
    sigaddset(&only, signo);
    ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
    ::kill(guard, signo);
    ::_exit(128 + signo);
  }
}

void install_handlers() {
  if (::pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    std::perror("wickrun: pipe");
    std::exit(1);
  }
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_NOCLDSTOP;
  for (int signo : {SIGINT, SIGTERM, SIGCHLD}) ::sigaction(signo, &action, nullptr);
  ::signal(SIGPIPE, SIG_IGN);  // a closed stdout must not kill us while ranks still run
}

// --tag-output: a rank's stdout or stderr arrives through a pipe and leaves through ours,
// one whole line at a time, prefixed with the rank.
struct Stream {
  int fd = -1;  // our read end; -1 once the rank (and everything it started) closed it
  int target = STDOUT_FILENO;
  std::string prefix;
  std::string partial;  // the start of a line whose newline has not arrived yet
};

void write_fully(int fd, const std::string& text) {
  const char* p = text.data();
  std::size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n > 0) {
      p += n;
      left -= static_cast<std::size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return;  // our output is gone; keep running the job regardless
    }
  }
}

void emit_lines(Stream& s, bool flush_partial) {
  std::string out;
  std::size_t start = 0;
  for (std::size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += s.prefix;
    out.append(s.partial, start, nl + 1 - start);
  }
  s.partial.erase(0, start);
  // A line that never ends is passed on in pieces rather than held without bound.
  if (!s.partial.empty() && (flush_partial || s.partial.size() > 65536)) {
    out += s.prefix + s.partial + "\n";
    s.partial.clear();
  }
  if (!out.empty()) write_fully(s.target, out);
}

// Reads what is there (once; poll says when there is more). Closes the stream at its end.
void relay(Stream& s) {
  char buffer[65536];
  ssize_t n = ::read(s.fd, buffer, sizeof buffer);
  if (n > 0) {
    s.partial.append(buffer, static_cast<std::size_t>(n));
    emit_lines(s, false);
    return;
  }
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  emit_lines(s, true);
  ::close(s.fd);
  s.fd = -1;
}

struct Child {
  int rank = 0;
  int local_rank = 0;
  pid_t pid = -1;
  bool running = false;
  int status = 0;
  // Set when the rank had to be SIGKILLed: it ignored SIGTERM or was stopped (SIGSTOP),
  // which is what a hung rank looks like from here.
  bool needed_kill = false;
};

std::string host_name() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0) return "?";
  return buf;
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    int s = WTERMSIG(status);
    const char* name = ::strsignal(s);
    return "was killed by signal " + std::to_string(s) + " (" + (name ? name : "?") + ")";
  }
  return "ended with status " + std::to_string(status);
}

bool succeeded(int status) { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

// Starts one rank. With `streams` (--tag-output), its stdout and stderr go to new pipes
// whose read ends are appended to `streams`.
pid_t start_child(const Options& o, int rank, int local_rank, int node,
                  const std::vector<std::pair<std::string, std::string>>& env,
                  std::vector<Stream>* streams) {
  int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
  if (streams && (::pipe2(out_pipe, O_CLOEXEC) != 0 || ::pipe2(err_pipe, O_CLOEXEC) != 0)) {
    std::perror("wickrun: pipe");
    return -1;
  }
  std::vector<char*> args;
  for (const auto& a : o.command) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::fflush(nullptr);
  // Until the guard has replaced wickrun's handlers, a SIGTERM meant for its rank (the others
  // are stopped when one rank fails at once) would run wickrun's handler copy and write into
  // wickrun's signal pipe, which then reads as a SIGTERM to wickrun itself (no restart). So
  // the signals stay blocked across the fork; the rank unblocks them after resetting them,
  // and a pending one then takes the default action.
  sigset_t blocked, previous;
  sigemptyset(&blocked);
  for (int signo : {SIGINT, SIGTERM, SIGCHLD}) sigaddset(&blocked, signo);
  ::sigprocmask(SIG_BLOCK, &blocked, &previous);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::sigprocmask(SIG_SETMASK, &previous, nullptr);
    std::perror("wickrun: fork");
    return -1;
  }
  if (pid == 0) {
    // The guard.
    ::setpgid(0, 0);
    ::close(lifeline[1]);
    ::close(signal_pipe[0]);
    ::close(signal_pipe[1]);
    struct sigaction action {};
    sigemptyset(&action.sa_mask);
    action.sa_handler = SIG_IGN;  // the group signal reaches the rank; the guard outlives it
    for (int signo : {SIGINT, SIGTERM, SIGPIPE}) ::sigaction(signo, &action, nullptr);
    action.sa_handler = on_guard_signal;
    action.sa_flags = SA_NOCLDSTOP;
    ::sigaction(SIGCHLD, &action, nullptr);
    if (streams) {
      ::dup2(out_pipe[1], STDOUT_FILENO);  // dup2 leaves the copies open across exec
      ::dup2(err_pipe[1], STDERR_FILENO);
    }
    for (const auto& [name, value] : env) ::setenv(name.c_str(), value.c_str(), 1);
    ::setenv("LOCAL_RANK", std::to_string(local_rank).c_str(), 1);
    ::setenv("RANK", std::to_string(rank).c_str(), 1);
    ::setenv("GROUP_RANK", std::to_string(node).c_str(), 1);
    run_guard(args, previous);
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  ::sigprocmask(SIG_SETMASK, &previous, nullptr);
  if (streams) {
    ::close(out_pipe[1]);
    ::close(err_pipe[1]);
    std::string prefix = "[rank " + std::to_string(rank) + "] ";
    for (auto [fd, target] : {std::pair{out_pipe[0], STDOUT_FILENO}, std::pair{err_pipe[0], STDERR_FILENO}}) {
      ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
      Stream s;
      s.fd = fd;
      s.target = target;
      s.prefix = prefix;
      streams->push_back(std::move(s));
    }
  }
  return pid;
}

void signal_running(std::vector<Child>& children, int signo) {
  for (auto& c : children) {
    if (c.running) ::kill(-c.pid, signo);
  }
}

// The ranks this wickrun starts: one node's, or every node's when all nodes run here.
int local_rank_count(const Options& o) { return o.all_nodes_here ? o.nproc * o.nnodes : o.nproc; }

// One start of every rank, until all have exited.
struct Attempt {
  int exit_code = 0;         // what wickrun exits with if this attempt is the last
  bool interrupted = false;  // SIGINT/SIGTERM reached wickrun: no restart
};

Attempt run_attempt(const Options& o, const std::vector<std::pair<std::string, std::string>>& env) {
  const int local_ranks = local_rank_count(o);
  std::vector<Child> children(static_cast<std::size_t>(local_ranks));
  std::vector<Stream> streams;
  int running = 0;
  bool terminating = false;
  bool killed = false;
  bool groups_killed = false;
  int received_signal = 0;
  std::optional<std::size_t> first_failure;
  using Clock = std::chrono::steady_clock;
  Clock::time_point kill_at{};
  auto begin_termination = [&](int signo) {
    if (!terminating) {
      terminating = true;
      kill_at = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.grace_seconds));
    }
    signal_running(children, signo);
  };

  for (int i = 0; i < local_ranks; ++i) {
    Child& c = children[static_cast<std::size_t>(i)];
    const int node = o.all_nodes_here ? i / o.nproc : o.node_rank;
    c.local_rank = i % o.nproc;
    c.rank = node * o.nproc + c.local_rank;
    c.pid = start_child(o, c.rank, c.local_rank, node, env, o.tag_output ? &streams : nullptr);
    if (c.pid < 0) {
      std::fprintf(stderr, "wickrun: could not start rank %d; stopping the others\n", c.rank);
      begin_termination(SIGTERM);
      first_failure = static_cast<std::size_t>(i);
      c.status = 1 << 8;  // report as "exited with code 1"
      break;
    }
    c.running = true;
    ++running;
  }

  // Once every rank has exited, their output pipes are drained for a little longer: a
  // process a rank left behind may still hold them open.
  Clock::time_point drain_until{};
  auto open_streams = [&] {
    int open = 0;
    for (const auto& s : streams) open += s.fd >= 0;
    return open;
  };
  while (running > 0 || (open_streams() > 0 && Clock::now() < drain_until)) {
    int timeout_ms = 1000;  // a safety net: reaping never depends on a signal arriving
    if (terminating && !killed) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(kill_at - Clock::now()).count();
      timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left + 1, timeout_ms)));
    }
    if (running == 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(drain_until - Clock::now()).count();
      timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left + 1, timeout_ms)));
    }
    std::vector<pollfd> fds{{signal_pipe[0], POLLIN, 0}};
    std::vector<Stream*> polled;
    for (auto& s : streams) {
      if (s.fd < 0) continue;
      fds.push_back({s.fd, POLLIN, 0});
      polled.push_back(&s);
    }
    ::poll(fds.data(), fds.size(), timeout_ms);
    for (std::size_t k = 1; k < fds.size(); ++k) {
      if (fds[k].revents != 0) relay(*polled[k - 1]);
    }
    unsigned char signals[64];
    ssize_t n;
    while ((n = ::read(signal_pipe[0], signals, sizeof signals)) > 0) {
      for (ssize_t k = 0; k < n; ++k) {
        int signo = signals[k];
        if (signo != SIGINT && signo != SIGTERM) continue;
        if (received_signal != 0 && !killed) {
          std::fprintf(stderr, "wickrun: second signal; killing every rank\n");
          signal_running(children, SIGKILL);
          killed = true;
        } else if (!killed) {
          std::fprintf(stderr, "wickrun: got %s; forwarding it to every rank\n", ::strsignal(signo));
          begin_termination(signo);
        }
        received_signal = signo;
      }
    }
    int status = 0;
    pid_t pid;
    while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
      for (std::size_t i = 0; i < children.size(); ++i) {
        Child& c = children[i];
        if (c.pid != pid || !c.running) continue;
        c.running = false;
        c.status = status;
        if (--running == 0) drain_until = Clock::now() + std::chrono::seconds(2);
        if (!succeeded(status) && !terminating) {
          first_failure = i;
          std::fprintf(stderr, "wickrun: rank %d (pid %d) %s; stopping the other ranks\n", c.rank, static_cast<int>(pid),
                       describe(status).c_str());
          begin_termination(SIGTERM);
        }
      }
    }
    // After a failure, also kill what the ranks left behind in their process groups (a
    // shell's background jobs...), so nothing of a failed job lingers or holds our pipes.
    if (terminating && running == 0 && !groups_killed) {
      for (auto& c : children) {
        if (c.pid > 0) ::kill(-c.pid, SIGKILL);
      }
      groups_killed = true;
    }
    if (terminating && !killed && running > 0 && Clock::now() >= kill_at) {
      std::string names;
      for (auto& c : children) {
        if (!c.running) continue;
        c.needed_kill = true;
        names += (names.empty() ? "" : ", ") + std::to_string(c.rank);
      }
      std::fprintf(stderr, "wickrun: rank(s) %s (host %s) still running %.1f s after SIGTERM (hung or stopped); sending SIGKILL\n",
                   names.c_str(), host_name().c_str(), o.grace_seconds);
      signal_running(children, SIGKILL);
      killed = true;
    }
  }

  // Every guard has exited; what is left is what a guard killed with SIGKILL (a hung rank)
  // could not clean up, adopted by us.
  kill_descendants();
  for (auto& s : streams) {
    if (s.fd >= 0) {
      emit_lines(s, true);
      ::close(s.fd);
    }
  }

  if (first_failure) {
    const Child& c = children[*first_failure];
    // A rank that timed out waiting for a hung or stopped peer exits first and with an
    // error, so the first failure is often the victim. The rank that did not even react to
    // SIGTERM is the likelier culprit: name it first.
    for (const auto& h : children) {
      if (!h.needed_kill) continue;
      std::fprintf(stderr, "wickrun: failed: rank %d (local rank %d, host %s) did not exit / was hung: still running %.1f s after "
                   "the other ranks were told to stop; it is the likely cause\n",
                   h.rank, h.local_rank, host_name().c_str(), o.grace_seconds);
    }
    std::fprintf(stderr, "wickrun: failed: rank %d (local rank %d, host %s) %s%s\n", c.rank, c.local_rank, host_name().c_str(),
                 describe(c.status).c_str(), c.needed_kill ? "" : " (first to fail)");
    Attempt a;
    a.interrupted = received_signal != 0;
    a.exit_code = WIFEXITED(c.status) && WEXITSTATUS(c.status) != 0 ? WEXITSTATUS(c.status)
                  : WIFSIGNALED(c.status)                           ? 128 + WTERMSIG(c.status)
                                                                    : 1;
    return a;
  }
  Attempt a;
  if (received_signal != 0) {
    a.interrupted = true;
    bool all_ok = true;
    for (const auto& c : children) all_ok = all_ok && succeeded(c.status);
    if (!all_ok) a.exit_code = 128 + received_signal;
  }
  return a;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "wickrun: %s\n%s", e.what(), kUsage);
    return 2;
  } catch (const std::exception& e) {  // an unreadable or unsafe token file
    std::fprintf(stderr, "wickrun: %s\n", e.what());
    return 2;
  }
  if (o.master_port == 0) {
    try {
      o.master_port = wick::distributed::find_free_port(o.master_addr);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "wickrun: cannot find a free port on %s: %s\n", o.master_addr.c_str(), e.what());
      return 1;
    }
  }
  if (o.token.empty()) o.token = random_token();
  std::vector<std::pair<std::string, std::string>> env = {
      {"WORLD_SIZE", std::to_string(o.nproc * o.nnodes)},
      {"LOCAL_WORLD_SIZE", std::to_string(o.nproc)},
      {"MASTER_ADDR", o.master_addr},
      {"MASTER_PORT", std::to_string(o.master_port)},
      {"WICK_JOB_TOKEN", o.token},
  };
  // The ranks read the token from WICK_JOB_TOKEN; a file named in our environment is ours.
  ::unsetenv("WICK_JOB_TOKEN_FILE");
  // N ranks each running as many OpenMP threads as there are cores oversubscribe the
  // machine (and OpenMP's spin-waiting makes that much worse): unless the user chose, each
  // rank gets its share of the cores, as torchrun does.
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
    env.emplace_back("OMP_NUM_THREADS", std::to_string(std::max<long>(1, cores / local_rank_count(o))));
  }

  install_handlers();
  if (::pipe2(lifeline, O_CLOEXEC) != 0) {
    std::perror("wickrun: pipe");
    return 1;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  for (int restart = 0;; ++restart) {
    auto attempt_env = env;
    attempt_env.emplace_back("WICK_RESTART_COUNT", std::to_string(restart));
    Attempt a = run_attempt(o, attempt_env);
    if (a.exit_code == 0 || a.interrupted || restart >= o.max_restarts) return a.exit_code;
    std::fprintf(stderr, "wickrun: restarting every rank (restart %d of %d)\n", restart + 1, o.max_restarts);
  }
}
