#include "gpt/io/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

extern char** environ;

namespace attograd::gpt {

namespace {

struct Fd {
  int fd = -1;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

[[noreturn]] void cannot_start(const std::string& program, int err) {
  throw std::runtime_error("cannot start " + program + ": " + std::strerror(err));
}

}  // namespace

std::optional<ProgramResult> run_program(const std::vector<std::string>& argv,
                                         std::string_view input, const RunOptions& options) {
  const bool capture_stdout = options.capture_stdout;
  const size_t max_output = options.max_output;
  if (argv.empty()) throw std::invalid_argument("run_program: no program given");
  const std::string& program = argv[0];
  Fd in_parent, in_child, out_read, out_write, err_read, err_write;
  int sv[2], out_pipe[2] = {-1, -1}, err_pipe[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) cannot_start(program, errno);
  in_parent.fd = sv[0], in_child.fd = sv[1];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) cannot_start(program, errno);
  err_read.fd = err_pipe[0], err_write.fd = err_pipe[1];
  if (capture_stdout) {
    if (::pipe2(out_pipe, O_CLOEXEC) != 0) cannot_start(program, errno);
    out_read.fd = out_pipe[0], out_write.fd = out_pipe[1];
  }

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::unique_ptr<posix_spawn_file_actions_t, int (*)(posix_spawn_file_actions_t*)> destroy(
      &actions, posix_spawn_file_actions_destroy);
  posix_spawn_file_actions_adddup2(&actions, in_child.fd, 0);  // dup2 clears close-on-exec
  if (capture_stdout)
    posix_spawn_file_actions_adddup2(&actions, out_write.fd, 1);
  else
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, err_write.fd, 2);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  if (!options.cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, options.cwd.c_str());
  std::vector<std::string> args = argv;
  std::vector<char*> c_args;
  for (std::string& a : args) c_args.push_back(a.data());
  c_args.push_back(nullptr);
  // Our environment, with options.env's entries replacing those of the same name.
  std::vector<std::string> env = options.env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const std::string& own : options.env) replaced |= own.substr(0, own.find('=')) == name;
    if (!replaced) env.emplace_back(entry);
  }
  std::vector<char*> c_env;
  for (std::string& e : env) c_env.push_back(e.data());
  c_env.push_back(nullptr);
  pid_t pid = 0;
  const int spawn_error =
      posix_spawnp(&pid, program.c_str(), &actions, nullptr, c_args.data(), c_env.data());
  if (spawn_error == ENOENT) return std::nullopt;
  if (spawn_error != 0) cannot_start(program, spawn_error);
  in_child.reset();
  out_write.reset();
  err_write.reset();
  if (input.empty()) in_parent.reset();

  // Feed stdin and drain stdout and stderr together: a child that writes much before reading
  // all its input must not deadlock against us.
  ProgramResult result;
  std::string err;
  std::array<char, 65536> buf;
  size_t sent = 0;
  bool too_much = false;
  while (in_parent.fd >= 0 || out_read.fd >= 0 || err_read.fd >= 0) {
    pollfd fds[3];
    nfds_t n = 0;
    Fd* owners[3];
    for (Fd* f : {&in_parent, &out_read, &err_read}) {
      if (f->fd < 0) continue;
      fds[n] = {f->fd, static_cast<short>(f == &in_parent ? POLLOUT : POLLIN), 0};
      owners[n++] = f;
    }
    if (::poll(fds, n, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (nfds_t i = 0; i < n; ++i) {
      if (fds[i].revents == 0) continue;
      Fd* f = owners[i];
      if (f == &in_parent) {
        const ssize_t w =
            ::send(f->fd, input.data() + sent, input.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0 && (errno == EINTR || errno == EAGAIN)) continue;
        if (w < 0) {  // it died or closed its stdin early: its status says why
          f->reset();
          continue;
        }
        sent += static_cast<size_t>(w);
        if (sent == input.size()) f->reset();  // end of its input
        continue;
      }
      const ssize_t r = ::read(f->fd, buf.data(), buf.size());
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        f->reset();
        continue;
      }
      if (f == &out_read) {
        result.out.append(buf.data(), static_cast<size_t>(r));
        if (result.out.size() > max_output && !too_much) {
          too_much = true;
          ::kill(pid, SIGKILL);
          f->reset();
        }
      } else {
        err.append(buf.data(), static_cast<size_t>(r));
        if (err.size() > 65536) err.erase(0, err.size() - 4096);  // only the end is reported
      }
    }
  }
  while (::waitpid(pid, &result.status, 0) < 0)
    if (errno != EINTR)
      throw std::runtime_error("waiting for " + program + ": " + std::strerror(errno));
  if (too_much)
    throw std::runtime_error(program + " wrote more than " + std::to_string(max_output >> 20) +
                             " MiB and was stopped");
  while (!err.empty() && (err.back() == '\n' || err.back() == ' ' || err.back() == '\r'))
    err.pop_back();
  const size_t start = err.find_last_of('\n');
  result.last_error_line = start == std::string::npos ? err : err.substr(start + 1);
  result.err = std::move(err);
  return result;
}

std::string describe_status(const ProgramResult& result) {
  if (WIFSIGNALED(result.status))
    return "killed by signal " + std::to_string(WTERMSIG(result.status));
  return "exit status " + std::to_string(WEXITSTATUS(result.status));
}

}  // namespace attograd::gpt
